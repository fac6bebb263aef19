"""The delegation contract and the return envelope of the flow schemas
(``flow-contract-v1``, ``flow-return-envelope-v1``) and the fields a call or a role names them
by; ``scripts/flow_schemas.py`` writes them with the rest."""

from __future__ import annotations

from typing import Any

from domain.flows.contracts import RETURN_ENVELOPE_VERSION

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
        "schemaVersion": {"const": RETURN_ENVELOPE_VERSION},
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
