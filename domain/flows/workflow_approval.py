"""A workflow's approval phases (``domain.flows.workflow``): the person asked, or an unspent
receipt from an earlier run honoured; a granted approval written as a receipt
(``domain.flows.workflow_receipts``) the first gated phase spends."""

from __future__ import annotations

from domain.errors import ErrorCode
from domain.flows.call import FlowCall
from domain.flows.canonical import canonical_sha256
from domain.flows.handoff import HandoffGuard
from domain.flows.mode_parts import Decision
from domain.flows.workflow_fields import Phase, gated_phases, phase_document, workflow_digest
from domain.flows.workflow_receipts import ReceiptTerms, Standing, grant, receipt_of, standing
from domain.flows.workflow_run import WorkflowRun, WorkflowStop, phase_key, unspawned
from domain.flows.workflow_state import PhaseRecord, PhaseStatus

APPROVAL_TITLE = "pi-squad flow: workflow approval"
_RECEIPT_CODES = {
    Standing.INVALID: ErrorCode.APPROVAL_RECEIPT_INVALID,
    Standing.CONSUMED: ErrorCode.APPROVAL_RECEIPT_CONSUMED,
    # Reopen consent: asked again where someone can be asked; headless, these codes.
    Standing.STALE: ErrorCode.APPROVAL_RECEIPT_STALE,
    Standing.EXPIRED: ErrorCode.APPROVAL_RECEIPT_EXPIRED,
}


def receipt_terms(call: FlowCall, guard: HandoffGuard, index: int) -> ReceiptTerms:
    """What the approval at ``index`` binds: the workflow, the phase, the phases it gates, the
    agent scope and the resolved handoff policy."""
    assert call.workflow is not None
    assert call.task is not None
    workflow = call.workflow
    gated = [phase_document(phase) for phase in gated_phases(workflow, index)]
    return ReceiptTerms(
        workflow_digest(call.task, workflow),
        workflow.phases[index].id,
        canonical_sha256(gated),
        call.agent_scope,
        str(guard.policy.effective),
    )


def approve(run: WorkflowRun, index: int, phase: Phase) -> None:
    """An approval phase: done already (its receipt spent), or an unspent receipt still valid
    (granted before a kill), or the person asked: granted, a receipt is written unspent and the
    next work phase spends it. A spent or malformed receipt is a hard failure; a stale or
    expired one reopens consent (asked again; headless, its own code)."""
    assert phase.approval is not None
    if run.state.completed(phase.id) is not None:
        return
    spend(run)
    terms = receipt_terms(run.call, run.guard, index)
    now = run.host.now_ms()
    key = phase_key(phase.id)
    held = run.state.receipts.get(phase.id)
    code = ErrorCode.WORKFLOW_APPROVAL_REQUIRED
    if held is not None:
        found = standing(receipt_of(held), terms, now)
        run.decisions.append(Decision("workflow.receipt", key, str(found), "state file"))
        if found is Standing.VALID:
            run.unspent = phase.id
            return
        code = _RECEIPT_CODES[found]
        if found in (Standing.INVALID, Standing.CONSUMED):
            reason = f"phase {phase.id}'s approval receipt is {found}; it cannot be used"
            raise WorkflowStop(unspawned(key, "", code, reason), f"Flow workflow: {code}.")
    answer = run.host.ask(APPROVAL_TITLE, question(run, index))
    if answer is None:
        run.save(run.state.with_phase(phase.id, PhaseRecord(PhaseStatus.AWAITING_APPROVAL, now)))
        reason = (
            f"phase {phase.id} needs a person's approval and this run has nobody to ask; the "
            f'state is kept in {run.path}: run the same call with "resume": true from a Pi '
            "session with a UI (pi, then ask for the flow call), where the question is shown"
        )
        raise WorkflowStop(
            unspawned(key, "", code, reason), f"Flow workflow: {code} at {phase.id}."
        )
    outcome = "granted" if answer else "declined"
    run.decisions.append(Decision("workflow.approval", key, outcome, "person"))
    if not answer:
        code = ErrorCode.WORKFLOW_APPROVAL_DENIED
        reason = f"the person declined phase {phase.id}; no gated phase ran"
        raise WorkflowStop(
            unspawned(key, "", code, reason), f"Flow workflow: {code} at {phase.id}."
        )
    receipt = grant(terms, run.host.actor, now, run.workflow.approval_ttl_ms)
    approved = run.state.with_receipt(phase.id, receipt.document(), now)
    run.save(approved.with_phase(phase.id, PhaseRecord(PhaseStatus.APPROVED, now)))
    run.unspent = phase.id


def spend(run: WorkflowRun) -> None:
    """The pending approval's receipt spent, and its phase completed, in one write, before
    the first gated phase starts (or the workflow ends)."""
    phase_id = run.unspent
    if phase_id is None:
        return
    run.unspent = None
    receipt = receipt_of(run.state.receipts[phase_id])
    assert receipt is not None
    now = run.host.now_ms()
    spent = run.state.with_receipt(phase_id, receipt.consumed(now).document(), now)
    run.save(spent.with_phase(phase_id, PhaseRecord(PhaseStatus.COMPLETED, now)))


def question(run: WorkflowRun, index: int) -> str:
    """What the person is asked at the approval phase ``index``."""
    phase = run.workflow.phases[index]
    assert phase.approval is not None
    gated = [f"{p.id} ({p.agent})" for p in gated_phases(run.workflow, index)]
    lines = [
        f"Workflow phase {phase.id}: {phase.approval.message}",
        f"Approving lets these phases run: {', '.join(gated) or 'none (the workflow ends)'}.",
        f"The approval is valid {run.workflow.approval_ttl_ms // 60_000} minute(s), once.",
    ]
    return "\n".join(lines)
