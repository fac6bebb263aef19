"""The main Pi's squad tools: each tool's input schema, and its input as a value.

One definition per tool: ``parameters`` (what Pi and the model see) and validation (what
``execute_tool`` accepts) both come from the same package-data schema file, through
``domain.spec.documents.tool_parameters`` and ``domain.inputs.parse_input``. ``squad`` keeps
its contract-§2 classification (``application.squads.squad_call.classify_call``, over the same
``squad-call`` schema). A refusal carries the code the CLI gives the same input:
``squad_modify`` → ``TASK_INPUT_INVALID`` (its ``task`` is the CLI's ``--task-json`` object),
``squad_review`` → ``REVIEW_INVALID`` (``application.squads.review.parse_review_call``, shared
with ``pi-squad review``), ``squad_message`` → ``MESSAGE_INVALID``,
``squad_status`` → ``USAGE``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import attrs

from application.ports import ToolFailure
from application.squads.operations import Action, NewTask
from application.squads.review import ReviewCall, parse_review_call
from domain.errors import ErrorCode, PiSquadError, SquadOperationError
from domain.input_errors import InputRejected
from domain.inputs import parse_input
from domain.squad.model import Task, TaskStatus

T = TypeVar("T")

# Tool name -> its input schema (``domain/spec/schemas/<name>.schema.json``).
TOOL_SCHEMAS: Mapping[str, str] = {
    "squad": "squad-call",
    "squad_status": "squad-status-call",
    "squad_modify": "squad-modify-call",
    "squad_review": "squad-review-call",
    "squad_message": "squad-message-call",
}


@attrs.frozen
class StatusCall:
    squad_id: str | None = None


@attrs.frozen
class ModifyCall:
    action: Action
    squad_id: str | None = None
    task_id: str | None = None
    depends: tuple[str, ...] | None = None
    output: str | None = None
    task: NewTask | None = None


@attrs.frozen
class MessageCall:
    message: str
    squad_id: str | None = None
    task_id: str | None = None
    agent: str | None = None
    expect_reply: bool = True

    def target(self, tasks: Mapping[str, Task]) -> str:
        """The task the message is for: ``taskId``, else the agent's one task in progress."""
        task_id = self.task_id
        if task_id is None:
            live = [
                t.id
                for t in tasks.values()
                if t.agent == self.agent and t.status is TaskStatus.IN_PROGRESS
            ]
            if len(live) != 1:
                raise ToolFailure(
                    "Could not determine target task: give taskId, or an agent with exactly "
                    "one live task."
                )
            task_id = live[0]
        if task_id not in tasks:
            raise ToolFailure(f"Task not found: {task_id}")
        return task_id


_CODES: Mapping[str, ErrorCode] = {
    "squad_status": ErrorCode.USAGE,
    "squad_modify": ErrorCode.TASK_INPUT_INVALID,
    "squad_message": ErrorCode.MESSAGE_INVALID,
}


def parse_tool_input(tool: str, params: Mapping[str, Any], cls: type[T]) -> T:
    """``params`` of ``tool`` checked against its schema and structured into ``cls``."""
    try:
        return parse_input(TOOL_SCHEMAS[tool], dict(params), cls)
    except InputRejected as exc:
        code = _CODES[tool]
        message = f"{tool}: {'; '.join(exc.problems)}"
        if code is ErrorCode.USAGE:
            raise PiSquadError(code, message) from None
        raise SquadOperationError(code, message) from None


def status_call(params: Mapping[str, Any]) -> StatusCall:
    return parse_tool_input("squad_status", params, StatusCall)


def modify_call(params: Mapping[str, Any]) -> ModifyCall:
    return parse_tool_input("squad_modify", params, ModifyCall)


def review_call(params: Mapping[str, Any]) -> ReviewCall:
    return parse_review_call(params)


def message_call(params: Mapping[str, Any]) -> MessageCall:
    return parse_tool_input("squad_message", params, MessageCall)
