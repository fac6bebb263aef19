"""The operator's task input (``add_task``'s task, a dependency list) checked before a decision.

Each check raises a :class:`SquadOperationError` (through ``refuse``) and changes nothing; the
decisions in :mod:`domain.squad.decisions` call them, and ``application/squads/operations.py`` calls
``check_new_task`` before it takes any lock.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import attrs

from domain.errors import ErrorCode
from domain.spec.limits import MAX_DESCRIPTION_BYTES, MAX_TITLE_BYTES
from domain.spec.plan import TASK_ID_PATTERN as FILE_TASK_ID_PATTERN
from domain.squad.ids import SAFE_TASK_ID_PATTERN, TASK_ID_PATTERN, reserved_task_id_problem
from domain.squad.model import Squad, Task
from domain.squad.state import SquadState, refuse, show_id


@attrs.frozen
class NewTask:
    """``add_task``'s task: the upstream ``{id, title, description?, agent, depends?,
    inheritContext?, forkFromTask?}``."""

    id: str
    title: str
    agent: str
    description: str = ""
    depends: tuple[str, ...] = ()
    inherit_context: bool = False
    fork_from_task: str | None = None


def check_dependencies(
    tasks: Mapping[str, Task], task_id: str, depends: Sequence[str], *, field: str
) -> None:
    """Every dependency exists, once, and is not the task itself (``DEPENDENCY_INVALID``)."""
    seen: set[str] = set()
    duplicates: set[str] = set()
    for dependency in depends:
        (duplicates if dependency in seen else seen).add(dependency)
    if duplicates:
        raise refuse(
            ErrorCode.DEPENDENCY_INVALID,
            f"{field} lists {', '.join(show_id(d) for d in duplicates)} more than once; "
            "each dependency may appear once",
        )
    if task_id in seen:
        raise refuse(
            ErrorCode.DEPENDENCY_INVALID,
            f"{field}: task {show_id(task_id)} cannot depend on itself",
        )
    unknown = [d for d in depends if d not in tasks]
    if unknown:
        known = ", ".join(sorted(tasks)) or "(none)"
        raise refuse(
            ErrorCode.DEPENDENCY_INVALID,
            f"{field} names unknown task(s): {', '.join(show_id(d) for d in unknown)}; "
            f"existing task ids: {known}",
        )


# How add_task describes the reserved names (the rule: domain.squad.ids.reserved_name_problem).
_RESERVED_IDS = "spec, session, knowledge or a Windows device name such as con, in any case"


@attrs.frozen
class _TaskIdRule:
    """Which ids a squad accepts for a new task, and how the refusal names the rule."""

    pattern: re.Pattern[str]
    kind: str
    must: str


# A file-spec squad's ids become file names under its spec, so they follow the spec's rule.
_FILE_SPEC_ID_RULE = _TaskIdRule(
    TASK_ID_PATTERN,
    "file-spec task id",
    f"match {FILE_TASK_ID_PATTERN} (1-64 lowercase letters, digits and inner hyphens)",
)
_INLINE_ID_RULE = _TaskIdRule(
    SAFE_TASK_ID_PATTERN,
    "task id",
    "be 1-128 letters, digits, '.', '_' or '-' starting with a letter or digit,",
)


def check_new_task(squad: Squad, new: NewTask) -> None:
    """The new task's id and text, before any lock is taken."""
    reserved = reserved_task_id_problem(new.id)
    why = "" if reserved is None else f"; this one is reserved: {reserved}"
    rule = _FILE_SPEC_ID_RULE if squad.spec is not None else _INLINE_ID_RULE
    if not rule.pattern.match(new.id) or reserved is not None:
        raise refuse(
            ErrorCode.INVALID_TASK_ID,
            f"Invalid {rule.kind} {show_id(new.id)}: task.id must {rule.must} "
            f"and not be reserved ({_RESERVED_IDS}){why}",
        )
    if not new.title.strip():
        raise refuse(ErrorCode.TASK_INPUT_INVALID, "task.title must be a non-empty string")
    if not new.agent.strip():
        raise refuse(ErrorCode.TASK_INPUT_INVALID, "task.agent must be a non-empty string")
    if squad.spec is not None:
        for field, value, limit in (
            ("task.title", new.title, MAX_TITLE_BYTES),
            ("task.description", new.description, MAX_DESCRIPTION_BYTES),
        ):
            size = len(value.encode("utf-8"))
            if size > limit:
                raise refuse(
                    ErrorCode.TASK_INPUT_INVALID,
                    f"{field} is {size} bytes; at most {limit} are allowed. Put longer "
                    "text in a file the task names instead (nothing is truncated).",
                )


def check_fork_source(tasks: Mapping[str, Task], new: NewTask) -> None:
    """The task ``forkFromTask`` names exists and has a session to fork."""
    source_id = new.fork_from_task
    assert source_id is not None
    if new.inherit_context:
        raise refuse(
            ErrorCode.TASK_INPUT_INVALID,
            "task.forkFromTask cannot be combined with task.inheritContext; choose one",
        )
    source = tasks.get(source_id)
    if source is None:
        known = ", ".join(sorted(tasks)) or "(none)"
        raise refuse(
            ErrorCode.TASK_NOT_FOUND,
            f"task.forkFromTask {show_id(source_id)} is not a task of this squad; "
            f"existing task ids: {known}",
        )
    if source.session is None:
        raise refuse(
            ErrorCode.OPERATION_REFUSED,
            f"task.forkFromTask '{source_id}' has no bound session to fork; "
            "fork from a task that has run",
        )


def check_placement(state: SquadState, new: NewTask) -> None:
    """A new id, and dependencies that exist (checked before the caller checks the agent)."""
    if new.id in state.tasks:
        raise refuse(
            ErrorCode.TASK_EXISTS,
            f"task.id '{new.id}' already exists in squad '{state.squad.id}'; choose a new id",
        )
    check_dependencies(state.tasks, new.id, new.depends, field="task.depends")
