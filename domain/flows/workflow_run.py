"""One workflow run's moving parts (``domain.flows.workflow``): the state as last written, what
the run has produced, and how it stops. Pure: the host does every read, write and question."""

from __future__ import annotations

import attrs

from domain.errors import ErrorCode
from domain.flows.call import FlowCall
from domain.flows.handoff import HandoffGuard, PreparedHandoff
from domain.flows.handoff_record import HandoffRecord
from domain.flows.mode_parts import Decision, ModeInputs
from domain.flows.runs import Dispatch, RunResult, RunStatus
from domain.flows.workflow_fields import Workflow
from domain.flows.workflow_state import StateInvalid, WorkflowHost, WorkflowState


def phase_key(phase_id: str) -> str:
    return f"phase-{phase_id}"


def gate_key(phase_id: str) -> str:
    return f"gate-{phase_id}"


class WorkflowStop(Exception):
    """The workflow stops at ``result`` (a failed run or an unspawned refusal)."""

    def __init__(self, result: RunResult, text: str) -> None:
        super().__init__(text)
        self.result = result
        self.text = text


@attrs.define
class Trail:
    """What a run has produced so far, in order."""

    results: list[RunResult] = attrs.field(factory=list)
    records: list[HandoffRecord] = attrs.field(factory=list)
    decisions: list[Decision] = attrs.field(factory=list)


@attrs.define(kw_only=True)
class WorkflowRun(Trail):
    """One workflow run's moving parts: the state as last written, and what it has produced."""

    call: FlowCall
    workflow: Workflow
    dispatch: Dispatch
    guard: HandoffGuard
    inputs: ModeInputs
    host: WorkflowHost
    path: str
    state: WorkflowState
    # Each completed work phase's handoff, prepared once, by phase id (in phase order).
    handed: dict[str, PreparedHandoff] = attrs.field(factory=dict)
    # The approval phase whose receipt the next work phase spends.
    unspent: str | None = None

    def save(self, state: WorkflowState) -> None:
        try:
            self.host.save(self.path, state.encode())
        except StateInvalid as exc:
            raise WorkflowStop(
                unspawned("workflow", "", ErrorCode.WORKFLOW_STATE_INVALID, exc.reason),
                (f"Flow workflow: the state file {self.path} could not be written."),
            ) from None
        self.state = state


def unspawned(key: str, agent: str, code: ErrorCode, reason: str, output: str = "") -> RunResult:
    return RunResult(key, agent, RunStatus.FAILED, output or None, error_code=code, error=reason)
