"""The main role's ``delegate`` tool (seed §2): one discriminated union, the same JSON the
``pi-squad delegate`` command takes; the answer is the operation's outcome as compact JSON.

Part 1 offers the function and its ToolSpec; the main role registers the tool only when it is
given a host (``MainRole._delegation``), which part 2 does once workers run on real Pi.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from application.delegation.host import DelegationHost
from application.ports import ToolFailure, ToolSpec
from domain.delegation.errors import DelegationError
from domain.delegation.outcome_lines import Keys, outcome_lines
from domain.spec.documents import tool_parameters

DELEGATE_TOOL = "delegate"
DELEGATE_TOOL_SCHEMA = "delegate-tool-v1"
# The transcript entry a call leaves for the person (``pi.appendEntry``, never sent to the
# model): its ``data.lines`` drawn by the shim's entry renderer.
DELEGATE_ENTRY_TYPE = "pi-squad-delegate"
ENTRY_VERSION = 1
_DESCRIPTION = (
    "Delegate bounded evidence work to fresh workers under the human's grant. One request, "
    "version 1, op one of: capture {paths|excerpts} (get source IDs), run {objective, "
    "requirements, jobs, limits}, status {batchId?}, collect {batchId, afterCursor?, waitMs<=30000}"
    ", follow_up and resolve (bind batchId, jobId, attemptId, packetDigest, resultRevision, "
    "taskGeneration; idempotencyKey), cancel {batchId, jobId?}. Host IDs, generations, digests, "
    "routes and sources are never yours to set. Collect just before you need the evidence; a "
    "result is a claim for you to adjudicate, not proof."
)


def delegate_tool_spec() -> ToolSpec:
    return ToolSpec(DELEGATE_TOOL, "Delegate", _DESCRIPTION, tool_parameters(DELEGATE_TOOL_SCHEMA))


def delegate_tool(host: DelegationHost, params: Mapping[str, Any]) -> str:
    """One ``delegate`` call; a refusal is a tool failure naming its stable code."""
    try:
        outcome = host.handle(dict(params))
    except DelegationError as error:
        raise ToolFailure(f"{error.code}: {error.message}") from None
    return json.dumps(outcome, ensure_ascii=False, separators=(",", ":"))


def delegate_entry(outcome: Mapping[str, Any], keys: Keys | None = None) -> dict[str, Any]:
    """A call's durable transcript entry (``ToolResult.details["entry"]``): the outcome in
    lines for a person (``domain.delegation.outcome_lines``); the model's JSON is untouched."""
    data = {"v": ENTRY_VERSION, "op": outcome["op"], "lines": outcome_lines(outcome, keys)}
    return {"customType": DELEGATE_ENTRY_TYPE, "data": data}
