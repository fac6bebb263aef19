"""What every spawning mode is made of: the settled flow (``FlowOutcome``), how a role's job
is told its prompt and contract (``job``), the one-pass placeholder rendering and its fenced
inputs, and the results of runs that never spawned."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Protocol

import attrs

from domain.errors import ErrorCode
from domain.flows.call import FlowCall, Mode
from domain.flows.call_roles import FlowTask
from domain.flows.contracts import Contract, contracted_task, return_requirements
from domain.flows.handoff import Delivery, HandoffGuard
from domain.flows.handoff_record import HandoffRecord, summary
from domain.flows.runs import ChildJob, Dispatch, RunResult, RunStatus
from domain.flows.workflow_state import WorkflowHost


class FlowStatus(enum.StrEnum):
    COMPLETED = "completed"
    # Some runs succeeded, some did not (parallel, graph).
    PARTIAL = "partial"
    FAILED = "failed"
    # Stopped by the caller (Ctrl+C): the results are the runs that settled before it.
    CANCELLED = "cancelled"


@attrs.frozen
class Decision:
    """A control token that steered the flow (``domain.flows.control``): which run's answer
    (``unit``), what it said (``value``) and where that was read from (``source``); the trace
    records each as a ``name`` event (``loop.judge_verdict``, ``route.decision``)."""

    name: str
    unit: str
    value: str
    source: str


@attrs.frozen
class CheckOutcome:
    """A deterministic check a mode ran (``evaluate``'s ``checkCommand``, ``monitor``'s probe):
    its exit status (``None`` when it could not start or was stopped at its bound), its output
    capped at 16 KiB (``cut`` when capped), and why it did not finish when it did not."""

    exit_code: int | None
    output: str = ""
    cut: bool = False
    timed_out: bool = False
    # Set when the command could not start at all (``CHECK_COMMAND_FAILED``).
    start_error: str | None = None

    @property
    def passed(self) -> bool:
        return self.exit_code == 0


class CheckRun(Protocol):
    """Runs ``command`` through the shell in ``cwd``, stopped after ``timeout_ms``."""

    def __call__(self, command: str, cwd: str, timeout_ms: int) -> CheckOutcome: ...


class WorktreeRun(Protocol):
    """Runs a ``worktree`` flow on the host's git (``application.flows.worktree_flow``): the
    branches and worktrees are the host's, the dispatch and the guard the flow's."""

    def __call__(
        self, call: FlowCall, dispatch: Dispatch, guard: HandoffGuard, inputs: ModeInputs
    ) -> FlowOutcome: ...


class Pause(Protocol):
    """Waits ``ms`` between two of a mode's probes; ``False`` when the flow was cancelled
    meanwhile (the wait ends at once then, and the mode probes no more)."""

    def __call__(self, ms: int) -> bool: ...


@attrs.frozen
class ModeInputs:
    """What a strategy may use beyond the dispatch seam and the handoff guard: each agent's
    description by name (what a router is told of its candidates), and the runner of a mode's
    deterministic checks (``None`` where the caller gives none: a mode that needs one refuses).
    ``cwd``: the flow's working directory (the call's ``cwd`` resolved), where a check runs
    unless its role has its own. ``pause``: the wait between probes, given by the caller so a
    strategy stays pure and a test passes time without sleeping (``None``: a mode that needs
    one refuses)."""

    briefs: Mapping[str, str] = attrs.field(factory=dict)
    check: CheckRun | None = None
    cwd: str = "."
    pause: Pause | None = None
    # ``worktree``'s git host (``None``: the mode refuses).
    worktrees: WorktreeRun | None = None
    # ``workflow``'s state file, clock and person (``None``: the mode refuses).
    workflow: WorkflowHost | None = None


@attrs.frozen
class FlowOutcome:
    """The settled flow: every run in the order the mode defines, the flow's status, the text
    the caller reads (``output``: the last step, the single run, or each task's section)."""

    mode: Mode
    status: FlowStatus
    results: tuple[RunResult, ...]
    summary: str
    # What the handoff policy did at each boundary between agents, in the order they crossed.
    handoffs: tuple[HandoffRecord, ...] = ()
    # The control tokens that steered a judging mode, in the order they were read.
    decisions: tuple[Decision, ...] = ()


def settled(
    mode: Mode,
    status: FlowStatus,
    text: str,
    *,
    results: list[RunResult],
    records: list[HandoffRecord],
    decisions: list[Decision],
) -> FlowOutcome:
    """The flow's outcome: ``text`` with the handoff policy's summary appended."""
    handoffs = tuple(records)
    return FlowOutcome(
        mode, status, tuple(results), text + summary(handoffs), handoffs, tuple(decisions)
    )


def delegated(
    call: FlowCall, role: FlowTask, prompt: str, *, fallback: bool = True
) -> tuple[str, Contract | None]:
    """``prompt`` as the role is told it, and the contract its run answers to: the role's own
    contract, else (``fallback``: every built mode but graph) the call's; the role's return
    requirements, else the call's, appended (docs/flows.md, "Contracts and return
    envelopes")."""
    contract = role.contract or (call.contract if fallback else None)
    text = role.return_contract if role.return_contract is not None else call.return_contract
    evidence = role.require_evidence
    if evidence is None:
        evidence = bool(call.require_evidence)
    if contract is None:
        return return_requirements(prompt, text, evidence), None
    return contracted_task(prompt, contract, text, evidence), contract


def role_job(
    call: FlowCall,
    key: str,
    role: FlowTask,
    prompt: str,
    *,
    stage: str,
    depends_on: tuple[str, ...] = (),
    fallback: bool = True,
    handoffs: tuple[HandoffRecord, ...] = (),
    consumed: bool = False,
) -> ChildJob:
    told, contract = delegated(call, role, prompt, fallback=fallback)
    return ChildJob(
        key,
        role,
        told,
        stage=stage,
        depends_on=depends_on,
        contract=contract,
        handoffs=handoffs,
        consumed=consumed,
    )


def render(template: str, values: Mapping[str, str]) -> tuple[str, frozenset[str]]:
    """``template`` with each ``{name}`` of ``values`` replaced, in one pass (a value's own
    text is never re-scanned for placeholders); also the names that were used."""
    used: set[str] = set()
    out: list[str] = []
    index = 0
    while index < len(template):
        start = template.find("{", index)
        if start < 0:
            out.append(template[index:])
            break
        end = template.find("}", start)
        name = template[start + 1 : end] if end > start else None
        if name is not None and name in values:
            out.append(template[index:start])
            out.append(values[name])
            used.add(name)
            index = end + 1
        else:
            out.append(template[index : start + 1])
            index = start + 1
    return "".join(out), frozenset(used)


def with_inputs(prompt: str, blocks: Mapping[str, str], used: frozenset[str]) -> str:
    """Each input block the template did not place itself, appended: a step always sees its
    inputs, and always as fenced data."""
    missing = [block for name, block in blocks.items() if name not in used]
    return "\n\n".join([prompt, *missing]) if missing else prompt


def skip(key: str, role: FlowTask, reason: str) -> RunResult:
    return RunResult(key, role.agent, RunStatus.SKIPPED, error=reason)


def refused_recipient(key: str, role: FlowTask, delivery: Delivery) -> RunResult:
    """The recipient of a handoff the ``fail`` policy stopped: failed, never spawned."""
    return RunResult(
        key,
        role.agent,
        RunStatus.FAILED,
        error_code=ErrorCode.HANDOFF_POLICY_VIOLATION,
        error=delivery.reason,
    )
