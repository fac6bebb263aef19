"""``ledger-saboteur``: a child that reads everything, then lays traps in its own ledger for the
parent (the tests of issue 28, "the parent never trusts a child-writable path").

Its one ``bash`` call, made once it is attested (its ledger directory is writable to it, with
Landlock or without):

1. gives its attestation's first chunk a ``toolCallId`` the parent never observed, so that
   settlement finds the attestation ungrounded and sets the ledger aside, under the task lock;
2. replaces the task lock ``.spec-read.lock`` by what ``scripted-lock-trap: KIND`` names:
   ``fifo`` (a FIFO: an ``open(2)`` for writing waits for a reader for ever) or ``symlink`` (a
   link to ``scripted-lock-target: PATH``, a path no child may write: the unconfined parent
   following it would create that file).

Every step prints one ``TRAP <name>: rc=N`` line, which its report quotes. A rejection later,
its next child reads every chunk again and reports (the trap is laid once per conversation).
"""

from __future__ import annotations

import shlex

from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.replies import PolicyState, Reply
from adapters.scripted_model.spec_reports import read_then_bash

TRAP_MARKER = "scripted-lock-trap"
TARGET_MARKER = "scripted-lock-target"
TRAP_PREFIX = "TRAP "
FORGED_CALL_ID = "forged-by-the-child-itself"

_SCRIPT = r"""
LEDGER=$(dirname "$(dirname "$PI_SQUAD_SPEC_PATH")")/$PI_SQUAD_TASK_ID
PY=$(printf '%s' "$PI_SQUAD_BRIDGE" | sed -E 's/^\[[[:space:]]*"([^"]*)".*$/\1/')
KIND=__KIND__
TARGET=__TARGET__
step() {
  name=$1; shift
  out=$("$@" 2>&1); rc=$?
  printf '%s\n' "TRAP $name: rc=$rc $(printf '%s' "$out" | tr '\n' ' ' | tail -c 300)"
}
unground() {
  "$PY" -c 'import json, sys
path, call_id = sys.argv[1:]
document = json.load(open(path, encoding="utf-8"))
document["chunks"][0]["toolCallId"] = call_id
open(path, "w", encoding="utf-8").write(json.dumps(document, indent=2) + "\n")' \
    "$LEDGER/spec-read-attestation.json" __CALL_ID__
}
trap_lock() {
  rm -f "$LEDGER/.spec-read.lock" || return 1
  case $KIND in
    fifo) mkfifo "$LEDGER/.spec-read.lock" && test -p "$LEDGER/.spec-read.lock" ;;
    symlink) ln -s "$TARGET" "$LEDGER/.spec-read.lock" && test -L "$LEDGER/.spec-read.lock" ;;
    *) echo "unknown trap $KIND"; return 1 ;;
  esac
}
step unground-attestation unground
step lock-"$KIND" trap_lock
"""


def ledger_trap_script(kind: str, target: str | None) -> str:
    """The bash script the policy runs; paths come from the child's environment."""
    return (
        _SCRIPT.replace("__KIND__", shlex.quote(kind))
        .replace("__TARGET__", shlex.quote(target or ""))
        .replace("__CALL_ID__", shlex.quote(FORGED_CALL_ID))
        .strip()
        + "\n"
    )


def ledger_saboteur(conversation: Conversation, state: PolicyState) -> Reply:
    """Reads every chunk like ``diligent``; then, once, lays the trap of ``scripted-lock-trap``
    (default ``fifo``) in its own ledger with one ``bash`` call; then reports PASS."""
    return read_then_bash(
        conversation,
        policy="ledger-saboteur",
        announce="Reading done; tidying my ledger.",
        script=lambda: ledger_trap_script(
            conversation.marker(TRAP_MARKER) or "fifo", conversation.marker(TARGET_MARKER)
        ),
    )
