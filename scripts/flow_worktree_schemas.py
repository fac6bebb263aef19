"""The closed schema of ``worktree`` (docs/flows.md, "worktree"): writers in their own git
worktrees, one integration branch. Part of ``scripts/flow_schemas.py``'s output."""

from __future__ import annotations

from typing import Any

from domain.flows.call import MAX_PARALLEL_TASKS
from scripts.flow_schemas import NAME, RETURN_FIELDS, ROLE_FIELDS, TEXT, agent_ref, mode

# A writer's id is a branch name part (``pi-flow/<run>/<id>``) and a directory name.
TASK_ID = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
# A commit-ish git resolves; never one starting with ``-`` (git would read an option).
BASE_REF = "^[^\\s-][^\\s]{0,255}$"
CHECK_TIMEOUT_MS = {"type": "integer", "minimum": 1000, "maximum": 86_400_000}
# Each writer works in its own worktree, the integrator in the integration one: no ``cwd``.
PLACED_ROLE_FIELDS = {key: value for key, value in ROLE_FIELDS.items() if key != "cwd"}


def worktree_modes() -> dict[str, dict[str, Any]]:
    # 2..8 writers: more is TOO_MANY_TASKS (``domain.flows.violations``), fewer FLOW_INVALID.
    writer = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "agent", "task"],
        "properties": {
            "id": {"type": "string", "pattern": TASK_ID},
            "agent": {"type": "string", "pattern": NAME},
            "task": TEXT,
            **PLACED_ROLE_FIELDS,
            **RETURN_FIELDS,
        },
    }
    integrator = agent_ref()
    integrator["properties"] = {
        key: value for key, value in integrator["properties"].items() if key != "cwd"
    }
    worktree = {
        "type": "object",
        "additionalProperties": False,
        "required": ["tasks"],
        "properties": {
            "tasks": {
                "type": "array",
                "minItems": 2,
                "maxItems": MAX_PARALLEL_TASKS,
                "items": writer,
            },
            "baseRef": {"type": "string", "pattern": BASE_REF},
            "integrator": integrator,
            "checkCommand": {"type": "string", "pattern": "\\S", "maxLength": 4096},
            "checkTimeoutMs": CHECK_TIMEOUT_MS,
            "requireClean": {"type": "boolean"},
        },
    }
    return {
        "flow-worktree-v1": mode(
            "flow-worktree-v1",
            "flow worktree",
            {"task": TEXT, "worktree": worktree},
            ["task", "worktree", "why"],
        ),
    }
