"""The Python side of a flow ``bash-ro`` child's Pi extension: the read-only bash screen.

Registered as the shim's ``tool_call`` guard. Every ``bash`` call is screened by
``domain.flows.bash_readonly.screen`` and blocked with its reason unless it is a read-only
command line; other tools pass (the child's ``--tools`` already limits them). It fails closed:
an input that is not ``{"command": str}`` or any failure while screening blocks the call, and
the shim blocks when the bridge does not answer. The bridge runs in a process the parent
started with ``PI_SQUAD_BASH_READONLY=1``, so nothing the child's commands do to their own
environment turns it off.
"""

from __future__ import annotations

from collections.abc import Mapping

from application.child.inert import InertRole
from application.ports import ALLOW, Registrations, ToolDecision
from domain.flows.bash_readonly import screen

BASH_TOOL = "bash"
FAILED_CLOSED_REASON = "bash-ro: blocked: the read-only screen could not judge this call"


class ReadOnlyBashRole(InertRole):
    """``PiEvents`` of a ``bash-ro`` flow child: a guard, and otherwise a legacy child's."""

    def registrations(self) -> Registrations:
        return Registrations(guard=True)

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision:
        if tool_name != BASH_TOOL:
            return ALLOW
        try:
            command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
            verdict = screen(command)
        except Exception:
            return ToolDecision(block=True, reason=FAILED_CLOSED_REASON)
        return ALLOW if verdict.admitted else ToolDecision(block=True, reason=verdict.reason)
