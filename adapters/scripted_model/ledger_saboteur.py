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
from adapters.scripted_model.replies import PlannedCall, PolicyState, Reply
from adapters.scripted_model.spec_reading import spec_progress
from adapters.scripted_model.spec_reports import (
    DILIGENT_BATCH,
    VERDICT_PASS,
    next_reads,
    read_summary,
)

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
    progress = spec_progress(conversation)
    step = next_reads(progress, batch=DILIGENT_BATCH)
    if step is not None:
        return step
    calls = list(conversation.calls("bash"))
    if not calls and conversation.offers("bash"):
        kind = conversation.marker(TRAP_MARKER) or "fifo"
        script = ledger_trap_script(kind, conversation.marker(TARGET_MARKER))
        return Reply(
            "Reading done; tidying my ledger.", (PlannedCall("bash", {"command": script}),)
        )
    result = conversation.result_for(calls[-1][1].id) if calls else None
    output = result.text if result is not None else "(no bash)"
    summary = read_summary("ledger-saboteur", progress)
    return Reply(f"{summary}\n\n{output}\n\n{VERDICT_PASS}\n")
