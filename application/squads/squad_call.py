"""The public ``squad`` call (contract §2): exactly one of two closed forms.

The file form ``{specFile, specSha256}`` never plans and never remaps agents. The inline form
``{goal, agents?, tasks?, config?}`` keeps upstream behaviour: unknown agents are remapped to
``fullstack`` with a note, and a missing task list is planned by a planner child.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from domain.agents import AgentCatalog, UnavailableAgent
from domain.errors import ErrorCode, SpecError
from domain.spec.model import SquadConfig
from domain.spec.parse import check_sha256_argument
from domain.spec.plan import find_cycle
from domain.spec.schema import branch_violations, describe, violations
from domain.squad.ids import SAFE_TASK_ID_PATTERN, reserved_task_id_problem
from domain.squad.model import AgentSetting, Task, TaskStatus

FILE_KEYS = frozenset({"specFile", "specSha256"})
INLINE_KEYS = frozenset({"goal", "agents", "tasks", "config"})
DEFAULT_CONFIG = SquadConfig(max_concurrency=2, auto_unblock=True, max_retries=2)
REMAP_AGENT = "fullstack"
MAX_CONCURRENCY = 64


@attrs.frozen
class FileCall:
    spec_file: str
    spec_sha256: str


@attrs.frozen
class InlineCall:
    goal: str
    agents: tuple[tuple[str, AgentSetting], ...]
    tasks: tuple[Mapping[str, Any], ...] | None
    config: SquadConfig


SquadCall = FileCall | InlineCall


def classify_call(call: object) -> SquadCall:
    """Validate a ``squad`` call against §2; raises ``SpecError`` before anything is created."""
    if not isinstance(call, Mapping):
        raise SpecError(ErrorCode.SPEC_MALFORMED, "$: the squad call must be a JSON object")
    keys = set(call)
    if keys & FILE_KEYS:
        mixed = sorted(keys & INLINE_KEYS)
        if mixed:
            raise SpecError(
                ErrorCode.SPEC_MALFORMED,
                f"$: the file form {{specFile, specSha256}} cannot be combined with "
                f"{', '.join(mixed)}; no squad was created",
            )
        return _file_call(call)
    return _inline_call(call)


def _file_call(call: Mapping[str, Any]) -> FileCall:
    sha = call.get("specSha256")
    if isinstance(sha, str):
        check_sha256_argument(sha)
    _raise_violations(branch_violations("squad-call", 1, dict(call)))
    return FileCall(spec_file=call["specFile"], spec_sha256=call["specSha256"])


def _raise_violations(found: list[Any]) -> None:
    messages = list(dict.fromkeys(describe(error) for error in found))
    if messages:
        raise SpecError(ErrorCode.SPEC_MALFORMED, "; ".join(messages))


def _inline_call(call: Mapping[str, Any]) -> InlineCall:
    _raise_violations(branch_violations("squad-call", 0, dict(call)))
    # The branches are exclusive; checking the whole oneOf keeps the accepted set equal to §2.
    _raise_violations(violations("squad-call", dict(call)))
    raw_config = call.get("config") or {}
    config = DEFAULT_CONFIG
    if raw_config.get("maxConcurrency"):
        wanted = int(raw_config["maxConcurrency"])
        if wanted > MAX_CONCURRENCY:
            raise SpecError(
                ErrorCode.SPEC_MALFORMED,
                f"$.config.maxConcurrency is {wanted}; allowed at most {MAX_CONCURRENCY}",
            )
        config = attrs.evolve(config, max_concurrency=wanted)
    agents = tuple(
        (name, AgentSetting(model=entry.get("model"), thinking=entry.get("thinking")))
        for name, entry in (call.get("agents") or {}).items()
    )
    tasks = call.get("tasks")
    return InlineCall(
        goal=call["goal"],
        agents=agents,
        tasks=None if tasks is None else tuple(tasks),
        config=config,
    )


def inline_tasks(
    raw_tasks: tuple[Mapping[str, Any], ...], catalog: AgentCatalog, *, now: datetime
) -> tuple[tuple[Task, ...], list[str]]:
    """Tasks of an inline plan with upstream remapping; ``PLAN_INVALID`` on structural errors.

    Inline task IDs become directory names, so they must be path-safe (a deliberate
    difference: upstream does not sanitise them).
    """
    errors: list[str] = []
    seen: set[str] = set()
    for position, raw in enumerate(raw_tasks):
        task_id = raw.get("id")
        if (
            not isinstance(task_id, str)
            or not SAFE_TASK_ID_PATTERN.match(task_id)
            or reserved_task_id_problem(task_id) is not None
        ):
            errors.append(f"tasks[{position}].id is not a path-safe task id")
        elif task_id in seen:
            errors.append(f"duplicate id '{task_id}'")
        seen.add(str(task_id))
    for raw in raw_tasks:
        for dependency in raw.get("depends") or []:
            if dependency not in seen:
                errors.append(f"task '{raw.get('id')}' depends on unknown task '{dependency}'")
    graph = {
        str(raw.get("id")): [d for d in (raw.get("depends") or []) if d in seen]
        for raw in raw_tasks
    }
    cycle = find_cycle(graph)
    if cycle is not None:
        errors.append("dependency cycle " + " -> ".join(cycle))
    if not errors and all(raw.get("depends") for raw in raw_tasks):
        errors.append("no task is free of dependencies")
    if errors:
        raise SpecError(
            ErrorCode.PLAN_INVALID,
            "Plan rejected:\n- "
            + "\n- ".join(errors)
            + "\n\nFix the task list and call squad again.",
        )
    tasks: list[Task] = []
    notes: list[str] = []
    for raw in raw_tasks:
        agent = raw["agent"]
        description = raw.get("description") or ""
        if isinstance(catalog.get(agent), UnavailableAgent):
            description = (
                f'[Note: agent "{agent}" not found, remapped to {REMAP_AGENT}]\n\n{description}'
            )
            notes.append(f"task '{raw['id']}': agent '{agent}' remapped to {REMAP_AGENT}")
            agent = REMAP_AGENT
        depends = tuple(raw.get("depends") or ())
        tasks.append(
            Task(
                id=raw["id"],
                title=raw["title"],
                description=description,
                agent=agent,
                status=TaskStatus.BLOCKED if depends else TaskStatus.PENDING,
                depends=depends,
                created=now,
                inherit_context=bool(raw.get("inheritContext", False)),
            )
        )
    return tuple(tasks), notes
