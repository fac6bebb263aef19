"""The five tools a main Pi registers (``squad``, ``squad_status``, ``squad_modify``,
``squad_review``, ``squad_message``): names, labels, descriptions, and the schema files their
inputs are validated against."""

from __future__ import annotations

from typing import Any

from application.ports import ToolSpec
from application.tool_calls import TOOL_SCHEMAS
from domain.spec.documents import tool_parameters


def squad_tool_schema() -> dict[str, Any]:
    """Contract §2's schema. Providers that need a top-level ``type: object`` get it; the
    accepted set is unchanged because both branches are objects."""
    return tool_parameters(TOOL_SCHEMAS["squad"])


_DESCRIPTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "squad",
        "Start a squad",
        "Start a squad of Pi agents. Either {specFile, specSha256} for a hash-pinned spec "
        "file (preferred for large contracts), or {goal, agents?, tasks?, config?} inline.",
    ),
    ("squad_status", "Squad status", "Show a squad's progress."),
    (
        "squad_modify",
        "Modify a squad",
        "add_task, set_dependencies, cancel_task, pause_task, resume_task, complete_task, "
        "pause, resume, or cancel (cancel needs the exact squadId).",
    ),
    (
        "squad_review",
        "Review a squad",
        "Record the orchestrator's review verdict of a squad awaiting review, with evidence.",
    ),
    (
        "squad_message",
        "Message a squad agent",
        "Send a message to one task's agent (by taskId, or agent name if exactly one live).",
    ),
)


def squad_tools() -> tuple[ToolSpec, ...]:
    """Each tool's ``parameters`` is its schema file (``application.tool_calls.TOOL_SCHEMAS``),
    the same document ``execute_tool`` validates the input against."""
    return tuple(
        ToolSpec(name, label, description, tool_parameters(TOOL_SCHEMAS[name]))
        for name, label, description in _DESCRIPTIONS
    )
