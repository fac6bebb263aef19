"""``workflow``'s fields as values (named phases, each a piece of work or a person's approval),
the rules its schema cannot say, and the workflow digest every state file and approval receipt
is bound to. Pure: nothing here reads, writes or waits."""

from __future__ import annotations

import re
from typing import Any

import attrs

from domain.errors import ErrorCode
from domain.flows.call_roles import AgentRef, FlowTask, RoleSettings
from domain.flows.canonical import canonical_sha256
from domain.flows.errors import FlowError, Problem

MAX_PHASES = 12
DEFAULT_APPROVAL_TTL_MS = 86_400_000
APPROVAL_TTL_MS = (60_000, 2_592_000_000)
# Where a workflow's state lives unless the call names ``stateFile`` (relative to its cwd).
STATE_DIR = ".pi/flow-workflows"
_PHASE_PLACEHOLDER = re.compile(r"\{phase\.([^{}]*)\}")


@attrs.frozen
class Approval:
    """A phase a person approves: ``message`` is the question they are shown."""

    message: str


@attrs.frozen
class Phase(RoleSettings):
    """One named phase: work (``agent`` + ``task``, optionally gated by ``check_command``) or
    an ``approval``; exactly one of the two (``check_workflow``)."""

    id: str
    agent: str | None = None
    task: str | None = None
    approval: Approval | None = None
    check_command: str | None = None

    def as_task(self) -> FlowTask:
        """The work phase's role, as a chain step holds it."""
        assert self.agent is not None
        assert self.task is not None
        settings = {field.name: getattr(self, field.name) for field in attrs.fields(RoleSettings)}
        return FlowTask(self.agent, self.task, **settings)


@attrs.frozen
class Workflow:
    """``workflow``: 1..12 phases run in order; the state file written after each one; with
    ``resume`` a run continues from the last completed phase; a granted approval is a receipt
    valid ``approval_ttl_ms``; ``debrief`` (if any) synthesises the work phases at the end."""

    phases: tuple[Phase, ...]
    state_file: str | None = None
    resume: bool = False
    approval_ttl_ms: int = DEFAULT_APPROVAL_TTL_MS
    debrief: AgentRef | None = None

    def roles(self, goal: str) -> list[tuple[str, FlowTask]]:
        """Every role the workflow may spawn, with the JSON path of its definition."""
        work = [
            (f"$.workflow.phases[{i}]", phase.as_task())
            for i, phase in enumerate(self.phases)
            if phase.approval is None
        ]
        debrief = (
            [] if self.debrief is None else [("$.workflow.debrief", self.debrief.as_task(goal))]
        )
        return [*work, *debrief]


def _invalid(path: str, message: str, measured: object, allowed: object) -> Problem:
    return Problem(ErrorCode.WORKFLOW_INVALID, path, message, measured, allowed)


def check_workflow(workflow: Workflow | None) -> None:
    """What the closed schema cannot say, as ``WORKFLOW_INVALID``: each phase is exactly one
    of work (``agent`` and ``task``) or ``approval``; an approval phase carries no
    ``checkCommand``; ids are unique; ``{phase.<id>}`` names an earlier work phase."""
    if workflow is None:
        return
    problems: list[Problem] = []
    earlier: set[str] = set()
    seen: set[str] = set()
    for index, phase in enumerate(workflow.phases):
        path = f"$.workflow.phases[{index}]"
        work = phase.agent is not None or phase.task is not None
        if phase.id in seen:
            problems.append(
                _invalid(f"{path}.id", "names a phase id twice", phase.id, "unique phase ids")
            )
        seen.add(phase.id)
        if work == (phase.approval is not None) or (work and None in (phase.agent, phase.task)):
            problems.append(
                _invalid(
                    path,
                    "a phase is exactly one of work (agent and task) or approval (message)",
                    sorted(k for k in ("agent", "task", "approval") if _has(phase, k)),
                    "agent and task, or approval",
                )
            )
        elif phase.approval is not None and phase.check_command is not None:
            problems.append(
                _invalid(
                    f"{path}.checkCommand",
                    "a check command gates work; an approval phase has none",
                    "checkCommand",
                    "absent",
                )
            )
        for name in _PHASE_PLACEHOLDER.findall(phase.task or ""):
            if name not in earlier:
                problems.append(
                    _invalid(
                        f"{path}.task",
                        "{phase.<id>} names a phase that is not an earlier work phase",
                        name if re.fullmatch(r"[A-Za-z0-9._-]{1,64}", name) else "a string",
                        sorted(earlier),
                    )
                )
        if phase.approval is None:
            earlier.add(phase.id)
    if problems:
        raise FlowError(tuple(problems))


def _has(phase: Phase, key: str) -> bool:
    return getattr(phase, key) is not None


def phase_document(phase: Phase) -> dict[str, Any]:
    """A phase as JSON data: what the workflow digest and an approval receipt hash."""
    return {
        "id": phase.id,
        "agent": phase.agent,
        "task": phase.task,
        "approval": None if phase.approval is None else phase.approval.message,
        "checkCommand": phase.check_command,
        **_settings(phase),
    }


def _settings(role: RoleSettings) -> dict[str, Any]:
    tools = role.tools
    return {
        "cwd": role.cwd,
        "model": role.model,
        "tier": role.tier,
        "thinking": role.thinking,
        "tools": None if tools is None else (None if tools.names is None else list(tools.names)),
        "toolsDefault": tools is not None and tools.names is None,
        "returnContract": role.return_contract,
        "requireEvidence": role.require_evidence,
        "contract": None if role.contract is None else role.contract.contract_id,
    }


def workflow_digest(task: str, workflow: Workflow) -> str:
    """The canonical ``sha256:`` identity of the workflow: its task, phases and debrief. The
    state file records it; a call whose digest differs is another workflow."""
    debrief = workflow.debrief
    return canonical_sha256(
        {
            "task": task,
            "phases": [phase_document(phase) for phase in workflow.phases],
            "debrief": None if debrief is None else {"agent": debrief.agent, **_settings(debrief)},
        }
    )


def default_state_file(digest: str) -> str:
    """``.pi/flow-workflows/<digest>.json``: one state file per workflow, in the call's cwd."""
    return f"{STATE_DIR}/{digest.removeprefix('sha256:')[:32]}.json"


def gated_phases(workflow: Workflow, approval_index: int) -> tuple[Phase, ...]:
    """The phases an approval gates: those after it, up to the next approval."""
    gated: list[Phase] = []
    for phase in workflow.phases[approval_index + 1 :]:
        if phase.approval is not None:
            break
        gated.append(phase)
    return tuple(gated)
