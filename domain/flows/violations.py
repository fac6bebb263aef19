"""Schema violations of a flow call as catalogue problems: code, path, measured, allowed.

The code follows the field (pi-flows' admission codes): ``why`` is ``WHY_REQUIRED``,
``concurrency`` ``INVALID_CONCURRENCY``, ``agentScope`` ``INVALID_SCOPE``, too many ``tasks``
``TOO_MANY_TASKS`` (and too many dossier sections; too few is ``DOSSIER_TOO_FEW_SECTIONS``),
anything under a ``contract`` ``INVALID_DELEGATION_CONTRACT``, anything else under ``graph``
``GRAPH_INVALID``, under ``monitor`` ``MONITOR_INVALID``, the rest ``FLOW_INVALID``.
Problems are ranked by that admission order, then by path, so the reported code is stable.
Measured values are numbers, counts, JSON type names or key names, never free text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from domain.errors import ErrorCode
from domain.flows.errors import Problem
from domain.names import AGENT_NAME
from domain.spec.schema import describe, json_path
from domain.strict_json import json_type_name

if TYPE_CHECKING:
    from jsonschema import ValidationError

RANK: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_MODE,
    ErrorCode.WHY_REQUIRED,
    ErrorCode.INVALID_CONCURRENCY,
    ErrorCode.INVALID_SCOPE,
    ErrorCode.TOO_MANY_TASKS,
    ErrorCode.GRAPH_INVALID,
    ErrorCode.GRAPH_CYCLE,
    ErrorCode.TOO_FEW_VOTERS,
    ErrorCode.DEBATE_TOO_FEW_PARTICIPANTS,
    ErrorCode.DOSSIER_TOO_FEW_SECTIONS,
    ErrorCode.MONITOR_INVALID,
    ErrorCode.WORKFLOW_INVALID,
    ErrorCode.INVALID_DELEGATION_CONTRACT,
    ErrorCode.FLOW_INVALID,
)
_SHOWABLE = re.compile(rf"^{AGENT_NAME}$")
TOOLS_ALLOWED = "none, default, comma-separated tool names, or a list of tool names"
# A vote's voters are given one way: what each broken rule of that shape says, and measures.
_VOTE_SHAPES = {
    "anyOf": ("names no voter", "neither voters nor agent"),
    "not": ("names its voters twice", "both voters and agent"),
    "dependentRequired": ("sets count without an agent to ask", "count without agent"),
}
# A panel of agents (vote, debate) out of its 2..8 bounds, by path and schema keyword.
_PANEL_BOUNDS: dict[tuple[tuple[str | int, ...], str], ErrorCode] = {
    (("vote", "voters"), "minItems"): ErrorCode.TOO_FEW_VOTERS,
    (("vote", "count"), "minimum"): ErrorCode.TOO_FEW_VOTERS,
    # Neither voters nor an agent to ask: no voter at all.
    (("vote",), "anyOf"): ErrorCode.TOO_FEW_VOTERS,
    (("vote", "voters"), "maxItems"): ErrorCode.TOO_MANY_TASKS,
    (("vote", "count"), "maximum"): ErrorCode.TOO_MANY_TASKS,
    (("debate", "participants"), "required"): ErrorCode.DEBATE_TOO_FEW_PARTICIPANTS,
    (("debate", "participants"), "minItems"): ErrorCode.DEBATE_TOO_FEW_PARTICIPANTS,
    (("debate", "participants"), "maxItems"): ErrorCode.TOO_MANY_TASKS,
}


def _code(path: list[str | int], keyword: str) -> ErrorCode:
    head = path[0] if path else None
    if head == "why":
        return ErrorCode.WHY_REQUIRED
    if head == "concurrency":
        return ErrorCode.INVALID_CONCURRENCY
    if head == "agentScope":
        return ErrorCode.INVALID_SCOPE
    fan_outs = (["tasks"], ["dossier", "sections"], ["worktree", "tasks"])
    if path in fan_outs and keyword == "maxItems":
        return ErrorCode.TOO_MANY_TASKS
    if path == ["dossier", "sections"] and keyword == "minItems":
        return ErrorCode.DOSSIER_TOO_FEW_SECTIONS
    if (tuple(path), keyword) in _PANEL_BOUNDS:
        return _PANEL_BOUNDS[tuple(path), keyword]
    if "contract" in path[:4]:
        # ``contract``, ``tasks[i].contract``, ``chain[i].contract``, ``graph.nodes[i].contract``
        # and anything below them: a malformed delegation contract, whatever the mode.
        return ErrorCode.INVALID_DELEGATION_CONTRACT
    if head == "graph":
        return ErrorCode.GRAPH_INVALID
    if head == "monitor":
        return ErrorCode.MONITOR_INVALID
    if head == "workflow":
        return ErrorCode.WORKFLOW_INVALID
    return ErrorCode.FLOW_INVALID


def _shown(value: Any) -> Any:
    """A value a message may carry: numbers and booleans as they are, a name-shaped string
    as it is, anything else as its JSON type."""
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, str) and _SHOWABLE.match(value):
        return value
    return json_type_name(value)


def _measure(error: ValidationError) -> tuple[Any, Any]:
    keyword = str(error.validator)
    value: Any = error.validator_value
    instance = error.instance
    schema = error.schema if isinstance(error.schema, dict) else {}
    if keyword in {"minimum", "maximum"}:
        return instance, {"minimum": schema.get("minimum"), "maximum": schema.get("maximum")}
    if keyword in {"minItems", "maxItems"} and isinstance(instance, list):
        return len(instance), {keyword: value}
    if keyword == "type":
        return json_type_name(instance), value
    if keyword == "enum":
        return _shown(instance), list(value)
    if keyword == "const":
        return _shown(instance), value
    if keyword == "pattern" and isinstance(instance, str):
        return f"a string of {len(instance)} characters", value
    if keyword in {"minLength", "maxLength"} and isinstance(instance, str):
        return len(instance), {keyword: value}
    if keyword == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(schema.get("properties", {}))
        return len(set(instance) - set(allowed)), allowed
    if keyword == "oneOf":
        return json_type_name(instance), TOOLS_ALLOWED
    return None, None


def _problems(error: ValidationError) -> Iterable[Problem]:
    path = list(error.absolute_path)
    keyword = str(error.validator)
    if keyword == "required" and isinstance(error.instance, dict):
        # One problem per missing key: a missing ``why`` is WHY_REQUIRED, not FLOW_INVALID.
        required: Any = error.validator_value
        for key in required:
            if key not in error.instance:
                code = _code([*path, key], keyword)
                where = json_path([*path, key])
                yield Problem(
                    code, where, f"missing required property '{key}'", "absent", "required"
                )
        return
    measured, allowed = _measure(error)
    message = describe(error).partition(": ")[2]
    if path == ["vote"] and keyword in _VOTE_SHAPES:
        message, measured = _VOTE_SHAPES[keyword]
        allowed = "vote.voters (2..8 agent references) or vote.agent with vote.count (2..8)"
    yield Problem(_code(path, keyword), json_path(path), message, measured, allowed)


def problems_of(errors: Iterable[ValidationError]) -> tuple[Problem, ...]:
    found = {(p.code, p.path, p.message): p for error in errors for p in _problems(error)}
    return tuple(sorted(found.values(), key=lambda p: (RANK.index(p.code), p.path, p.message)))
