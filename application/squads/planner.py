"""Planning an inline squad that came without tasks: one planner child, one plan, validated.

Only the legacy inline form ever plans; a file squad never does (contract §2).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import attrs

from application.child.session import ChildSession
from application.ports import ChildRuntime, Clock, NewSession, TempDirs
from application.spawn_request import child_request
from domain.agents import AgentCatalog
from domain.errors import ErrorCode, SpecError
from domain.strict_json import JsonDecodeFailure, decode_json

_FENCED_JSON = re.compile(r"```(?:json)?\s*\n(.*?)\n```", re.S)

DEFAULT_PLANNER_PROMPT = (
    "You plan software work for a squad of agents. Reply with one fenced json block: "
    '{"tasks": [{"id", "title", "description", "agent", "depends": []}], "agents": {}}. '
    "Use short lowercase ids, only the agents listed, a QA or review task at the end, and "
    "descriptions that say how to verify the work."
)


class PlannerFailed(SpecError):
    """The planner child did not produce a usable plan."""


def extract_plan(text: str) -> dict[str, Any]:
    """The first fenced JSON block, else the first ``{...}`` object, decoded strictly."""
    candidates = [m.group(1) for m in _FENCED_JSON.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = decode_json(candidate.encode("utf-8"))
        except JsonDecodeFailure:
            continue
        if isinstance(value, dict):
            return value
    raise SpecError(
        ErrorCode.PLAN_INVALID, "Failed to plan: the planner's reply holds no JSON plan"
    )


@attrs.frozen
class PlannerSettings:
    timeout_seconds: float = 600.0
    model: str | None = None
    thinking: str | None = None


def run_planner(
    runtime: ChildRuntime,
    *,
    goal: str,
    catalog: AgentCatalog,
    cwd: str,
    clock: Clock,
    temp_dirs: TempDirs,
    settings: PlannerSettings = PlannerSettings(),
) -> dict[str, Any]:
    """Spawn the planner agent once and return its decoded plan (not yet validated).

    The planner's session lives in a temporary directory, gone when planning ends."""
    planner = catalog.get("planner")
    prompt_text = (
        getattr(getattr(planner, "definition", None), "prompt", "") or DEFAULT_PLANNER_PROMPT
    )
    agents = ", ".join(
        f"{a.name} ({a.definition.role})" for a in catalog.enabled() if a.name != "planner"
    )
    session = ChildSession(runtime, clock)
    with temp_dirs.temporary_dir("pi-squad-planner-") as session_dir:
        request = child_request(
            owner="planner",
            task_id="planner",
            cwd=cwd,
            session=NewSession(session_dir),
            system_prompt=prompt_text,
            first_prompt=(
                f"Plan this goal for a squad.\n\nGoal:\n{goal}\n\nAvailable agents: {agents}"
            ),
            model=settings.model,
            thinking=settings.thinking,
        )
        session.start(request)
        try:
            stop = session.wait(session.deadline(settings.timeout_seconds))
        finally:
            session.kill()
    if stop is not None:
        raise PlannerFailed(ErrorCode.PLAN_INVALID, "Failed to plan: the planner timed out")
    if session.settled is None:
        code = session.exited.exit_code if session.exited is not None else None
        raise PlannerFailed(
            ErrorCode.PLAN_INVALID, f"Failed to plan: the planner exited (code {code})"
        )
    said = session.last_words()
    if said is None:
        raise PlannerFailed(ErrorCode.PLAN_INVALID, "Failed to plan: the planner said nothing")
    return extract_plan(said)


def plan_tasks(plan: dict[str, Any]) -> Sequence[dict[str, Any]]:
    tasks = plan.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise SpecError(ErrorCode.PLAN_INVALID, "Failed to plan: the plan has no tasks")
    return tasks
