"""The closed schema of ``orchestrate`` (docs/flows.md, "Modes"). Part of
``scripts/flow_schemas.py``'s output."""

from __future__ import annotations

from typing import Any

from domain.flows.orchestrate_fields import MAX_ORCHESTRATE_ITERATIONS, MAX_SUBTASKS, VerifyPolicy
from scripts.flow_schemas import TEXT, agent_ref, mode

ITERATIONS = {"type": "integer", "minimum": 1, "maximum": MAX_ORCHESTRATE_ITERATIONS}
REQUIREMENTS = {"type": "string", "maxLength": 8192}


def orchestrate_modes() -> dict[str, dict[str, Any]]:
    # The goal is the call's task or orchestrate.task: ``Orchestrate.roles`` refuses neither.
    orchestrate = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "task": TEXT,
            "commander": agent_ref(),
            "review": agent_ref(),
            "reviewMaxIterations": ITERATIONS,
            "reviewCriteria": {"type": "string", "pattern": "\\S", "maxLength": 8192},
            "recon": agent_ref(),
            "debrief": agent_ref(),
            "verify": agent_ref(),
            "verifyPolicy": {"enum": [str(policy) for policy in VerifyPolicy]},
            "verifyMaxIterations": ITERATIONS,
            "workerReturnContract": REQUIREMENTS,
            "returnContract": REQUIREMENTS,
            "maxSubtasks": {"type": "integer", "minimum": 1, "maximum": MAX_SUBTASKS},
        },
    }
    return {
        "flow-orchestrate-v1": mode(
            "flow-orchestrate-v1",
            "flow orchestrate",
            {"task": TEXT, "orchestrate": orchestrate},
            ["orchestrate", "why"],
        ),
    }
