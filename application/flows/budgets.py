"""A flow call's budgets while it runs: the one ledger every child of the flow is charged to.

The dispatcher (``application.flows.dispatch``) asks it before each spawn (a reached ceiling
refuses the child: ``BUDGET_EXCEEDED``), tells it each completed model response (charged to
every budget governing the child; a crossed live-stopping ceiling stops the child, a cost
ceiling without a reported cost stops it with ``BUDGET_UNOBSERVABLE``), and tells it when a
steered wrap-up notice is seen echoed into a child's session. The ceilings' own rules are
``domain.flows.budget``; this module keeps the shared spend, the live children, and steers.

Thread-safe: children's events arrive on their own threads. Steering happens outside the lock.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Mapping
from typing import Any

import attrs

from application.flows.contract_terms import ContractTerms, Terms
from application.flows.tracing import FlowTrace
from application.ports import AssistantText, ChildEvent, ChildHandle, SteerDelivered
from domain.errors import ErrorCode
from domain.flows.budget import (
    Authority,
    Budget,
    Ceilings,
    Turn,
    disclosure,
)
from domain.flows.runs import ChildJob, RunResult, RunStatus
from domain.flows.trace_spans import EventKind
from domain.usage import Usage

FLOW_KEY = "flow"


class StopKind(enum.StrEnum):
    EXCEEDED = "budget_exceeded"
    UNOBSERVABLE = "budget_unobservable"


@attrs.frozen
class BudgetStop:
    """Why a budget stopped a live child; ``graceful``: the stopping budget's wrap-up notice was
    seen in the child's session before the crossing response (``stopReason: budget_wrap_up``)."""

    kind: StopKind
    key: str
    message: str
    graceful: bool


@attrs.frozen
class Refusal:
    """A child refused before it spawned: the reached budget and the message."""

    budget: Budget
    message: str


@attrs.define(eq=False)
class Governed:
    """One child under the flow's budgets (from admission until it settles)."""

    job: ChildJob
    keys: tuple[str, ...]
    terms: ContractTerms | None
    handle: ChildHandle | None = None
    # Budget key -> the exact notice steered into this child (at most one per budget).
    notices: dict[str, str] = attrs.field(factory=dict)
    delivered: set[str] = attrs.field(factory=set)
    stop: BudgetStop | None = None
    live: bool = True

    def timeout_seconds(self, default: float) -> float:
        """The call's ``timeoutMs``, tightened by a contract budget's."""
        if self.terms is None or self.terms.timeout_ms is None:
            return default
        return min(default, self.terms.timeout_ms / 1000)


class FlowBudgets:
    def __init__(
        self,
        ceilings: Ceilings,
        *,
        terms: Terms | None = None,
        chain: bool = False,
        contract_ceilings: Mapping[str, Ceilings] | None = None,
    ) -> None:
        """``chain``: a contract budget is per step (seed: chain resets it per step);
        ``contract_ceilings``: the contracts the call declares, for disclosure."""
        self._terms = terms
        self._chain = chain
        self._contract_ceilings = dict(contract_ceilings or {})
        self._lock = threading.Lock()
        self._budgets: dict[str, Budget] = {}
        if ceilings.any:
            self._budgets[FLOW_KEY] = Budget(Authority.FLOW, ceilings)
        self._ceilings = ceilings
        self._children: dict[str, Governed] = {}

    @property
    def active(self) -> bool:
        """Anything to enforce: a flow ceiling, or contracts that may carry one."""
        return bool(self._budgets) or self._terms is not None

    # -- admission --------------------------------------------------------------------------

    def admit(self, job: ChildJob) -> Governed | Refusal:
        """Before a spawn: the child's governing budgets, or the reached one that refuses it."""
        terms = self._terms(job) if self._terms is not None else None
        with self._lock:
            keys = [FLOW_KEY] if FLOW_KEY in self._budgets else []
            if terms is not None and terms.ceilings.any:
                key = self._contract_key(job, terms)
                self._budgets.setdefault(
                    key,
                    Budget(
                        Authority.CONTRACT, terms.ceilings, key=key, contract_id=terms.contract_id
                    ),
                )
                keys.append(key)
            for key in keys:
                budget = self._budgets[key]
                reached = budget.refuses_spawn()
                if reached is not None:
                    return Refusal(budget, budget.exceeded_message(reached))
            governed = Governed(job, tuple(keys), terms)
            self._children[job.key] = governed
        return governed

    def _contract_key(self, job: ChildJob, terms: ContractTerms) -> str:
        key = terms.budget_key or terms.contract_id
        return f"{key}@{job.key}" if self._chain else key

    def attach(self, governed: Governed, handle: ChildHandle) -> None:
        """The child spawned: one inside a budget's wrap-up window is steered now, before its
        first turn."""
        with self._lock:
            governed.handle = handle
            steers = self._due(governed)
        self._steer(steers)

    def release(self, governed: Governed) -> None:
        with self._lock:
            governed.live = False

    # -- the response boundary --------------------------------------------------------------

    def turn(self, governed: Governed, turn: Turn) -> bool:
        """Charge one completed response to every budget governing the child; ``True`` when it
        must stop now (its ``stop`` says why). Every live child of a budget that this response
        moved into its wrap-up window is steered."""
        steers: list[tuple[ChildHandle, str]] = []
        stopped = False
        with self._lock:
            for key in governed.keys:
                self._budgets[key] = self._budgets[key].charge(turn)
            if governed.stop is None and governed.live:
                governed.stop = self._stop(governed, turn)
                stopped = governed.stop is not None
            for key in governed.keys:
                if self._budgets[key].in_wrap_up_window() is None:
                    continue
                for other in self._children.values():
                    if other.live and other.stop is None and key in other.keys:
                        steers += self._due(other)
        self._steer(steers)
        return stopped

    def _stop(self, governed: Governed, turn: Turn) -> BudgetStop | None:
        budgets = [self._budgets[key] for key in governed.keys]
        if not turn.cost_reported:
            unobservable = next((b for b in budgets if b.enforces_cost), None)
            if unobservable is not None:
                # Unknown spend cannot be settled gracefully either: always a hard stop.
                return BudgetStop(
                    StopKind.UNOBSERVABLE,
                    unobservable.key,
                    unobservable.unobservable_message(),
                    False,
                )
        for budget in budgets:
            dimension = budget.stops_live_run()
            if dimension is not None:
                return BudgetStop(
                    StopKind.EXCEEDED,
                    budget.key,
                    budget.exceeded_message(dimension),
                    budget.key in governed.delivered,
                )
        return None

    def _due(self, governed: Governed) -> list[tuple[ChildHandle, str]]:
        """(Under the lock.) The notices this child is owed and has not been sent: one per
        governing budget inside its window. A child without a handle yet gets them at attach."""
        if governed.handle is None or not governed.live or governed.stop is not None:
            return []
        due: list[tuple[ChildHandle, str]] = []
        for key in governed.keys:
            budget = self._budgets[key]
            if key in governed.notices or budget.in_wrap_up_window() is None:
                continue
            terms = governed.terms
            notice = budget.wrap_up_notice(
                contract_id=terms.contract_id if terms is not None else None,
                envelope_format=terms.envelope_format if terms is not None else None,
            )
            governed.notices[key] = notice
            due.append((governed.handle, notice))
        return due

    @staticmethod
    def _steer(steers: list[tuple[ChildHandle, str]]) -> None:
        for handle, notice in steers:
            # A refused steer is not delivery: the hard stop still bounds the spend.
            handle.steer(notice)

    def observe(self, governed: Governed, event: ChildEvent) -> bool:
        """One event of a governed child; ``True`` when a budget stops it now. A completed
        model response is the accounting boundary (seed 004)."""
        if isinstance(event, AssistantText):
            turn = Turn(event.input_tokens, event.output_tokens, event.cost, event.cost_reported)
            return self.turn(governed, turn)
        if isinstance(event, SteerDelivered):
            self.seen(governed, event.message)
        return False

    def seen(self, governed: Governed, message: str) -> None:
        """A steered message was echoed into the child's session: a notice it matches reached
        the child (the proof a later crossing may settle gracefully)."""
        with self._lock:
            for key, notice in governed.notices.items():
                if notice == message:
                    governed.delivered.add(key)

    # -- what the flow reports --------------------------------------------------------------

    def child_attributes(self, key: str) -> dict[str, float | int | str]:
        """The budget state after a run (the flow's budget first; a contract's under
        ``flow.budget.contract.*``)."""
        with self._lock:
            governed = self._children.get(key)
            budgets = [self._budgets[k] for k in governed.keys] if governed else []
        found: dict[str, float | int | str] = {}
        for budget in budgets:
            prefix = (
                "flow.budget." if budget.authority is Authority.FLOW else "flow.budget.contract."
            )
            for name, value in budget.trace_attributes().items():
                found[prefix + name.removeprefix("flow.budget.")] = value
        return found

    def events(self, key: str) -> list[tuple[str, dict[str, float | int | str | bool]]]:
        """The budget events of one settled run: ``child.wrap_up`` per notice sent (with
        ``flow.budget.wrapup_delivered``), and ``child.exhausted`` / ``child.unobservable``
        when a budget stopped it (with ``flow.budget.graceful``)."""
        with self._lock:
            governed = self._children.get(key)
            if governed is None:
                return []
            found: list[tuple[str, dict[str, float | int | str | bool]]] = []
            for budget_key in governed.notices:
                attributes: dict[str, float | int | str | bool] = {
                    **self._budgets[budget_key].trace_attributes(),
                    "flow.budget.wrapup_delivered": budget_key in governed.delivered,
                }
                found.append(("child.wrap_up", attributes))
            stop = governed.stop
            if stop is not None:
                name = (
                    "child.unobservable"
                    if stop.kind is StopKind.UNOBSERVABLE
                    else "child.exhausted"
                )
                found.append(
                    (
                        name,
                        {
                            **self._budgets[stop.key].trace_attributes(),
                            "flow.budget.graceful": stop.graceful,
                        },
                    )
                )
            return found

    def disclosure(self) -> list[str]:
        return disclosure(self._ceilings, self._contract_ceilings)

    def document(self) -> dict[str, Any]:
        """``details.budget``: every ceiling with its authority and spend, and the lines."""
        with self._lock:
            budgets = list(self._budgets.values())
        return {
            "ceilings": [budget.document() for budget in budgets],
            "lines": self.disclosure(),
            "exhausted": [budget.key for budget in budgets if budget.refuses_spawn() is not None],
        }


def refused(
    job: ChildJob, refusal: Refusal, budgets: FlowBudgets | None, trace: FlowTrace | None
) -> RunResult:
    """A child a reached ceiling refuses: never spawned; a ``child.refused`` budget event."""
    if trace is not None and budgets is not None:
        trace.event(
            "child.refused",
            EventKind.BUDGET,
            reason=refusal.message,
            unit=job.key,
            code=ErrorCode.BUDGET_EXCEEDED,
            attributes=refusal.budget.trace_attributes(),
        )
    return RunResult(
        job.key,
        job.role.agent,
        RunStatus.FAILED,
        error_code=ErrorCode.BUDGET_EXCEEDED,
        error=refusal.message,
        stop_reason=str(StopKind.EXCEEDED),
    )


def stopped(
    job: ChildJob, governed: Governed, texts: list[str], usage: Usage, duration_ms: int
) -> RunResult:
    """A child a budget stopped: gracefully (its wrap-up notice reached it: ``completed`` with
    its last answer, which any envelope validation still judges) or hard (``failed``)."""
    stop = governed.stop
    assert stop is not None
    if stop.graceful:
        answer = next((text for text in reversed(texts) if text.strip()), "")
        return RunResult(
            job.key,
            job.role.agent,
            RunStatus.COMPLETED,
            output=answer,
            usage=usage,
            duration_ms=duration_ms,
            stop_reason="budget_wrap_up",
        )
    code = (
        ErrorCode.BUDGET_UNOBSERVABLE
        if stop.kind is StopKind.UNOBSERVABLE
        else ErrorCode.BUDGET_EXCEEDED
    )
    return RunResult(
        job.key,
        job.role.agent,
        RunStatus.FAILED,
        usage=usage,
        duration_ms=duration_ms,
        error_code=code,
        error=stop.message,
        stop_reason=str(stop.kind),
    )


def trace_budget(budgets: FlowBudgets, trace: FlowTrace, key: str) -> dict[str, float | int | str]:
    """A settled run's budget events on the trace; its budget state for its child span."""
    for name, attributes in budgets.events(key):
        trace.event(name, EventKind.BUDGET, reason=name, unit=key, attributes=attributes)
    return budgets.child_attributes(key)
