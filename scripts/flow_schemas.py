"""Writes the flow call schemas (``domain/spec/schemas/flow-*-v1.schema.json``).

The common top-level fields are one definition here, repeated in every mode's closed schema;
``tests/unit/domain/test_schema_scripts.py`` checks the committed files equal this output, so a
field changed by hand in one mode's file is caught. Run: ``uv run python scripts/flow_schemas.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from domain.flows.call import MAX_PARALLEL_TASKS, SCHEMAS, UNBUILT_MODES, Mode  # noqa: E402
from domain.flows.handoff_policy import HandoffPolicy  # noqa: E402
from domain.flows.mode_fields import MAX_LOOP_ITERATIONS  # noqa: E402
from domain.flows.roles import SCOPES  # noqa: E402
from domain.flows.wrappers import MAX_ENTRIES, CheckpointPoint  # noqa: E402
from domain.names import (  # noqa: E402
    AGENT_NAME,
    THINKING_LEVELS,
    TIERS,
    schema_file,
    schema_text,
)
from scripts.flow_contract_schemas import CONTRACT, RETURN_ENVELOPE, RETURN_FIELDS  # noqa: E402

SCHEMA_DIR = REPO / "domain" / "spec" / "schemas"
NAME = f"^{AGENT_NAME}$"
MAX_CHAIN_STEPS = 8
MAX_GRAPH_NODES = 16
# warn < quarantine < fail; the modes a minimum may name: the spawning modes built and the
# pi-flows ones not built yet (a minimum for them is kept).
HANDOFF_POLICIES = [str(policy) for policy in HandoffPolicy]
HANDOFF_MODES = [str(mode) for mode in Mode if mode.spawns] + list(UNBUILT_MODES)

TEXT = {"type": "string", "minLength": 1, "maxLength": 65536}
ROLE_FIELDS: dict[str, Any] = {
    "cwd": {"type": "string", "minLength": 1, "maxLength": 4096},
    "model": {"type": "string", "pattern": "^\\S{1,200}$"},
    "tier": {"enum": list(TIERS)},
    "thinking": {"enum": list(THINKING_LEVELS)},
    "tools": {"$ref": "flow-tools-v1.schema.json"},
}
# An attested flow's brief (spawning modes only): every child reads it in full first.
SPEC: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["specFile", "specSha256"],
    "properties": {
        "specFile": {"type": "string", "minLength": 1, "maxLength": 4096},
        "specSha256": {"type": "string", "pattern": "^[a-f0-9]{64}$"},
    },
}
# Trace export (docs/flows.md "Traces"): a user-chosen path, a label and eval linkage ids,
# each bounded here so nothing unbounded reaches a span.
TRACE_ID = {"type": "string", "minLength": 1, "maxLength": 200}
TRACE_FIELDS: dict[str, Any] = {
    # A ``.jsonl`` name: a trace only ever appends JSON lines, never to a shell profile or a
    # config file a mistaken or injected path would name.
    "traceFile": {"type": "string", "pattern": "^[^\\x00]{1,4090}\\.jsonl$"},
    "traceStrict": {"type": "boolean"},
    "traceLabel": {"type": "string", "pattern": "\\S", "maxLength": 200},
    "traceContext": {
        "type": "object",
        "additionalProperties": False,
        "required": ["runId", "caseId", "trialId"],
        "properties": {
            "runId": TRACE_ID,
            "caseId": TRACE_ID,
            "trialId": TRACE_ID,
            "trialIndex": {"type": "integer", "minimum": 0, "maximum": 1_000_000_000},
            "arm": TRACE_ID,
            "attempt": {"type": "integer", "minimum": 0, "maximum": 1_000_000_000},
        },
    },
}
# The flow budget (docs/flows.md "Budgets"): ceilings shared by every child of the call; the
# bounds only keep a number sane (a ceiling of 0 refuses the first child).
MAX_COST_USD = 1_000_000
MAX_TOKENS = 1_000_000_000_000
BUDGET_FIELDS: dict[str, Any] = {
    "maxCostUsd": {"type": "number", "minimum": 0, "maximum": MAX_COST_USD},
    "maxTokens": {"type": "integer", "minimum": 0, "maximum": MAX_TOKENS},
    "maxGeneratedTokens": {"type": "integer", "minimum": 0, "maximum": MAX_TOKENS},
}
COMMON: dict[str, Any] = {
    "why": {"type": "string", "pattern": "\\S", "maxLength": 2000},
    "agentScope": {"enum": list(SCOPES)},
    "confirmProjectAgents": {"type": "boolean"},
    "allowSharedWriteCwd": {"type": "boolean"},
    "concurrency": {"type": "integer", "minimum": 1, "maximum": MAX_PARALLEL_TASKS},
    "timeoutMs": {"type": "integer", "minimum": 1000, "maximum": 86_400_000},
    "recordContent": {"type": "boolean"},
    "redactSecrets": {"type": "boolean"},
    "handoffPolicy": {"enum": HANDOFF_POLICIES},
    "modeHandoffPolicy": {
        "type": "object",
        "additionalProperties": False,
        "properties": {name: {"enum": HANDOFF_POLICIES} for name in HANDOFF_MODES},
    },
    **ROLE_FIELDS,
    **TRACE_FIELDS,
    **RETURN_FIELDS,
    "incompleteHandoffPolicy": {"enum": ["fail", "include"]},
    **BUDGET_FIELDS,
}


# What wraps any spawning mode (docs/flows.md, "Checkpoint and reflexion"); list and showConfig
# spawn nothing and refuse them, as they refuse every field they would ignore.
WRAPPER_FIELDS: dict[str, Any] = {
    "checkpoint": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "before": {"enum": [str(point) for point in CheckpointPoint]},
            "message": {"type": "string", "pattern": "\\S", "maxLength": 2000},
        },
    },
    "reflexion": {
        "type": "object",
        "additionalProperties": False,
        "required": ["enabled"],
        "properties": {
            "enabled": {"type": "boolean"},
            # A ``.jsonl`` name, as ``traceFile``: lessons only ever go to a JSON-lines file.
            "file": {"type": "string", "pattern": "^[^\\x00]{1,4090}\\.jsonl$"},
            "maxEntries": {"type": "integer", "minimum": 1, "maximum": MAX_ENTRIES},
        },
    },
}


def mode(
    name: str, title: str, own: dict[str, Any], required: list[str], *, spawning: bool = True
) -> dict[str, Any]:
    return schema_file(
        name,
        title,
        {
            "type": "object",
            "additionalProperties": False,
            "required": required,
            "properties": {**own, **COMMON, **(WRAPPER_FIELDS if spawning else {})},
        },
    )


def schemas() -> dict[str, dict[str, Any]]:
    # Its own module builds on this one's parts (``mode``, ``agent_ref``).
    from scripts.flow_orchestrate_schemas import orchestrate_modes  # noqa: PLC0415 - a cycle
    from scripts.flow_panel_schemas import panel_modes  # noqa: PLC0415 - a cycle
    from scripts.flow_refining_schemas import refining_modes  # noqa: PLC0415 - a cycle
    from scripts.flow_watching_schemas import watching_modes  # noqa: PLC0415 - a cycle
    from scripts.flow_workflow_schemas import workflow_modes  # noqa: PLC0415 - a cycle
    from scripts.flow_worktree_schemas import worktree_modes  # noqa: PLC0415 - a cycle

    task = {"$ref": "flow-task-v1.schema.json"}
    node = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "agent", "task"],
        "properties": {
            "id": {"type": "string", "pattern": NAME},
            "agent": {"type": "string", "pattern": NAME},
            "task": TEXT,
            "dependsOn": {
                "type": "array",
                "maxItems": MAX_GRAPH_NODES,
                "uniqueItems": True,
                "items": {"type": "string", "pattern": NAME},
            },
            **ROLE_FIELDS,
            **RETURN_FIELDS,
        },
    }
    return {
        "flow-contract-v1": schema_file(
            "flow-contract-v1", "flow delegation contract (all fields required)", CONTRACT
        ),
        "flow-return-envelope-v1": schema_file(
            "flow-return-envelope-v1",
            "pi-flows.return-envelope.v1: a contracted child's return",
            RETURN_ENVELOPE,
        ),
        "flow-tools-v1": schema_file(
            "flow-tools-v1",
            "flow tools: none, default, comma-separated names, or a list of names",
            {
                "oneOf": [
                    {
                        "type": "string",
                        "pattern": "^ *[A-Za-z0-9_-]{1,64}( *, *[A-Za-z0-9_-]{1,64})* *$",
                    },
                    {
                        "type": "array",
                        "maxItems": 32,
                        "uniqueItems": True,
                        "items": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                    },
                ]
            },
        ),
        "flow-task-v1": schema_file(
            "flow-task-v1",
            "flow task (a parallel task or a chain step)",
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["agent", "task"],
                "properties": {
                    "agent": {"type": "string", "pattern": NAME},
                    "task": TEXT,
                    **ROLE_FIELDS,
                    **RETURN_FIELDS,
                },
            },
        ),
        "flow-list-v1": mode(
            "flow-list-v1", "flow list", {"list": {"const": True}}, ["list"], spawning=False
        ),
        "flow-show-config-v1": mode(
            "flow-show-config-v1",
            "flow showConfig",
            {"showConfig": {"const": True}},
            ["showConfig"],
            spawning=False,
        ),
        "flow-single-v1": mode(
            "flow-single-v1",
            "flow single",
            {"agent": {"type": "string", "pattern": NAME}, "task": TEXT, "spec": SPEC},
            # A contract may replace ``task`` (its objective is the goal): ``detect_mode``
            # refuses an agent with neither.
            ["agent", "why"],
        ),
        "flow-parallel-v1": mode(
            "flow-parallel-v1",
            "flow parallel",
            {
                "tasks": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_PARALLEL_TASKS,
                    "items": task,
                },
                "spec": SPEC,
            },
            ["tasks", "why"],
        ),
        "flow-chain-v1": mode(
            "flow-chain-v1",
            "flow chain",
            {
                "task": TEXT,
                "chain": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_CHAIN_STEPS,
                    "items": task,
                },
                "spec": SPEC,
            },
            ["task", "chain", "why"],
        ),
        "flow-graph-v1": mode(
            "flow-graph-v1",
            "flow graph",
            {
                "task": TEXT,
                "graph": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["nodes"],
                    "properties": {
                        "nodes": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": MAX_GRAPH_NODES,
                            "items": node,
                        },
                        # Synthesises the terminal nodes' outputs (docs/flows.md, graph).
                        "debrief": agent_ref(),
                    },
                },
                "spec": SPEC,
            },
            ["task", "graph", "why"],
        ),
        **judging_modes(),
        **refining_modes(),
        **panel_modes(),
        **watching_modes(),
        **orchestrate_modes(),
        **workflow_modes(),
        **worktree_modes(),
    }


def agent_ref(*, task: bool = False) -> dict[str, Any]:
    """A mode's role by reference (``{"agent": "controller"}``); with ``task``, it may carry its
    own task template (over ``{task}``)."""
    own: dict[str, Any] = {"agent": {"type": "string", "pattern": NAME}}
    if task:
        own["task"] = TEXT
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["agent"],
        "properties": {**own, **ROLE_FIELDS, **RETURN_FIELDS},
    }


def judging_modes() -> dict[str, dict[str, Any]]:
    """The modes that steer by a control token (docs/flows.md, "Control tokens")."""
    names = {"type": "string", "pattern": NAME}
    return {
        "flow-route-v1": mode(
            "flow-route-v1",
            "flow route",
            {
                "task": TEXT,
                "route": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["candidates"],
                    "properties": {
                        "controller": agent_ref(),
                        "candidates": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": MAX_PARALLEL_TASKS,
                            "uniqueItems": True,
                            "items": names,
                        },
                        "fallback": names,
                    },
                },
            },
            ["task", "route", "why"],
        ),
        "flow-loop-v1": mode(
            "flow-loop-v1",
            "flow loop",
            {
                "task": TEXT,
                "loop": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["body"],
                    "properties": {
                        "body": agent_ref(task=True),
                        "judge": agent_ref(task=True),
                        "maxIterations": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MAX_LOOP_ITERATIONS,
                        },
                    },
                },
            },
            ["task", "loop", "why"],
        ),
    }


def tool_schema(modes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The ``flow`` tool's advertised parameters: every mode's fields (and ``preset``) in one
    object a model can fill. A superset of each mode's schema; the call is then validated by
    its mode's own closed schema (``domain.flows.call.parse_call``)."""
    properties: dict[str, Any] = {
        "preset": {"type": "string", "pattern": NAME},
        "task": TEXT,
    }
    for name in SCHEMAS.values():
        for key, value in modes[name]["properties"].items():
            properties.setdefault(key, value)
    return schema_file(
        "flow-tool-v1",
        f"flow tool input: exactly one mode's fields ({', '.join(map(str, SCHEMAS))}) or a preset",
        {"type": "object", "additionalProperties": False, "properties": properties},
    )


def all_schemas() -> dict[str, dict[str, Any]]:
    found = schemas()
    return {**found, "flow-tool-v1": tool_schema(found)}


def main() -> None:
    for name, body in all_schemas().items():
        (SCHEMA_DIR / f"{name}.schema.json").write_text(schema_text(body), encoding="utf-8")


if __name__ == "__main__":
    main()
