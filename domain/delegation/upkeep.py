"""What every transaction of the `delegate` host decides before its operation: the call's grant
checked against the session's (only ``renew`` changes it), then deadlines, a lost host's
attempts and source changes applied (docs/delegation.md, "The grant", "The host")."""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs

from domain.delegation.decision import Decision
from domain.delegation.errors import DelegationError
from domain.delegation.ledger import apply_deadlines, apply_source_changes, invalidate
from domain.delegation.policy import Grant
from domain.delegation.recovery import Alive, recover_lost_hosts
from domain.delegation.session import ProcessRecord, Renewal, SessionState
from domain.errors import ErrorCode

RENEW_COMMAND = "pi-squad delegate renew"


class GrantUse(enum.Enum):
    """How a transaction stands to a call whose grant is not the session's (seed §3: the policy
    generation is immutable human policy; §8: only an explicit human change renews)."""

    # status, collect: under another grant answered from the state as it is, nothing written.
    READ = "read"
    # A person's request (run, follow-up, resolve, cancel, capture, work): refused.
    REQUEST = "request"
    # The host's own bookkeeping (workers, settlement, navigation): never refused, it goes on
    # under the session's generation; it never creates a session.
    HOST = "host"
    # ``renew``: a person adopting the call's grant; never refused.
    RENEW = "renew"

    def creates(self) -> bool:
        """Whether a transaction of this use writes a session never written before: only a
        person's request or renewal does (its grant is the session's from then on)."""
        return self in (GrantUse.REQUEST, GrantUse.RENEW)


def holds(state: SessionState, grant: Grant) -> bool:
    """Whether ``grant`` (the policy files and this call's flags) is the session's."""
    return grant.digest() == state.policy_digest


def grant_changed(state: SessionState, grant: Grant) -> DelegationError:
    """The refusal of a request under another grant: both grants and the command that adopts
    this one."""
    roots = ", ".join(grant.source_roots) or "none"
    return DelegationError(
        ErrorCode.DELEGATE_GRANT_CHANGED,
        f"session {state.session!r} holds policy generation {state.policy_generation} "
        f"(grant sha256 {state.policy_digest[:16]}); this call's grant is another "
        f"(sha256 {grant.digest()[:16]}: sourceRoots {roots}; allowanceRequests "
        f"{grant.session.allowance_requests}; modes {', '.join(grant.modes)}). A grant changes "
        f"only when a person renews it: `{RENEW_COMMAND} --session {state.session}` with this "
        "call's --grant-root/--allowance flags adopts it (a new policy generation: active work "
        "cancelled, ready results stale, the allowance renewed); or repeat the call with the "
        "flags the session holds",
    )


def renewed(state: SessionState, grant: Grant, now_ms: int) -> Decision[None]:
    """``renew``: a person adopts ``grant`` (the same or another) as a new ``policyGeneration``.
    Active work under the old generation is cancelled (its grant was revoked), ready results go
    stale (policy drift needs the parent's reassessment), and the allowance is renewed on top of
    everything already consumed and reserved, recorded as a ``renewals`` entry."""
    state = attrs.evolve(
        state, policy_generation=state.policy_generation + 1, policy_digest=grant.digest()
    )
    decision = invalidate(state, now_ms, "a person renewed the delegation grant")
    state = decision.state
    allowance = grant.session.allowance_requests
    renewal = Renewal(state.policy_generation, allowance, state.ledger.consumed, now_ms)
    ledger = attrs.evolve(
        state.ledger, allowance=state.ledger.consumed + state.ledger.reserved + allowance
    )
    state = attrs.evolve(state, renewals=(*state.renewals, renewal), ledger=ledger)
    return attrs.evolve(decision, state=state)


def brought_up_to_date(
    state: SessionState,
    now_ms: int,
    *,
    changed: Callable[[str], bool],
    alive: Alive | None,
    me: ProcessRecord | None,
) -> Decision[None]:
    """``alive``: the caller's view of processes (``None``: it cannot recognise any, so no
    recovery); ``changed``: whether a captured source no longer has its bytes. The grant is
    not touched here: a call under another grant changes no generation (``GrantUse``)."""
    decision = apply_deadlines(state, now_ms)
    if alive is not None:
        decision = decision.then(recover_lost_hosts(decision.state, now_ms, alive, me))
    return attrs.evolve(decision, state=apply_source_changes(decision.state, changed, now_ms))
