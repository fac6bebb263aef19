"""The closed schema of ``workflow`` (docs/flows.md, "workflow"): named phases, each work or an
approval, and the schema of the state file a workflow writes after every phase. Part of
``scripts/flow_schemas.py``'s output."""

from __future__ import annotations

from typing import Any

from domain.flows.workflow_fields import APPROVAL_TTL_MS, MAX_PHASES
from domain.flows.workflow_state import STATE_SCHEMA, STATE_VERSION, PhaseStatus
from domain.names import schema_file
from scripts.flow_contract_schemas import RETURN_FIELDS
from scripts.flow_schemas import NAME, ROLE_FIELDS, TEXT, agent_ref, mode

# A phase id names its run (``phase-<id>``), a key of the state file and ``{phase.<id>}``.
PHASE_ID = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
# A ``.json`` name: a state file only ever replaces a JSON file, never a profile or config a
# mistaken or injected path would name.
STATE_FILE = {"type": "string", "pattern": "^[^\\x00]{1,4090}\\.json$"}
TIME = {"type": "integer", "minimum": 0}
TEXT_OR_NULL = {"type": ["string", "null"]}


def workflow_modes() -> dict[str, dict[str, Any]]:
    # Exactly one of work (agent + task) or approval per phase is checked after the schema
    # (``domain.flows.workflow_fields.check_workflow``): a combinator here would be refused by
    # some providers' tool schemas. Anything wrong under workflow is WORKFLOW_INVALID.
    phase = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id"],
        "properties": {
            "id": {"type": "string", "pattern": PHASE_ID},
            "agent": {"type": "string", "pattern": NAME},
            "task": TEXT,
            "approval": {
                "type": "object",
                "additionalProperties": False,
                "required": ["message"],
                "properties": {"message": {"type": "string", "pattern": "\\S", "maxLength": 2000}},
            },
            "checkCommand": {"type": "string", "pattern": "\\S", "maxLength": 4096},
            **ROLE_FIELDS,
            **RETURN_FIELDS,
        },
    }
    workflow = {
        "type": "object",
        "additionalProperties": False,
        "required": ["phases"],
        "properties": {
            "phases": {"type": "array", "minItems": 1, "maxItems": MAX_PHASES, "items": phase},
            "stateFile": STATE_FILE,
            "resume": {"type": "boolean"},
            "approvalTtlMs": {
                "type": "integer",
                "minimum": APPROVAL_TTL_MS[0],
                "maximum": APPROVAL_TTL_MS[1],
            },
            "debrief": agent_ref(),
        },
    }
    return {
        "flow-workflow-v1": mode(
            "flow-workflow-v1",
            "flow workflow",
            {"task": TEXT, "workflow": workflow},
            ["task", "workflow", "why"],
        ),
        STATE_SCHEMA: state_schema(),
    }


def state_schema() -> dict[str, Any]:
    """The state file: closed, except each receipt (checked on its own, so a malformed one is
    ``APPROVAL_RECEIPT_INVALID`` rather than an unusable state)."""
    record = {
        "type": "object",
        "additionalProperties": False,
        "required": ["status", "at"],
        "properties": {
            "status": {"enum": [str(status) for status in PhaseStatus]},
            "at": TIME,
            "agent": {"type": "string"},
            "output": {"type": "string"},
            "envelope": {"type": "string"},
            "attestation": {"type": "object"},
            "error": {"type": "string"},
        },
    }
    return schema_file(
        STATE_SCHEMA,
        "flow workflow state file",
        {
            "type": "object",
            "additionalProperties": False,
            "required": [
                "schemaVersion",
                "workflowDigest",
                "updatedAt",
                "completedAt",
                "phases",
                "receipts",
            ],
            "properties": {
                "schemaVersion": {"const": STATE_VERSION},
                "workflowDigest": {"type": "string", "pattern": "^sha256:[a-f0-9]{64}$"},
                "updatedAt": TIME,
                "completedAt": {"type": ["integer", "null"], "minimum": 0},
                "phases": {
                    "type": "object",
                    "propertyNames": {"pattern": PHASE_ID},
                    "additionalProperties": record,
                },
                "receipts": {
                    "type": "object",
                    "propertyNames": {"pattern": PHASE_ID},
                    "additionalProperties": {"type": "object"},
                },
            },
        },
    )
