"""``planned_runs`` names every run a mode may dispatch, by the key its result carries: an
attested flow publishes one task record per planned run before the first spawn, so a key the
strategy dispatches but the plan missed would be a child with no record to prove its reads."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from domain.flows.call import parse_call
from domain.flows.handoff import HandoffGuard
from domain.flows.mode_parts import ModeInputs
from domain.flows.modes import planned_runs
from domain.flows.runs import ChildJob, RunResult, RunStatus
from domain.flows.strategies import STRATEGIES

WHY = "independent verification"
CALLS = {
    "single": {"agent": "researcher", "task": "t", "why": WHY},
    "parallel": {
        "tasks": [{"agent": "researcher", "task": "a"}, {"agent": "reviewer", "task": "b"}],
        "why": WHY,
    },
    "chain": {
        "task": "t",
        "chain": [{"agent": "researcher", "task": "a"}, {"agent": "reviewer", "task": "b"}],
        "why": WHY,
    },
    "graph": {
        "task": "t",
        "graph": {
            "nodes": [
                {"id": "Scan_1", "agent": "researcher", "task": "a"},
                {"id": "b", "agent": "reviewer", "task": "b", "dependsOn": ["Scan_1"]},
                {"id": "c", "agent": "reviewer", "task": "c"},
            ]
        },
        "why": WHY,
    },
}


@pytest.mark.parametrize("mode", sorted(CALLS))
def test_the_plan_is_exactly_what_the_strategy_dispatches(mode: str) -> None:
    call = parse_call(CALLS[mode])
    dispatched: list[tuple[str, str]] = []

    def dispatch(jobs: Sequence[ChildJob]) -> tuple[RunResult, ...]:
        dispatched.extend((job.key, job.role.agent) for job in jobs)
        return tuple(RunResult(job.key, job.role.agent, RunStatus.COMPLETED, "ok") for job in jobs)

    outcome = STRATEGIES[call.mode](call, dispatch, HandoffGuard.for_call(call), ModeInputs())
    planned = [(key, role.agent) for key, role in planned_runs(call)]
    assert sorted(dispatched) == sorted(planned)
    assert [result.key for result in outcome.results] == [key for key, _ in planned]


def test_modes_that_spawn_nothing_plan_nothing() -> None:
    assert planned_runs(parse_call({"list": True})) == ()
