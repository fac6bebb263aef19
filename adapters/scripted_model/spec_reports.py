"""The steps every reading policy shares: the next message of ``squad_spec_read`` calls, and the
final report that says which chunks were read and gives the verdict."""

from __future__ import annotations

from adapters.scripted_model.replies import PlannedCall, Reply
from adapters.scripted_model.spec_reading import SPEC_TOOL, SpecProgress

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
