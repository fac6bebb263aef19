"""Writes the flow call schemas (``domain/spec/schemas/flow-*-v1.schema.json``).

The common top-level fields are one definition here, repeated in every mode's closed schema;
``tests/unit/domain/test_flow_schemas.py`` checks the committed files equal this output, so a
field changed by hand in one mode's file is caught. Run: ``uv run python scripts/flow_schemas.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parents[1] / "domain" / "spec" / "schemas"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
NAME = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
THINKING = ["off", "minimal", "low", "medium", "high", "xhigh", "max"]
MAX_PARALLEL_TASKS = 8
MAX_CHAIN_STEPS = 8
MAX_GRAPH_NODES = 16
# warn < quarantine < fail (domain/flows/handoff_policy.py); the modes a minimum may name: the
# spawning modes built and the pi-flows ones not built yet (a minimum for them is kept).
HANDOFF_POLICIES = ["warn", "quarantine", "fail"]
HANDOFF_MODES = [
    "single",
    "parallel",
    "chain",
    "graph",
    "evaluate",
    "vote",
    "route",
    "orchestrate",
    "loop",
    "search",
    "workflow",
    "worktree",
    "debate",
    "dossier",
    "monitor",
]

TEXT = {"type": "string", "minLength": 1, "maxLength": 65536}
ROLE_FIELDS: dict[str, Any] = {
    "cwd": {"type": "string", "minLength": 1, "maxLength": 4096},
    "model": {"type": "string", "pattern": "^\\S{1,200}$"},
    "tier": {"enum": ["fast", "capable", "deep"]},
    "thinking": {"enum": THINKING},
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
# Delegation contracts (docs/flows.md, "Contracts and return envelopes"): pi-flows' fields, all
# required, closed; the list and length caps are pi-squad's (nothing unbounded reaches a prompt).
NONBLANK = {"type": "string", "pattern": "\\S", "maxLength": 4096}
NONBLANK_LIST = {"type": "array", "maxItems": 64, "items": NONBLANK}
LIMIT = {"type": "number", "minimum": 0}
CONTRACT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "objective",
        "constraints",
        "nonGoals",
        "dependencies",
        "authority",
        "sideEffectClass",
        "budget",
        "acceptanceChecks",
        "returnSchema",
        "owner",
    ],
    "properties": {
        "objective": {"type": "string", "pattern": "\\S", "maxLength": 65536},
        "constraints": NONBLANK_LIST,
        "nonGoals": NONBLANK_LIST,
        "dependencies": NONBLANK_LIST,
        "authority": {
            "type": "object",
            "additionalProperties": False,
            "required": ["may", "mustNot", "requiresApproval"],
            "properties": {
                "may": NONBLANK_LIST,
                "mustNot": NONBLANK_LIST,
                "requiresApproval": NONBLANK_LIST,
            },
        },
        "sideEffectClass": {"enum": ["none", "read-only", "reversible", "irreversible"]},
        "budget": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "timeoutMs": LIMIT,
                "maxCostUsd": LIMIT,
                "maxTokens": LIMIT,
                "maxGeneratedTokens": LIMIT,
            },
        },
        "acceptanceChecks": NONBLANK_LIST,
        "returnSchema": {"type": "object"},
        "owner": {"type": "string", "pattern": "\\S", "maxLength": 200},
    },
}
RETURN_FIELDS: dict[str, Any] = {
    "returnContract": {"type": "string", "maxLength": 16384},
    "requireEvidence": {"type": "boolean"},
    "contract": {"$ref": "flow-contract-v1.schema.json"},
}
SHA256_ID = "^sha256:[a-fA-F0-9]{64}$"
# What a contracted child returns (the last fenced json block of its final message). Closed:
# ``usage`` is attached by the parent, never taken from the child.
RETURN_ENVELOPE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    # ``contractId`` is checked apart: missing or stale is RETURN_CONTRACT_MISMATCH.
    "required": [
        "schemaVersion",
        "status",
        "summary",
        "evidence",
        "artifactReferences",
        "digests",
        "changedState",
        "unresolvedQuestions",
        "retry",
        "data",
    ],
    "properties": {
        "schemaVersion": {"const": "pi-flows.return-envelope.v1"},
        "contractId": {"type": "string", "pattern": SHA256_ID},
        "status": {"enum": ["completed", "partial", "blocked", "failed"]},
        "summary": {"type": "string", "pattern": "\\S", "maxLength": 65536},
        "evidence": {
            "type": "array",
            "maxItems": 256,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["claim", "source"],
                "properties": {"claim": NONBLANK, "source": NONBLANK},
            },
        },
        "artifactReferences": {
            "type": "array",
            "maxItems": 64,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["path"],
                "properties": {"path": NONBLANK},
            },
        },
        "digests": {
            "type": "array",
            "maxItems": 64,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["artifact", "algorithm", "value"],
                "properties": {
                    "artifact": NONBLANK,
                    "algorithm": {"const": "sha256"},
                    "value": {"type": "string", "pattern": "^[a-fA-F0-9]{64}$"},
                },
            },
        },
        "changedState": NONBLANK_LIST,
        "unresolvedQuestions": NONBLANK_LIST,
        "retry": {
            "type": "object",
            "additionalProperties": False,
            "required": ["retryable"],
            "properties": {
                "retryable": {"type": "boolean"},
                "reason": NONBLANK,
                "afterMs": {"type": "number", "minimum": 0},
            },
        },
        "data": {},
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
    "agentScope": {"enum": ["user", "project", "all"]},
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


def document(name: str, title: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": DRAFT,
        "$id": f"https://pi-squad.local/schemas/{name}.schema.json",
        "title": title,
        **body,
    }


def mode(name: str, title: str, own: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return document(
        name,
        title,
        {
            "type": "object",
            "additionalProperties": False,
            "required": required,
            "properties": {**own, **COMMON},
        },
    )


def schemas() -> dict[str, dict[str, Any]]:
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
        "flow-contract-v1": document(
            "flow-contract-v1", "flow delegation contract (all fields required)", CONTRACT
        ),
        "flow-return-envelope-v1": document(
            "flow-return-envelope-v1",
            "pi-flows.return-envelope.v1: a contracted child's return",
            RETURN_ENVELOPE,
        ),
        "flow-tools-v1": document(
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
        "flow-task-v1": document(
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
        "flow-list-v1": mode("flow-list-v1", "flow list", {"list": {"const": True}}, ["list"]),
        "flow-show-config-v1": mode(
            "flow-show-config-v1",
            "flow showConfig",
            {"showConfig": {"const": True}},
            ["showConfig"],
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
                        }
                    },
                },
                "spec": SPEC,
            },
            ["task", "graph", "why"],
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
    for name in (
        "flow-list-v1",
        "flow-show-config-v1",
        "flow-single-v1",
        "flow-parallel-v1",
        "flow-chain-v1",
        "flow-graph-v1",
    ):
        for key, value in modes[name]["properties"].items():
            properties.setdefault(key, value)
    return document(
        "flow-tool-v1",
        "flow tool input: exactly one mode's fields (list, showConfig, single, parallel, chain, "
        "graph) or a preset",
        {"type": "object", "additionalProperties": False, "properties": properties},
    )


def rendered(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2) + "\n"


def all_schemas() -> dict[str, dict[str, Any]]:
    found = schemas()
    return {**found, "flow-tool-v1": tool_schema(found)}


def main() -> None:
    for name, body in all_schemas().items():
        (SCHEMAS / f"{name}.schema.json").write_text(rendered(body), encoding="utf-8")


if __name__ == "__main__":
    main()
