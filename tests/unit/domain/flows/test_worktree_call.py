"""A ``worktree`` call as a value: its defaults, its roles, and the refusals of its closed
schema (``flow-worktree-v1``) and of its branch names, before anything is made or spawned."""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.flows.call import Mode, parse_call
from domain.flows.catalogue import entry
from domain.flows.errors import FlowError
from domain.flows.worktree import branch, integration_branch

WHY = "two writers touch separate files"


def writers(count: int) -> list[dict[str, Any]]:
    return [{"id": f"w{i}", "agent": "operator", "task": f"part {i}"} for i in range(count)]


def worktree(**fields: Any) -> dict[str, Any]:
    return {"task": "ship it", "why": WHY, "worktree": {"tasks": writers(2), **fields}}


def refusal(document: dict[str, Any]) -> FlowError:
    with pytest.raises(FlowError) as caught:
        parse_call(document)
    return caught.value


def test_a_worktree_call_takes_pi_flows_defaults() -> None:
    call = parse_call(worktree())
    assert call.mode is Mode.WORKTREE
    assert call.worktree is not None
    assert call.worktree.base_ref == "HEAD"
    assert call.worktree.integrator.agent == "operator"
    assert call.worktree.require_clean is True
    assert call.worktree.check_command is None
    # Writers cite their evidence unless they say otherwise.
    assert [task.require_evidence for task in call.worktree.tasks] == [True, True]


def test_a_writer_may_waive_evidence() -> None:
    tasks = [{**writers(1)[0], "requireEvidence": False}, writers(2)[1]]
    call = parse_call({**worktree(), "worktree": {"tasks": tasks}})
    assert call.worktree is not None
    assert [task.require_evidence for task in call.worktree.tasks] == [False, True]


def test_the_roles_are_each_writer_then_the_integrator() -> None:
    call = parse_call(worktree(integrator={"agent": "analyst"}))
    assert [(path, role.agent, role.task) for path, role in call.roles()] == [
        ("$.worktree.tasks[0]", "operator", "part 0"),
        ("$.worktree.tasks[1]", "operator", "part 1"),
        ("$.worktree.integrator", "analyst", "ship it"),
    ]


def test_more_than_eight_writers_is_too_many_tasks() -> None:
    error = refusal({**worktree(), "worktree": {"tasks": writers(9)}})
    assert error.code == ErrorCode.TOO_MANY_TASKS
    assert error.problems[0].path == "$.worktree.tasks"


def test_one_writer_is_not_a_worktree_flow() -> None:
    error = refusal({**worktree(), "worktree": {"tasks": writers(1)}})
    assert error.code == ErrorCode.FLOW_INVALID


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"cwd": "elsewhere"}, "$.worktree.tasks[0]"),
        ({"id": "../up"}, "$.worktree.tasks[0].id"),
        ({"id": "-x"}, "$.worktree.tasks[0].id"),
    ],
)
def test_a_writer_has_no_directory_of_its_own_and_a_branch_safe_id(
    change: dict[str, Any], path: str
) -> None:
    tasks = [{**writers(1)[0], **change}, writers(2)[1]]
    error = refusal({**worktree(), "worktree": {"tasks": tasks}})
    assert error.code == ErrorCode.FLOW_INVALID
    assert error.problems[0].path == path


@pytest.mark.parametrize("ref", ["-c core.pager=sh", "main branch", ""])
def test_a_base_ref_git_could_read_as_an_option_or_two_words_is_refused(ref: str) -> None:
    error = refusal(worktree(baseRef=ref))
    assert error.code == ErrorCode.FLOW_INVALID
    assert error.problems[0].path == "$.worktree.baseRef"


@pytest.mark.parametrize("taken", ["w0", "integration"])
def test_a_writer_id_names_one_branch_only(taken: str) -> None:
    tasks = [writers(2)[0], {**writers(2)[1], "id": taken}]
    error = refusal({**worktree(), "worktree": {"tasks": tasks}})
    assert error.code == ErrorCode.FLOW_INVALID
    assert error.problems[0].path == "$.worktree.tasks[1].id"
    assert error.problems[0].measured == taken


def test_a_check_timeout_below_one_second_is_refused() -> None:
    error = refusal(worktree(checkCommand="make test", checkTimeoutMs=999))
    assert error.code == ErrorCode.FLOW_INVALID
    assert error.problems[0].path == "$.worktree.checkTimeoutMs"


def test_branches_are_named_by_run_under_pi_flow() -> None:
    assert branch("abc", "api") == "pi-flow/abc/api"
    assert integration_branch("abc") == "pi-flow/abc/integration"


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.WORKTREE_NOT_GIT,
        ErrorCode.WORKTREE_DIRTY_SOURCE,
        ErrorCode.WORKTREE_SETUP_FAILED,
        ErrorCode.WORKTREE_INTEGRATION_FAILED,
        ErrorCode.WORKTREE_VERIFY_FAILED,
    ],
)
def test_every_worktree_code_has_its_catalogue_entry(code: ErrorCode) -> None:
    found = entry(code)
    assert found.cause
    assert found.fix
    assert found.retryable is False
