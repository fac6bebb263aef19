"""The closed schemas of the modes that gather before one agent reconciles: ``dossier`` and
``monitor`` (docs/flows.md, "Modes"). Part of ``scripts/flow_schemas.py``'s output."""

from __future__ import annotations

from typing import Any

from domain.flows.call import MAX_PARALLEL_TASKS
from domain.flows.mode_fields import Trigger
from scripts.flow_schemas import TEXT, agent_ref, mode

# monitor's bounds (flows-brief §2): the wait between probes, how many, each probe's bound.
MONITOR_INTERVAL_MS = (10, 60_000)
MONITOR_CHECKS = (1, 20)
CHECK_TIMEOUT_MS = (1000, 86_400_000)


def _between(bounds: tuple[int, int]) -> dict[str, Any]:
    return {"type": "integer", "minimum": bounds[0], "maximum": bounds[1]}


def watching_modes() -> dict[str, dict[str, Any]]:
    # 2..8 sections: fewer is DOSSIER_TOO_FEW_SECTIONS, more TOO_MANY_TASKS; anything else
    # wrong under monitor is MONITOR_INVALID (``domain.flows.violations``).
    dossier = {
        "type": "object",
        "additionalProperties": False,
        "required": ["sections"],
        "properties": {
            "sections": {
                "type": "array",
                "minItems": 2,
                "maxItems": MAX_PARALLEL_TASKS,
                "items": {"$ref": "flow-task-v1.schema.json"},
            },
            "debrief": agent_ref(),
        },
    }
    monitor = {
        "type": "object",
        "additionalProperties": False,
        "required": ["command"],
        "properties": {
            "command": {"type": "string", "pattern": "\\S", "maxLength": 4096},
            "trigger": {"enum": [str(trigger) for trigger in Trigger]},
            # A Python regular expression, compiled at parse time (``MONITOR_INVALID`` when it
            # does not; docs/flows.md says how it differs from JavaScript's).
            "pattern": {"type": "string", "minLength": 1, "maxLength": 1000},
            "intervalMs": _between(MONITOR_INTERVAL_MS),
            "maxChecks": _between(MONITOR_CHECKS),
            "checkTimeoutMs": _between(CHECK_TIMEOUT_MS),
            "reactor": agent_ref(),
        },
    }
    return {
        "flow-dossier-v1": mode(
            "flow-dossier-v1",
            "flow dossier",
            {"task": TEXT, "dossier": dossier},
            ["task", "dossier", "why"],
        ),
        "flow-monitor-v1": mode(
            "flow-monitor-v1",
            "flow monitor",
            {"task": TEXT, "monitor": monitor},
            ["task", "monitor", "why"],
        ),
    }
