"""The closed schemas of the modes that refine an answer by critique or score: ``evaluate`` and
``search`` (docs/flows.md, "Modes"). Part of ``scripts/flow_schemas.py``'s output."""

from __future__ import annotations

from typing import Any

from domain.flows.call import MAX_PARALLEL_TASKS
from scripts.flow_schemas import TEXT, agent_ref, mode

MAX_EVALUATE_ITERATIONS = 8
MAX_SEARCH_ROUNDS = 4
# A check command is one shell line, bounded as a task text is.
CHECK_COMMAND = {"type": "string", "pattern": "\\S", "maxLength": 4096}


def bounded(maximum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": maximum}


def refining_modes() -> dict[str, dict[str, Any]]:
    critics = {
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_PARALLEL_TASKS,
        "items": agent_ref(),
    }
    return {
        "flow-evaluate-v1": mode(
            "flow-evaluate-v1",
            "flow evaluate",
            {
                "task": TEXT,
                "evaluate": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "operator": agent_ref(task=True),
                        # One critic, or a panel judging in parallel.
                        "redteam": {"oneOf": [agent_ref(), critics]},
                        "checkCommand": CHECK_COMMAND,
                        "maxIterations": bounded(MAX_EVALUATE_ITERATIONS),
                        "passContract": TEXT,
                    },
                },
            },
            ["task", "evaluate", "why"],
        ),
        "flow-search-v1": mode(
            "flow-search-v1",
            "flow search",
            {
                "task": TEXT,
                "search": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "generator": agent_ref(task=True),
                        "scorer": agent_ref(),
                        "debrief": agent_ref(),
                        "candidates": bounded(MAX_PARALLEL_TASKS),
                        "beamWidth": bounded(MAX_PARALLEL_TASKS),
                        "maxRounds": bounded(MAX_SEARCH_ROUNDS),
                    },
                },
            },
            ["task", "search", "why"],
        ),
    }
