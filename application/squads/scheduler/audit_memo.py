"""The reconcile pass's audit of done tasks, remembered while its inputs are provably unchanged.

Every pass re-validates every done task's attestation (a child may forge its ledger at any
time); with one task settling per pass that is quadratic in the task count. A verdict of
*valid* is kept with a witness of the files it was computed from (the task's attestation file,
the parent's observation record and the task's session file, ``AttestationAuditor.audit_inputs``)
and is reused only while all of this holds:

* the squad's spec reference, the task's status and its bound session are the same values
  (the canonical bytes themselves are verified again by every pass before the audit);
* every witnessed file has the identity it had before the audit read it, and none was changed
  within the racy window before that (``FileWitnesses.unchanged``; a file changed too recently
  is never remembered), and the wall clock has not stepped back;
* the scheduler's clock is not earlier than when the verdict was reached (grounding accepts
  timestamps up to "now", so a valid verdict stays valid as time moves forward, not back).

Anything else is audited again, and an invalid verdict is never remembered.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from application.attestation_check import AttestationAuditor
from application.canonical import CanonicalSpec
from application.ports import Clock, FileWitness, FileWitnesses
from application.spec_reads import AttestationCheck
from domain.squad.model import Squad, Task


@attrs.frozen
class _Valid:
    key: tuple[object, ...]
    witness: FileWitness
    reached: datetime
    check: AttestationCheck


def _key(squad: Squad, task: Task) -> tuple[object, ...]:
    return (squad.id, squad.spec, task.status, None if task.session is None else task.session.file)


@attrs.define(eq=False)
class DoneAudits:
    _auditor: AttestationAuditor
    _clock: Clock
    # ``None``: nothing is remembered (every pass audits every done task).
    _witnesses: FileWitnesses | None
    _valid: dict[str, _Valid] = attrs.field(init=False, factory=dict)

    def check(
        self, squad: Squad, task: Task, canonical: CanonicalSpec, *, now: datetime
    ) -> AttestationCheck:
        """``validate_task_attestation(squad, task, canonical)``, where ``canonical`` was
        verified against ``squad.spec`` by this same pass and ``now`` is the scheduler's clock
        when the pass's audit began (read once for every done task)."""
        witnesses = self._witnesses
        if witnesses is None:
            return self._auditor.validate_task_attestation(squad, task, canonical)
        key = _key(squad, task)
        known = self._valid.get(task.id)
        if (
            known is not None
            and known.key == key
            and now >= known.reached
            and witnesses.unchanged(known.witness)
        ):
            return known.check
        witness = witnesses.witness(self._auditor.audit_inputs(squad, task))
        check = self._auditor.validate_task_attestation(squad, task, canonical)
        reached = self._clock.now()
        if check.valid and witnesses.unchanged(witness):
            self._valid[task.id] = _Valid(key, witness, reached, check)
        else:
            self._valid.pop(task.id, None)
        return check
