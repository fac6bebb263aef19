"""The live row and the settle notices (domain/delegation/display.py): which jobs the row
shows, in which words, and exactly when a job's settling is announced."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.delegation.display import (
    COLLECT_NEXT,
    LINGER_MS,
    NOTHING_SHOWN,
    REASON_CHARS,
    REPAIR_NEXT,
    STATUS_NEXT,
    JobFacts,
    clipped,
    delegation_row,
    job_line,
    settled_since,
)
from domain.delegation.lifecycle import State
from domain.delegation.session import SessionState
from tests.unit.domain.delegation.states import NOW_MS, admitted_state

WORKING = {State.QUEUED, State.RUNNING}
AWAITING = {State.READY, State.INCOMPLETE, State.INVALID}
SETTLED = [s for s in State if s not in WORKING | {State.PROPOSED, State.REJECTED}]


def with_attempt(session: SessionState, **changes: Any) -> SessionState:
    """``session``'s one job with its current attempt changed."""
    (batch,) = session.batches.values()
    (job,) = batch.jobs
    return session.with_attempt(attrs.evolve(job.current, **changes))


def only_job_id(state: SessionState) -> str:
    (batch,) = state.batches.values()
    return batch.jobs[0].job_id


@given(
    st.sampled_from(list(State)),
    st.one_of(st.none(), st.integers(0, 3 * LINGER_MS)),
    st.booleans(),
)
def test_the_row_shows_a_job_while_it_works_or_awaits_the_parent_and_a_minute_after_any_end(
    job_state: State, settled_ago: int | None, disposed: bool
) -> None:
    now = NOW_MS + 10 * LINGER_MS
    state = with_attempt(
        admitted_state(),
        state=job_state,
        settled_at_ms=None if settled_ago is None else now - settled_ago,
        disposition={"disposition": "discard"} if disposed else None,
    )
    expected = (
        job_state in WORKING
        or (job_state in AWAITING and not disposed)
        or (settled_ago is not None and settled_ago < LINGER_MS)
    )
    row = delegation_row(state, now)
    assert (row != NOTHING_SHOWN) is expected
    if expected:
        assert row.status == f"delegate: 1 {job_state}"
        assert row.widget is not None
        assert row.widget[0].split(" ")[3].rstrip(":") == str(job_state)


def test_no_session_and_an_empty_session_show_nothing() -> None:
    assert delegation_row(None, NOW_MS) == NOTHING_SHOWN
    settled = with_attempt(admitted_state(), state=State.EXPIRED, settled_at_ms=NOW_MS)
    assert delegation_row(settled, NOW_MS + LINGER_MS) == NOTHING_SHOWN


def test_a_failed_job_is_shown_with_its_reason_cut_to_one_line() -> None:
    reason = "provider said:\n" + "overloaded " * 40
    failed = with_attempt(
        admitted_state(),
        state=State.FAILED,
        settled_at_ms=NOW_MS,
        failure_kind="provider_error",
        failure_class="transient",
        error_message=reason,
    )
    row = delegation_row(failed, NOW_MS)
    assert row.status == "delegate: 1 failed"
    assert row.widget is not None
    (line,) = row.widget
    assert line.startswith("✗ k1 (investigate) failed: provider_error (transient): provider said:")
    assert "\n" not in line
    assert len(line) < REASON_CHARS + 40
    assert line.endswith("…")


@pytest.mark.parametrize(
    ("facts", "line"),
    [
        (JobFacts("k1", "review", "queued", None, None, 1), "… k1 (review) queued"),
        (JobFacts("k1", "review", "running", None, None, 1), "▸ k1 (review) running"),
        (JobFacts("k1", "review", "ready", None, 1, 2), "✓ k1 (review) ready · 1/2 covered"),
        (
            JobFacts("k2", "investigate", "expired", "deadline passed", None, 1),
            "✗ k2 (investigate) expired: deadline passed",
        ),
        (
            JobFacts("k3", "review", "cancelled", "cancelled by the parent", None, 1),
            "✗ k3 (review) cancelled: cancelled by the parent",
        ),
        (
            JobFacts("k4", "review", "incomplete", "needs context", 0, 1),
            "◐ k4 (review) incomplete · 0/1 covered: needs context",
        ),
    ],
)
def test_one_line_per_job_names_key_mode_state_and_reason(facts: JobFacts, line: str) -> None:
    assert job_line(facts) == line


@given(st.text(), st.integers(2, 300))
def test_clipped_text_is_one_line_within_its_limit(text: str, limit: int) -> None:
    cut = clipped(text, limit)
    assert len(cut) <= limit
    assert not any(c in cut for c in "\n\r\t")
    if len(" ".join(text.split())) <= limit:
        assert cut == " ".join(text.split())


@given(st.sampled_from(list(State)), st.sampled_from(list(State)))
def test_a_notice_is_due_exactly_when_the_attempt_goes_from_working_to_settled(
    before: State, after: State
) -> None:
    admitted = admitted_state()
    earlier = with_attempt(admitted, state=before)
    later = with_attempt(admitted, state=after, settled_at_ms=NOW_MS)
    notices = settled_since(earlier, later)
    assert len(notices) == (before in WORKING and after in SETTLED)


def test_a_job_new_since_the_last_read_is_announced_if_it_already_settled() -> None:
    empty = attrs.evolve(admitted_state(), batches={})
    settled = with_attempt(admitted_state(), state=State.READY, settled_at_ms=NOW_MS)
    assert len(settled_since(empty, settled)) == 1
    assert settled_since(empty, admitted_state()) == []


def test_a_host_retry_is_not_announced_but_its_retrys_end_is() -> None:
    running = with_attempt(admitted_state(), state=State.RUNNING)
    failed = with_attempt(running, state=State.FAILED, settled_at_ms=NOW_MS, retry="scheduled")
    (batch,) = failed.batches.values()
    job = batch.jobs[0]
    retry = attrs.evolve(job.current, attempt_id="a-retry", state=State.QUEUED, retry_of="a")
    retried = failed.with_job(batch.batch_id, job.with_attempt(retry))
    assert settled_since(running, retried) == []
    ready = retried.with_attempt(attrs.evolve(retry, state=State.READY, settled_at_ms=NOW_MS))
    assert [n.level for n in settled_since(retried, ready)] == ["info"]
    # Read only before and after both: the job's current attempt changed, and it settled.
    assert len(settled_since(running, ready)) == 1


@pytest.mark.parametrize(
    ("job_state", "level", "next_step"),
    [
        (State.READY, "info", COLLECT_NEXT),
        (State.INCOMPLETE, "warning", REPAIR_NEXT),
        (State.INVALID, "error", REPAIR_NEXT),
        (State.FAILED, "error", STATUS_NEXT),
        (State.EXPIRED, "error", STATUS_NEXT),
        (State.CANCELLED, "warning", STATUS_NEXT),
    ],
)
def test_the_notice_names_the_job_its_outcome_and_the_next_command(
    job_state: State, level: str, next_step: str
) -> None:
    running = with_attempt(admitted_state(), state=State.RUNNING)
    settled = with_attempt(
        running, state=job_state, settled_at_ms=NOW_MS, problem="the deadline passed"
    )
    (notice,) = settled_since(running, settled)
    job_id = only_job_id(settled)
    assert notice.text.startswith(f"delegate: job k1 ({job_id}) {job_state}")
    assert notice.text.endswith(f" — {next_step}")
    assert notice.level == level
    if job_state is not State.READY:
        assert ": the deadline passed" in notice.text
