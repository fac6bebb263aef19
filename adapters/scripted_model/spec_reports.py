"""The steps every reading policy shares: the next message of ``squad_spec_read`` calls, the
final report that says which chunks were read and gives the verdict, and the policies that read
everything and then run one ``bash`` call."""

from __future__ import annotations

from collections.abc import Callable

from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.replies import PlannedCall, Reply
from adapters.scripted_model.spec_reading import SPEC_TOOL, SpecProgress, spec_progress

DILIGENT_BATCH = 3
VERDICT_PASS = "## Verdict: PASS"
VERDICT_FAIL = "## Verdict: FAIL"


def next_reads(progress: SpecProgress, *, batch: int | None) -> Reply | None:
    """The next message of reads, or None when there is nothing (more) to read."""
    if not progress.offered:
        return None
    if progress.chunk_count is None:
        if 0 in progress.delivered:
            return None  # read chunk 0 and still no count: nothing more to learn
        return Reply("Reading the spec.", (PlannedCall(*progress.read_call(0)),))
    wanted = sorted(progress.readable, reverse=True)
    if not wanted:
        return None
    if batch is not None:
        wanted = wanted[:batch]
    listed = ", ".join(str(i) for i in wanted)
    return Reply(
        f"Reading spec chunks {listed}.",
        tuple(PlannedCall(*progress.read_call(i)) for i in wanted),
    )


def read_summary(policy: str, progress: SpecProgress) -> str:
    if not progress.offered:
        return f"Scripted report (policy {policy}): no spec reader offered, nothing to read."
    delivered = ", ".join(str(i) for i in sorted(progress.delivered)) or "none"
    count = "unknown" if progress.chunk_count is None else str(progress.chunk_count)
    return (
        f"Scripted report (policy {policy}): read spec chunks [{delivered}] "
        f"of {count} with {SPEC_TOOL}."
    )


def report(policy: str, progress: SpecProgress, *, passed: bool) -> Reply:
    summary = read_summary(policy, progress)
    if passed:
        return Reply(f"{summary}\n\n{VERDICT_PASS}\n")
    unread = ", ".join(str(i) for i in progress.given_up)
    return Reply(
        f"{summary}\n\n{VERDICT_FAIL}\n\n## Issues\n- Could not read spec chunks [{unread}].\n"
    )


def read_then_bash(
    conversation: Conversation, *, policy: str, announce: str, script: Callable[[], str]
) -> Reply:
    """Reads every chunk like ``diligent``, then one ``bash`` call running ``script()`` (built
    only once it is due) under ``announce``, then a PASS report quoting its output."""
    progress = spec_progress(conversation)
    step = next_reads(progress, batch=DILIGENT_BATCH)
    if step is not None:
        return step
    if not list(conversation.calls("bash")) and conversation.offers("bash"):
        return Reply(announce, (PlannedCall("bash", {"command": script()}),))
    output = bash_output(conversation)
    return Reply(f"{read_summary(policy, progress)}\n\n{output}\n\n{VERDICT_PASS}\n")


def bash_output(conversation: Conversation) -> str:
    """What the conversation's last ``bash`` call printed (``(no bash)`` without one)."""
    calls = list(conversation.calls("bash"))
    result = conversation.result_for(calls[-1][1].id) if calls else None
    return result.text if result is not None else "(no bash)"
