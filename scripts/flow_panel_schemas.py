"""The closed schemas of the modes that put one question to several agents: ``vote`` and
``debate`` (docs/flows.md, "Modes"). Part of ``scripts/flow_schemas.py``'s output."""

from __future__ import annotations

from typing import Any

from domain.flows.call import MAX_PARALLEL_TASKS
from scripts.flow_schemas import NAME, TEXT, agent_ref, mode

MAX_DEBATE_ROUNDS = 3


def panel_modes() -> dict[str, dict[str, Any]]:
    # 2..8 agents: fewer is TOO_FEW_VOTERS / DEBATE_TOO_FEW_PARTICIPANTS, more TOO_MANY_TASKS
    # (``domain.flows.violations``).
    agents = {"type": "array", "minItems": 2, "maxItems": MAX_PARALLEL_TASKS, "items": agent_ref()}
    vote = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "voters": agents,
            "agent": {"type": "string", "pattern": NAME},
            "count": {"type": "integer", "minimum": 2, "maximum": MAX_PARALLEL_TASKS},
            "debrief": agent_ref(),
        },
        # Explicit voters, or one agent asked ``count`` times: one of the two.
        "anyOf": [{"required": ["voters"]}, {"required": ["agent"]}],
        "not": {"required": ["voters", "agent"]},
        "dependentRequired": {"count": ["agent"]},
    }
    debate = {
        "type": "object",
        "additionalProperties": False,
        "required": ["participants"],
        "properties": {
            "participants": agents,
            "adjudicator": agent_ref(),
            "rounds": {"type": "integer", "minimum": 1, "maximum": MAX_DEBATE_ROUNDS},
        },
    }
    return {
        "flow-vote-v1": mode(
            "flow-vote-v1", "flow vote", {"task": TEXT, "vote": vote}, ["task", "vote", "why"]
        ),
        "flow-debate-v1": mode(
            "flow-debate-v1",
            "flow debate",
            {"task": TEXT, "debate": debate},
            ["task", "debate", "why"],
        ),
    }
