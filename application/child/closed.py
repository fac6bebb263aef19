"""The child roles with nothing to read: a spec child that failed closed, and an inert one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from application.ports import ALLOW, Registrations, ToolDecision, ToolFailure, ToolResult
from domain.child_environment import (
    DelegationWorkerChild,
    FailedClosedChild,
    LegacyChild,
    MainProcess,
    ReadOnlyBashChild,
)

if TYPE_CHECKING:
    from application.child.readonly_bash import ReadOnlyBashRole


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


def closed_role_for(
    role: LegacyChild | ReadOnlyBashChild | FailedClosedChild | MainProcess | DelegationWorkerChild,
) -> FailedClosedRole | InertRole | ReadOnlyBashRole:
    """The role of a process that has no spec to read: kept apart from the spec child's role
    (``application.child.role``) so that a legacy child's bridge does not import the ledger and
    attestation model it never uses (its start-up is paid per task)."""
    if isinstance(role, FailedClosedChild):
        return FailedClosedRole(role)
    if isinstance(role, DelegationWorkerChild):
        # A worker's broker needs the host's store: built by the bridge's root. Reached
        # without one, nothing is allowed.
        return FailedClosedRole(FailedClosedChild("a delegation worker without its broker"))
    if isinstance(role, ReadOnlyBashChild):
        # Imported here: only a bash-ro child pays for the screen's import.
        from application.child.readonly_bash import ReadOnlyBashRole  # noqa: PLC0415

        return ReadOnlyBashRole()
    return InertRole()
