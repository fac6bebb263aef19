"""``sessionModels``: what the main session's shim attaches to the requests of a tool or
command registered with ``session_models`` (``docs/bridge.md``), parsed into the role's value.

Kept out of ``protocol``: only the main role's requests carry it, and a child's bridge, which
imports ``protocol`` at every start, never loads the flow model values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from application.ports import SessionControl
from domain.flows.models import AvailableModels, SessionModels, parse_available
from domain.names import THINKING_LEVELS

SESSION_REGISTRY = "this session's model registry"


def session_models(params: Mapping[str, Any]) -> SessionModels | None:
    """``execute_tool``'s / ``command``'s optional ``sessionModels``: ``{"model": {"provider",
    "id"} | null, "thinking": str | null, "available": [model, ...] | null, "error"?: str}``
    (``available`` null: the shim could not read its registry, ``error`` says why). ``None``
    when absent or not an object: the request is served as without it, since a session model
    the shim could not describe must never fail the user's call. A malformed entry of
    ``available`` is skipped, and counted in the roster's issues."""
    raw = params.get("sessionModels")
    if not isinstance(raw, dict):
        return None
    current = raw.get("model")
    provider = _name(current.get("provider")) if isinstance(current, dict) else None
    model_id = _name(current.get("id")) if isinstance(current, dict) else None
    named = provider is not None and model_id is not None
    thinking = raw.get("thinking")
    entries = raw.get("available")
    if isinstance(entries, list):
        models, skipped = parse_available(entries)
        warning = f"{skipped} malformed model entries skipped" if skipped else None
        available = AvailableModels(models, SESSION_REGISTRY, warning=warning)
    else:
        error = raw.get("error")
        problem = error[:200] if isinstance(error, str) and error else "the session sent none"
        available = AvailableModels((), SESSION_REGISTRY, problem=problem)
    return SessionModels(
        model=f"{provider}/{model_id}" if named else None,
        provider=provider if named else None,
        thinking=thinking if isinstance(thinking, str) and thinking in THINKING_LEVELS else None,
        available=available,
    )


def _name(value: object) -> str | None:
    return value if isinstance(value, str) and value and not value.isspace() else None


def tell(control: SessionControl, params: Mapping[str, Any], log: Callable[[str], None]) -> None:
    """The session's models the shim attached, told to the role before the request is served;
    a malformed attachment is logged and the request served as without it."""
    models = session_models(params)
    if models is None:
        log("ignored a sessionModels that is not an object")
        return
    control.session_models(models)
