"""What ``orchestrate``'s stages share: the run keys, the running state of one flow (every run,
handoff and decision so far, and the guard), and how a stage that cannot go on settles it."""

from __future__ import annotations

import attrs

from domain.errors import ErrorCode
from domain.flows.call import FlowCall, Mode
from domain.flows.call_roles import FlowTask
from domain.flows.control import Marker, Verdict, verdict_of
from domain.flows.handoff import HandoffGuard, PreparedHandoff
from domain.flows.handoff_record import HandoffRecord
from domain.flows.judging import reading_of
from domain.flows.mode_parts import (
    Decision,
    FlowOutcome,
    FlowStatus,
    refused_recipient,
    role_job,
    settled,
)
from domain.flows.runs import Dispatch, RunResult, RunStatus

# A refusal of the flow as a whole (a decomposition it cannot run, a wave that cannot fit the
# budget, a verifier's failing verdict) is reported on a result of this key, never spawned.
ORCHESTRATE_KEY = "orchestrate"


def decompose_key(attempt: int) -> str:
    return "decompose" if attempt == 1 else f"decompose-{attempt}"


def review_key(attempt: int) -> str:
    return f"review-{attempt}"


def worker_key(subtask_id: str) -> str:
    return f"worker-{subtask_id}"


def synthesis_key(attempt: int) -> str:
    return f"synthesis-{attempt}"


def verify_key(attempt: int) -> str:
    return f"verify-{attempt}"


@attrs.define
class Orchestration:
    """One orchestrate flow's running state."""

    call: FlowCall
    guard: HandoffGuard
    results: list[RunResult] = attrs.field(factory=list)
    records: list[HandoffRecord] = attrs.field(factory=list)
    decisions: list[Decision] = attrs.field(factory=list)

    @property
    def goal(self) -> str:
        assert self.call.orchestrate is not None
        return self.call.orchestrate.goal(self.call.task)

    def judge(
        self, dispatch: Dispatch, *, key: str, role: FlowTask, prepared: PreparedHandoff, head: str
    ) -> RunResult | None:
        """A reviewer's or verifier's run: ``head``, then ``prepared`` fenced, through the guard;
        ``None`` when the flow stopped (the handoff was refused or the run failed)."""
        delivery = self.guard.deliver(prepared, key)
        self.records.append(delivery.record)
        if delivery.block is None:
            self.results.append(refused_recipient(key, role, delivery))
            return None
        job = role_job(
            self.call,
            key,
            role,
            f"{head}\n\n{delivery.block}",
            stage=key.rsplit("-", 1)[0],
            depends_on=(prepared.source,),
            fallback=False,
            handoffs=(delivery.record,),
            consumed=True,
        )
        (judged,) = dispatch([job])
        self.results.append(judged)
        return judged if judged.ok else None

    def verdict(self, event: str, judged: RunResult) -> Verdict:
        """The judge's ``VERDICT:`` (control tokens), recorded as the ``event`` decision."""
        read = verdict_of(reading_of(judged, Marker.VERDICT))
        self.decisions.append(Decision(event, judged.key, read.verdict.upper(), read.source))
        return read.verdict

    def commander_run(self) -> RunResult:
        """The commander's latest run (the one whose decomposition the workers run)."""
        return next(r for r in reversed(self.results) if r.key.startswith(decompose_key(1)))

    def refuse(self, agent: str, code: ErrorCode, reason: str) -> FlowOutcome:
        """The flow stopped by ``code``: reported on an unspawned result, the flow failed."""
        self.results.append(
            RunResult(ORCHESTRATE_KEY, agent, RunStatus.FAILED, error_code=code, error=reason)
        )
        return self.settle(FlowStatus.FAILED, f"Flow orchestrate: {reason} ({code}).")

    def stopped(self) -> FlowOutcome:
        """The flow stopped at its last result (a failed run, or a refused recipient)."""
        last = self.results[-1]
        text = f"Flow orchestrate: stopped at {last.key} ({last.agent}): {last.error_code}."
        return self.settle(FlowStatus.FAILED, text)

    def settle(self, status: FlowStatus, text: str) -> FlowOutcome:
        return settled(
            Mode.ORCHESTRATE,
            status,
            text,
            results=self.results,
            records=self.records,
            decisions=self.decisions,
        )
