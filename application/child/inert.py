"""The role of a process pi-squad has nothing to guard in: a legacy child, or a process with
nothing to register for its role. Kept in a module of its own so that the roles built on it
(``application.child.readonly_bash``, the bridge's inert main role) and
``application.child.closed``, which chooses among them, import it without importing each
other."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from application.ports import ALLOW, Registrations, ToolDecision, ToolFailure, ToolResult


class InertRole:
    """A legacy child or a process with nothing to register for this role."""

    def registrations(self) -> Registrations:
        return Registrations()

    def session_start(self) -> None:
        return None

    def before_agent_start(self) -> str | None:
        return None

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision:
        return ALLOW

    def execute_tool(self, tool_call_id: str, tool_name: str, params: object) -> ToolResult:
        raise ToolFailure(f"tool {tool_name!r} is not provided by pi-squad")

    def message_end(self, message: Mapping[str, Any]) -> None:
        return None

    def context(self) -> None:
        return None
