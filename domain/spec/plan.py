"""Semantic plan checks of contract §3 and the upstream ``validatePlan`` rules.

Structural problems (identity, graph, roster, references) are fatal and reported together as
``PLAN_INVALID``; upstream's stylistic rules only produce warnings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from domain.names import AGENT_NAME
from domain.spec.model import SquadSpec, TaskSpec
from domain.spec.regex import ecma_regex
from domain.squad.ids import SQUAD_DIR_ENTRIES, reserved_task_id_problem

TASK_ID_PATTERN = "^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$"
AGENT_NAME_PATTERN = f"^{AGENT_NAME}$"
ARTIFACT_ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"

# Names inside a squad directory that a task directory must never take, in any case; Windows
# device names are refused too (``domain.squad.ids.reserved_task_id_problem``).
RESERVED_TASK_IDS = SQUAD_DIR_ENTRIES

MANY_TASKS_WARNING_THRESHOLD = 9
_QA_LIKE = re.compile(r"\b(qa|test|tests|testing|verif\w*|review|audit)\b", re.IGNORECASE)
_VERIFY_WORD = re.compile(r"verif|test|check|curl|run\b|npm|pnpm|cargo|pytest|tsc\b", re.IGNORECASE)


class AgentLookup(Protocol):
    def unavailable_reason(self, name: str) -> str | None:
        """``None`` when ``name`` resolves to a present, enabled definition; else why not."""
        ...


def shown_id(value: str, pattern: str = TASK_ID_PATTERN) -> str:
    """An identifier as a message may show it: only when it already has an ID's shape."""
    return f"'{value}'" if ecma_regex(pattern).search(value) else "(an id not shown)"


def find_cycle(graph: Mapping[str, Sequence[str]]) -> list[str] | None:
    """One dependency cycle as ``[a, b, ..., a]``, or ``None`` for a DAG. Iterative DFS."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    for root in graph:
        if state.get(root):
            continue
        path: list[str] = [root]
        iterators = [iter(graph[root])]
        state[root] = 1
        while iterators:
            advanced = False
            for dependency in iterators[-1]:
                if dependency not in graph:
                    continue
                if state.get(dependency) == 1:
                    return [*path[path.index(dependency) :], dependency]
                if not state.get(dependency):
                    state[dependency] = 1
                    path.append(dependency)
                    iterators.append(iter(graph[dependency]))
                    advanced = True
                    break
            if not advanced:
                state[path.pop()] = 2
                iterators.pop()
    return None


def plan_errors(spec: SquadSpec, agents: AgentLookup) -> list[str]:
    errors: list[str] = []
    first_seen: dict[str, int] = {}
    for i, task in enumerate(spec.tasks):
        reserved = reserved_task_id_problem(task.id)
        if reserved is not None:
            errors.append(
                f"$.tasks[{i}].id: task id {shown_id(task.id)} is reserved: {reserved}; "
                "rename the task"
            )
        if task.id in first_seen:
            errors.append(
                f"$.tasks[{i}].id: duplicate task id {shown_id(task.id)} "
                f"(first at $.tasks[{first_seen[task.id]}])"
            )
        else:
            first_seen[task.id] = i
    artifact_seen: dict[str, int] = {}
    for i, artifact in enumerate(spec.artifacts):
        if artifact.id in artifact_seen:
            errors.append(
                f"$.artifacts[{i}].id: duplicate artifact id "
                f"{shown_id(artifact.id, ARTIFACT_ID_PATTERN)} (first at "
                f"$.artifacts[{artifact_seen[artifact.id]}])"
            )
        else:
            artifact_seen[artifact.id] = i
    roster = {agent.name for agent in spec.agents}
    for i, task in enumerate(spec.tasks):
        errors.extend(
            _task_errors(
                i,
                task=task,
                task_ids=first_seen,
                roster=roster,
                artifact_ids=artifact_seen,
                agents=agents,
            )
        )
    # Self-dependencies are reported above; leaving them out keeps one message per fault.
    graph = {task.id: [d for d in task.depends if d != task.id] for task in spec.tasks}
    cycle = find_cycle(graph)
    if cycle is not None:
        errors.append(
            "$.tasks: dependency cycle "
            + " -> ".join(shown_id(t) for t in cycle)
            + ": remove one of these dependencies so that some task can start first"
        )
    if not errors and not any(not task.depends for task in spec.tasks):
        errors.append("$.tasks: no task is free of dependencies, so nothing could ever start")
    return errors


def _task_errors(
    i: int,
    *,
    task: TaskSpec,
    task_ids: Mapping[str, int],
    roster: set[str],
    artifact_ids: Mapping[str, int],
    agents: AgentLookup,
) -> list[str]:
    errors: list[str] = []
    where = f"$.tasks[{i}]"
    for j, dependency in enumerate(task.depends):
        if dependency == task.id:
            errors.append(f"{where}.depends[{j}]: task {shown_id(task.id)} depends on itself")
        elif dependency not in task_ids:
            errors.append(
                f"{where}.depends[{j}]: task {shown_id(task.id)} depends on unknown task "
                f"{shown_id(dependency)}: declare that task in $.tasks or remove the dependency"
            )
    if task.agent not in roster:
        errors.append(
            f"{where}.agent: agent {shown_id(task.agent, AGENT_NAME_PATTERN)} of task "
            f"{shown_id(task.id)} is not declared in $.agents (file specs never remap agents)"
        )
    else:
        reason = agents.unavailable_reason(task.agent)
        if reason is not None:
            errors.append(
                f"{where}.agent: agent {shown_id(task.agent, AGENT_NAME_PATTERN)} of task "
                f"{shown_id(task.id)} has no enabled definition: {reason}"
            )
    for j, ref in enumerate(task.artifact_refs):
        if ref not in artifact_ids:
            errors.append(
                f"{where}.artifactRefs[{j}]: task {shown_id(task.id)} references unknown "
                f"artifact {shown_id(ref, ARTIFACT_ID_PATTERN)}"
            )
    return errors


def plan_warnings(spec: SquadSpec) -> list[str]:
    warnings: list[str] = []
    if len(spec.tasks) > MANY_TASKS_WARNING_THRESHOLD:
        warnings.append(
            f"the plan has {len(spec.tasks)} tasks; more than {MANY_TASKS_WARNING_THRESHOLD} "
            "is hard to review: consider merging tasks"
        )
    if len(spec.tasks) >= 3 and not any(
        _QA_LIKE.search(f"{t.id} {t.title} {t.agent}") for t in spec.tasks
    ):
        warnings.append("no task looks like QA, testing, verification, review or audit")
    for task in spec.tasks:
        if not task.description.strip():
            warnings.append(f"task {shown_id(task.id)} has an empty description")
        elif not _VERIFY_WORD.search(task.description):
            warnings.append(
                f"task {shown_id(task.id)}'s description names no way to verify the work "
                "(a test, check or command to run)"
            )
    return warnings
