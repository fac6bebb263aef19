"""What every transaction of the `delegate` host decides before its operation: the grant
synchronised first (a changed policy is a new generation), then deadlines, a lost host's
attempts and source changes applied (docs/delegation.md, "The host")."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from domain.delegation.decision import Decision
from domain.delegation.ledger import apply_deadlines, apply_source_changes, sync_policy
from domain.delegation.policy import Grant
from domain.delegation.recovery import Alive, recover_lost_hosts
from domain.delegation.session import ProcessRecord, SessionState


def brought_up_to_date(
    state: SessionState,
    grant: Grant,
    now_ms: int,
    *,
    changed: Callable[[str], bool],
    alive: Alive | None,
    me: ProcessRecord | None,
) -> Decision[None]:
    """``alive``: the caller's view of processes (``None``: it cannot recognise any, so no
    recovery); ``changed``: whether a captured source no longer has its bytes."""
    decision = sync_policy(state, grant, now_ms)
    decision = decision.then(apply_deadlines(decision.state, now_ms))
    if alive is not None:
        decision = decision.then(recover_lost_hosts(decision.state, now_ms, alive, me))
    return attrs.evolve(decision, state=apply_source_changes(decision.state, changed, now_ms))
