"""The orchestrate tests' goal, plan and scripted answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from domain.errors import ErrorCode
from domain.flows.mode_parts import FlowOutcome
from domain.flows.runs import ChildJob, RunResult, RunStatus
from domain.usage import Usage

GOAL = "Map the billing service."
PLAN = [
    {"id": "schema", "objective": "Map the database schema", "effortWeight": 2},
    {"id": "api", "objective": "Map the HTTP API", "scope": ["api/"]},
    {"id": "flows", "objective": "Trace the invoice flow", "dependsOn": ["schema", "api"]},
]


def orchestrate(**fields: Any) -> dict[str, Any]:
    return {"task": GOAL, "orchestrate": fields}


def plan(subtasks: object = PLAN) -> str:
    return json.dumps(subtasks)


def spending(text: str, output_tokens: int) -> Callable[[ChildJob], RunResult]:
    """A run that answers ``text`` having generated ``output_tokens``."""

    def answer(job: ChildJob) -> RunResult:
        usage = Usage(output_tokens=output_tokens, turns=1)
        return RunResult(job.key, job.role.agent, RunStatus.COMPLETED, text, usage=usage)

    return answer


def refusal(outcome: FlowOutcome) -> tuple[str, ErrorCode | None]:
    last = outcome.results[-1]
    return last.key, last.error_code
