"""The child roles with nothing to read: a spec child that failed closed, an inert one
(``application.child.inert``) and a bash-ro child's screen (``application.child.readonly_bash``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from application.child.inert import InertRole
from application.ports import Registrations, ToolDecision, ToolFailure, ToolResult
from domain.child_environment import (
    DelegationWorkerChild,
    FailedClosedChild,
    LegacyChild,
    MainProcess,
    ReadOnlyBashChild,
)

# Re-exported: the closed roles' callers name the inert one from here too.
__all__ = ["FailedClosedRole", "InertRole", "closed_role_for"]


class FailedClosedRole:
    """Spec variables present but unusable: block everything, register no reader."""

    def __init__(self, failure: FailedClosedChild) -> None:
        self._reason = failure.reason

    @property
    def block_reason(self) -> str:
        return f"pi-squad file-spec child failed closed ({self._reason}); every tool is blocked."

    def registrations(self) -> Registrations:
        return Registrations(guard=True, bootstrap=True)

    def session_start(self) -> None:
        return None

    def before_agent_start(self) -> str | None:
        return (
            f"File-spec bootstrap failed closed: {self._reason}. Every tool is blocked; stop and "
            "report this to the orchestrator."
        )

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision:
        return ToolDecision(block=True, reason=self.block_reason)

    def execute_tool(self, tool_call_id: str, tool_name: str, params: object) -> ToolResult:
        raise ToolFailure(self.block_reason)

    def message_end(self, message: Mapping[str, Any]) -> None:
        return None

    def context(self) -> None:
        return None


def closed_role_for(
    role: LegacyChild | ReadOnlyBashChild | FailedClosedChild | MainProcess | DelegationWorkerChild,
) -> FailedClosedRole | InertRole:
    """The role of a process that has no spec to read: kept apart from the spec child's role
    (``application.child.role``) so that a legacy child's bridge does not import the ledger and
    attestation model it never uses (its start-up is paid per task)."""
    if isinstance(role, FailedClosedChild):
        return FailedClosedRole(role)
    if isinstance(role, DelegationWorkerChild):
        # A worker's role is its broker over the host's store, which the bridge's role
        # factory gives it (``entrypoints/roles.py``); a caller without that store, e.g.
        # ``child_role_for``, gets a role that allows nothing.
        return FailedClosedRole(FailedClosedChild("a delegation worker without its broker"))
    if isinstance(role, ReadOnlyBashChild):
        # Imported here: only a bash-ro child pays for the screen's import.
        from application.child.readonly_bash import ReadOnlyBashRole  # noqa: PLC0415

        return ReadOnlyBashRole()
    return InertRole()
