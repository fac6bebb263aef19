"""Deterministic policies: each chooses the next assistant message from the conversation so far.

A policy is selected per request: the last ``scripted-policy: NAME`` line of the system prompt
(else of the user messages), else the server's default policy. Policies know nothing about any
particular spec; what they read they learn from the conversation (see ``spec_reading``).

Marker lines understood (each ``key: value`` alone on a line):

- ``scripted-policy: NAME``: the policy (``diligent``, ``impatient``, ``lazy``, ``qa-fail``,
  ``echo``, ``reply``, ``bash-once``, ``tool-once``, ``saboteur``, ``ledger-saboteur``,
  ``envelope``, ``orchestrator`` (the offline demo's main session, module ``orchestrator``), or
  one registered by the server's owner).
- ``scripted-envelope-data: JSON``: the ``data`` an ``envelope`` child returns (see
  ``envelope``).
- ``scripted-task: ID``: the task the agent works on; ``qa-fail`` fails once per task, where a
  ``-retest-N`` / ``-fix-N`` suffix is dropped so a retest counts as a later run of its task.
  Without it the ``taskId`` of a ``squad_spec_read`` metadata line is used, else one key for all.
- ``scripted-bash: COMMAND``: the command ``bash-once`` runs (default ``echo scripted-bash-ok``).
- ``scripted-reply: TEXT`` and ``scripted-replies: A || B || C``: what ``reply`` answers
  (``\\n`` is a line break; a sequence answers its items in turn across the server, the last
  one from then on).
- ``scripted-sibling: ID`` and ``scripted-delete: ID``: the sibling tasks ``saboteur`` attacks
  (default: the first other task of the squad's records, for both); ``scripted-attacks: A,B``
  limits its attacks to those named (see ``SABOTEUR_ATTACKS``).
- ``squad-spec-chunks: N`` and ``squad-spec-missing: 0,1,2``: see ``spec_reading``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.envelope import envelope
from adapters.scripted_model.ledger_saboteur import ledger_saboteur
from adapters.scripted_model.orchestrator import ARGS_MARKER, orchestrator
from adapters.scripted_model.replies import PlannedCall, Policy, PolicyState, Reply
from adapters.scripted_model.saboteur import (
    ATTACK_PREFIX,
    ATTACKS_MARKER,
    DELETE_MARKER,
    SABOTEUR_ATTACKS,
    SABOTEUR_DONE,
    SABOTEUR_LOG,
    SIBLING_MARKER,
    detached,
    saboteur,
    saboteur_script,
)
from adapters.scripted_model.spec_reading import SPEC_TOOL, spec_progress
from adapters.scripted_model.spec_reports import (
    DILIGENT_BATCH,
    VERDICT_FAIL,
    VERDICT_PASS,
    next_reads,
    read_summary,
    report,
)
from adapters.scripted_model.worker import worker
from domain.flows.budget import WRAP_UP_MARKER
from domain.squad.monitor import STEER_PREFIX

__all__ = [
    "ARGS_MARKER",
    "ATTACKS_MARKER",
    "ATTACK_PREFIX",
    "BASH_MARKER",
    "DEFAULT_BASH_COMMAND",
    "DELETE_MARKER",
    "DILIGENT_BATCH",
    "ECHO_PREFIX",
    "IMPATIENT_AFTER_MARKER",
    "IMPATIENT_BASH_MARKER",
    "IMPATIENT_PARALLEL_MARKER",
    "IMPATIENT_READ_MARKER",
    "IMPATIENT_WRITE_MARKER",
    "POLICIES",
    "POLICY_MARKER",
    "REPLY_MARKER",
    "REPLY_SEQUENCE_MARKER",
    "SABOTEUR_ATTACKS",
    "SABOTEUR_DONE",
    "SABOTEUR_LOG",
    "SIBLING_MARKER",
    "TASK_MARKER",
    "TOOL_MARKER",
    "VERDICT_FAIL",
    "VERDICT_PASS",
    "PlannedCall",
    "Policy",
    "PolicyState",
    "Reply",
    "bash_once",
    "budget_looper",
    "detached",
    "diligent",
    "echo",
    "impatient",
    "lazy",
    "qa_fail",
    "saboteur",
    "saboteur_script",
    "select_policy_name",
    "tool_once",
]

POLICY_MARKER = "scripted-policy"
TASK_MARKER = "scripted-task"
BASH_MARKER = "scripted-bash"

IMPATIENT_BASH_MARKER = "IMPATIENT_BASH_MARKER"
IMPATIENT_READ_MARKER = "IMPATIENT_READ_MARKER"
IMPATIENT_WRITE_MARKER = "IMPATIENT_WRITE_MARKER"
IMPATIENT_PARALLEL_MARKER = "IMPATIENT_PARALLEL_MARKER"
IMPATIENT_AFTER_MARKER = "IMPATIENT_AFTER_MARKER"

ECHO_PREFIX = "scripted echo: "
DEFAULT_BASH_COMMAND = "echo scripted-bash-ok"


def diligent(conversation: Conversation, state: PolicyState) -> Reply:
    """Reads every missing chunk, three parallel calls per message in descending order (7 chunks:
    6,5,4 then 3,2,1 then 0), re-reads failed ones, then reports the chunks read and PASS.
    Without a count it reads chunk 0 first and learns the count from its metadata. Without the
    reader tool (a legacy child) it reports at once."""
    progress = spec_progress(conversation)
    step = next_reads(progress, batch=DILIGENT_BATCH)
    if step is not None:
        return step
    return report("diligent", progress, passed=not progress.given_up)


def impatient(conversation: Conversation, state: PolicyState) -> Reply:
    """Message 1: ``bash`` (``touch IMPATIENT_BASH_MARKER``), ``read`` and ``write``
    (``IMPATIENT_WRITE_MARKER``), each only if offered; a guard blocks them all. Message 2: every
    missing chunk read in one message with a ``bash`` (``touch IMPATIENT_PARALLEL_MARKER``)
    beside them, still blocked. Then the still-missing chunks in one message, then ``bash``
    ``echo attested > IMPATIENT_AFTER_MARKER`` (which the guard lets through), then a PASS
    report. Markers are relative paths: Pi runs tools in its working directory."""
    progress = spec_progress(conversation)
    made = " ".join(call.raw_arguments for _, call in conversation.calls())
    if IMPATIENT_BASH_MARKER not in made:
        probes = _offered(
            conversation,
            PlannedCall("bash", {"command": f"touch {IMPATIENT_BASH_MARKER}"}),
            PlannedCall("read", {"path": IMPATIENT_READ_MARKER}),
            PlannedCall("write", {"path": IMPATIENT_WRITE_MARKER, "content": "impatient\n"}),
        )
        if probes:
            return Reply("Skipping the reading; starting work right away.", probes)
    if progress.offered and IMPATIENT_PARALLEL_MARKER not in made:
        wanted = progress.readable if progress.chunk_count is not None else (0,)
        reads = tuple(PlannedCall(*progress.read_call(i)) for i in wanted)
        beside = _offered(
            conversation, PlannedCall("bash", {"command": f"touch {IMPATIENT_PARALLEL_MARKER}"})
        )
        if reads or beside:
            return Reply("Reading all chunks and working at the same time.", reads + beside)
    step = next_reads(progress, batch=None)
    if step is not None:
        return step
    if IMPATIENT_AFTER_MARKER not in made and conversation.offers("bash"):
        return Reply(
            "", (PlannedCall("bash", {"command": f"echo attested > {IMPATIENT_AFTER_MARKER}"}),)
        )
    return report("impatient", progress, passed=not progress.given_up)


def lazy(conversation: Conversation, state: PolicyState) -> Reply:
    """Settles with prose only."""
    return Reply(f"Done: everything is in order, no need to look at anything.\n\n{VERDICT_PASS}\n")


def qa_fail(conversation: Conversation, state: PolicyState) -> Reply:
    """Like ``diligent``, but the first final report per task (``scripted-task``) says
    ``## Verdict: FAIL`` with an ``## Issues`` section; later runs of the task, and any
    conversation already holding a FAIL report, pass."""
    progress = spec_progress(conversation)
    step = next_reads(progress, batch=DILIGENT_BATCH)
    if step is not None:
        return step
    failed_before = any(
        VERDICT_FAIL.lower() in m.text.lower() for m in conversation.by_role("assistant")
    )
    if not failed_before and state.claim_first_failure(_task_key(conversation)):
        return Reply(
            f"{read_summary('qa-fail', progress)}\n\n{VERDICT_FAIL}\n\n## Issues\n"
            "- The implementation does not satisfy the specification "
            "(scripted first-run failure).\n"
        )
    return report("qa-fail", progress, passed=not progress.given_up)


def echo(conversation: Conversation, state: PolicyState) -> Reply:
    """Replies with a fixed prefix and the last user message."""
    return Reply(ECHO_PREFIX + conversation.last_user_text())


REPLY_MARKER = "scripted-reply"
REPLY_SEQUENCE_MARKER = "scripted-replies"
REPLY_SEPARATOR = " || "
DEFAULT_REPLY = "scripted reply"


def reply(conversation: Conversation, state: PolicyState) -> Reply:
    """The text a marker names, ``\\n`` read as a line break: ``scripted-replies: A || B``
    answers A to the first request that carries it (server-wide), B to every later one;
    otherwise ``scripted-reply: TEXT``. What a flow's judging roles say, scripted."""
    sequence = conversation.marker(REPLY_SEQUENCE_MARKER)
    if sequence is not None:
        items = sequence.split(REPLY_SEPARATOR)
        index = state.next_index(f"replies:{sequence}")
        return Reply(items[min(index, len(items) - 1)].replace("\\n", "\n"))
    return Reply((conversation.marker(REPLY_MARKER) or DEFAULT_REPLY).replace("\\n", "\n"))


def bash_once(conversation: Conversation, state: PolicyState) -> Reply:
    """One ``bash`` call, then a report quoting its result."""
    calls = list(conversation.calls("bash"))
    if not calls:
        command = conversation.marker(BASH_MARKER) or DEFAULT_BASH_COMMAND
        return Reply("", (PlannedCall("bash", {"command": command}),))
    result = conversation.result_for(calls[-1][1].id)
    output = result.text if result is not None else "(no result)"
    return Reply(f"bash said: {output}")


# Each call takes a moment, as a real one does: the parent watches the stream at its own pace.
LOOP_COMMAND = "sleep 0.5; echo checking the same thing again"
LOOP_GIVE_UP = 20


def looper(conversation: Conversation, state: PolicyState) -> Reply:
    """Reads every chunk like ``diligent``, then makes the same ``bash`` call again and again
    (a child stuck in a loop) until a message from the squad monitor (``[squad monitor]``)
    reaches it, then reports PASS saying how many calls it made. Gives up (FAIL) after
    :data:`LOOP_GIVE_UP` calls with no steer."""
    progress = spec_progress(conversation)
    step = next_reads(progress, batch=DILIGENT_BATCH)
    if step is not None:
        return step
    steered = any(STEER_PREFIX in m.text for m in conversation.by_role("user"))
    made = len(list(conversation.calls("bash")))
    if steered:
        return Reply(
            f"Steered by the monitor after {made} identical calls; stopping.\n\n{VERDICT_PASS}\n"
        )
    if made >= LOOP_GIVE_UP or not conversation.offers("bash"):
        return Reply(f"No steer after {made} identical calls.\n\n{VERDICT_FAIL}\n")
    return Reply("Checking again.", (PlannedCall("bash", {"command": LOOP_COMMAND}),))


# ``budget-looper``: each call takes a moment, so a steer sent after a response reaches the
# child (Pi injects it at the next turn) before its following response.
BUDGET_LOOP_COMMAND = "sleep 0.3; echo working"


def budget_looper(conversation: Conversation, state: PolicyState) -> Reply:
    """Works in ``bash`` calls until a flow budget's wrap-up notice (``[pi-squad budget
    notice]``) reaches it as a user message, then gives its partial answer. Gives up after
    :data:`LOOP_GIVE_UP` calls with no notice."""
    made = len(list(conversation.calls("bash")))
    if any(WRAP_UP_MARKER in m.text for m in conversation.by_role("user")):
        return Reply(f"Wrapped up after {made} calls: partial answer, the rest unresolved.")
    if made >= LOOP_GIVE_UP or not conversation.offers("bash"):
        return Reply(f"No wrap-up notice after {made} calls.")
    return Reply("Working.", (PlannedCall("bash", {"command": BUDGET_LOOP_COMMAND}),))


TOOL_MARKER = "scripted-tool"


def tool_once(conversation: Conversation, state: PolicyState) -> Reply:
    """One call of the tool named by ``scripted-tool`` with the JSON object in
    ``scripted-args`` (how tests drive a main Pi's ``squad`` tool), then its result quoted."""
    name = conversation.marker(TOOL_MARKER)
    if name is None:
        return Reply("tool-once: no scripted-tool marker")
    calls = list(conversation.calls(name))
    if not calls:
        raw = conversation.marker(ARGS_MARKER) or "{}"
        arguments = json.loads(raw)
        return Reply("", (PlannedCall(name, arguments),))
    result = conversation.result_for(calls[-1][1].id)
    return Reply(f"{name} said: {result.text if result is not None else '(no result)'}")


POLICIES: Mapping[str, Policy] = {
    "looper": looper,
    "budget-looper": budget_looper,
    "orchestrator": orchestrator,
    "diligent": diligent,
    "impatient": impatient,
    "lazy": lazy,
    "qa-fail": qa_fail,
    "echo": echo,
    "reply": reply,
    "bash-once": bash_once,
    "tool-once": tool_once,
    "saboteur": saboteur,
    "ledger-saboteur": ledger_saboteur,
    "envelope": envelope,
    "worker": worker,
}


def select_policy_name(conversation: Conversation, default: str) -> str:
    return conversation.marker(POLICY_MARKER) or default


def _offered(conversation: Conversation, *calls: PlannedCall) -> tuple[PlannedCall, ...]:
    return tuple(call for call in calls if conversation.offers(call.name))


_RETRY_SUFFIX = re.compile(r"(?:-(?:retest|fix)-\d+)+$")


def _task_key(conversation: Conversation) -> str:
    task = conversation.marker(TASK_MARKER)
    if task is None:
        for _, call in conversation.calls(SPEC_TOOL):
            result = conversation.result_for(call.id)
            first_line = result.text.split("\n", 1)[0] if result is not None else ""
            try:
                metadata = json.loads(first_line)
            except json.JSONDecodeError:
                continue
            if isinstance(metadata, dict) and isinstance(metadata.get("taskId"), str):
                task = metadata["taskId"]
                break
    return _RETRY_SUFFIX.sub("", task) if task else "*"
