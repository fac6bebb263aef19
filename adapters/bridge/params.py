"""Reading a request's ``params`` (``docs/bridge.md``): each required or optional field checked
for its type and bounds, a malformed one answered ``invalid_params`` naming it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.bridge.protocol import ProtocolError, ResponseErrorCode
from application.ports import SessionChange, SessionIdentity


def answers(params: Mapping[str, Any]) -> dict[str, str] | None:
    """``params.answers`` of a ``command`` request: the person's answers by question key, or
    ``None`` when absent (the command as typed)."""
    given = params.get("answers")
    if given is None:
        return None
    if not isinstance(given, Mapping) or not all(isinstance(v, str) for v in given.values()):
        raise ProtocolError(
            ResponseErrorCode.INVALID_PARAMS, "params.answers must be an object of strings"
        )
    return {str(key): value for key, value in given.items()}


def require_str(params: Mapping[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise ProtocolError(ResponseErrorCode.INVALID_PARAMS, f"params.{key} must be a string")
    return value


def tool_request(params: Mapping[str, Any], value_key: str) -> tuple[str, str, object]:
    """A tool request's ``toolCallId``, ``toolName`` and its required ``value_key``."""
    return (
        require_str(params, "toolCallId"),
        require_str(params, "toolName"),
        require_present(params, value_key),
    )


def require_bool(params: Mapping[str, Any], key: str) -> bool:
    value = params.get(key)
    if not isinstance(value, bool):
        raise ProtocolError(ResponseErrorCode.INVALID_PARAMS, f"params.{key} must be a boolean")
    return value


def require_present(params: Mapping[str, Any], key: str) -> object:
    if key not in params:
        raise ProtocolError(ResponseErrorCode.INVALID_PARAMS, f"params.{key} is required")
    return params[key]


def require_object(params: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = params.get(key)
    if not isinstance(value, dict):
        raise ProtocolError(ResponseErrorCode.INVALID_PARAMS, f"params.{key} must be an object")
    return value


def session_identity(params: Mapping[str, Any]) -> SessionIdentity:
    """``session_start``'s optional ``sessionFile`` and ``sessionId`` (absent or ``null``: not
    known; an older shim sends ``{}``)."""
    values: dict[str, str | None] = {}
    for key in ("sessionFile", "sessionId"):
        value = params.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ProtocolError(
                ResponseErrorCode.INVALID_PARAMS, f"params.{key} must be a non-empty string"
            )
        values[key] = value
    return SessionIdentity(session_file=values["sessionFile"], session_id=values["sessionId"])


# Pi's own words are short identifiers; anything longer is not one of its reasons.
_MAX_DETAIL = 64


def session_change(params: Mapping[str, Any], *, event: str | None = None) -> SessionChange:
    """``navigation``'s ``event`` (or the given one: ``session_shutdown``) with Pi's optional
    ``reason`` and ``position`` (absent or ``null``: not given; an older shim sends ``{}``)."""
    name = require_str(params, "event") if event is None else event
    details: dict[str, str | None] = {}
    for key in ("reason", "position"):
        value = params.get(key)
        if value is not None and (not isinstance(value, str) or not 0 < len(value) <= _MAX_DETAIL):
            raise ProtocolError(
                ResponseErrorCode.INVALID_PARAMS,
                f"params.{key} must be a string of 1 to {_MAX_DETAIL} characters",
            )
        details[key] = value
    return SessionChange(event=name, reason=details["reason"], position=details["position"])
