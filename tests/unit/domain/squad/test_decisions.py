"""The squad aggregate on its own: pure states in, decisions out, no store, no clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.errors import ErrorCode, SquadOperationError
from domain.spec.model import SquadConfig
from domain.squad import decisions
from domain.squad.graph import descendants_of
from domain.squad.messages import MessageKind
from domain.squad.model import Squad, SquadStatus, Task, TaskStatus
from domain.squad.state import BUDGETS_RESET, SquadState

NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)


def task(task_id: str, status: TaskStatus, *depends: str) -> Task:
    return Task(
        id=task_id,
        title=task_id,
        description="",
        agent="backend",
        status=status,
        depends=depends,
        created=NOW,
    )


def state(*tasks: Task, status: SquadStatus = SquadStatus.RUNNING) -> SquadState:
    squad = Squad(
        id="s",
        goal="g",
        status=status,
        created=NOW,
        cwd="/w",
        config=SquadConfig(max_concurrency=2, auto_unblock=True, max_retries=2),
        task_ids=tuple(t.id for t in tasks),
    )
    return SquadState(squad=squad, tasks={t.id: t for t in tasks})


CHAIN = state(
    task("a", TaskStatus.DONE),
    task("b", TaskStatus.DONE, "a"),
    task("c", TaskStatus.PENDING, "b"),
)


def refused(code: ErrorCode, call: object) -> str:
    with pytest.raises(SquadOperationError) as caught:
        call()  # type: ignore[operator]
    assert caught.value.code is code
    return caught.value.message


def test_a_decision_never_mutates_the_state_it_was_given() -> None:
    before = CHAIN
    decisions.resume_task(before, "a")
    assert before == CHAIN
    assert before.tasks["b"].status is TaskStatus.DONE


def test_resuming_a_done_task_reblocks_its_descendants_and_resets_its_budgets() -> None:
    decision = decisions.resume_task(CHAIN, "a")
    tasks = decision.state.tasks
    assert tasks["a"].status is TaskStatus.PENDING
    assert tasks["b"].status is TaskStatus.BLOCKED
    assert tasks["c"].status is TaskStatus.BLOCKED
    assert decision.reset_budgets == ("a",)
    texts = [(n.task_id, n.text) for n in decision.state.notes]
    assert ("b", "Dependency ancestry reopened at a.") in texts
    assert ("a", f"{BUDGETS_RESET} by resume_task.") in texts


def test_refusals_name_what_was_refused_and_change_nothing() -> None:
    cancelled = state(task("a", TaskStatus.CANCELLED))
    message = refused(ErrorCode.OPERATION_REFUSED, lambda: decisions.pause_task(cancelled, "a"))
    assert "task 'a' is cancelled" in message
    message = refused(ErrorCode.OPERATION_REFUSED, lambda: decisions.cancel_task(CHAIN, "b", NOW))
    assert "- c [pending]" in message
    refused(ErrorCode.TASK_NOT_FOUND, lambda: decisions.pause_task(CHAIN, "zz"))


def test_a_dependency_cycle_is_shown_from_the_changed_task() -> None:
    waiting = state(
        task("a", TaskStatus.PENDING),
        task("b", TaskStatus.BLOCKED, "a"),
        task("c", TaskStatus.BLOCKED, "b"),
    )
    message = refused(
        ErrorCode.DEPENDENCY_CYCLE, lambda: decisions.set_dependencies(waiting, "a", ("c",))
    )
    assert "a -> c -> b -> a" in message


def test_completing_unblocks_dependents_and_says_so_in_the_history() -> None:
    start = state(task("a", TaskStatus.PENDING), task("b", TaskStatus.BLOCKED, "a"))
    decision = decisions.complete_task(start, "a", "done by hand", NOW)
    assert decision.state.tasks["a"].output == "done by hand"
    assert decision.state.tasks["b"].status is TaskStatus.PENDING
    assert decision.state.notes[0].kind is MessageKind.DONE


def test_new_work_on_a_squad_in_review_moves_its_review_into_history() -> None:
    reviewed = state(task("a", TaskStatus.DONE), status=SquadStatus.REVIEW)
    new = decisions.NewTask(id="b", title="more", agent="backend", depends=("a",))
    decision = decisions.add_task(reviewed, new, NOW)
    assert decision.state.squad.status is SquadStatus.RUNNING
    assert decision.state.tasks["b"].status is TaskStatus.PENDING


def test_no_op_decisions_say_nothing_changed() -> None:
    assert decisions.complete_task(CHAIN, "a", None, NOW).changed is False
    paused = decisions.pause(CHAIN).state
    assert decisions.pause(paused).changed is False


@st.composite
def chains(draw: st.DrawFn) -> tuple[SquadState, str]:
    """A line of done tasks, t0 <- t1 <- ... , and one of them to reopen."""
    length = draw(st.integers(min_value=1, max_value=8))
    tasks = [task("t0", TaskStatus.DONE)]
    for index in range(1, length):
        tasks.append(task(f"t{index}", TaskStatus.DONE, f"t{index - 1}"))
    return state(*tasks, status=SquadStatus.REVIEW), f"t{draw(st.integers(0, length - 1))}"


@given(chains())
def test_reopening_any_task_leaves_no_descendant_done_and_the_squad_running(
    case: tuple[SquadState, str],
) -> None:
    start, reopened = case
    after = start.reopen_with_descendants(reopened, "Reopened.")
    for descendant in descendants_of(dict(after.tasks), reopened):
        assert after.tasks[descendant].status is TaskStatus.BLOCKED
    assert after.tasks[reopened].status is TaskStatus.PENDING
    assert after.squad.status is SquadStatus.RUNNING
    assert after.squad.review is None
