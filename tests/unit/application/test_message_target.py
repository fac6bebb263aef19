"""``squad_message``'s target: the task named, else the agent's one task in progress."""

from __future__ import annotations

import pytest

from application.ports import ToolFailure
from application.tool_calls import MessageCall
from domain.squad.model import TaskStatus
from tests.builders import task_record

TASKS = {
    "a": task_record("a", agent="backend", status=TaskStatus.IN_PROGRESS),
    "b": task_record("b", agent="backend", status=TaskStatus.DONE),
    "c": task_record("c", agent="qa", status=TaskStatus.IN_PROGRESS),
    "d": task_record("d", agent="qa", status=TaskStatus.IN_PROGRESS),
}


def test_the_named_task_or_the_agents_one_live_task_is_the_target() -> None:
    assert MessageCall("hi", task_id="b").target(TASKS) == "b"
    assert MessageCall("hi", agent="backend").target(TASKS) == "a"


def test_an_unknown_task_or_an_ambiguous_agent_is_refused() -> None:
    with pytest.raises(ToolFailure, match="Task not found: z"):
        MessageCall("hi", task_id="z").target(TASKS)
    with pytest.raises(ToolFailure, match="Could not determine target task"):
        MessageCall("hi", agent="qa").target(TASKS)
    with pytest.raises(ToolFailure, match="Could not determine target task"):
        MessageCall("hi", agent="nobody").target(TASKS)
