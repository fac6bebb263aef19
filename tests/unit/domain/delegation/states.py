"""Session states built through the domain's own decisions, for tests of what reads or keeps
them (views, the store)."""

from __future__ import annotations

import itertools

from domain.delegation.admission import admit_run
from domain.delegation.envelope import ModelRoute
from domain.delegation.ledger import new_state
from domain.delegation.policy import Grant
from domain.delegation.request import RunRequest, parse_request
from domain.delegation.session import SessionState
from tests.unit.application.delegation.support import run_request

SESSION = "s1"
NOW_MS = 1_000


def fresh_state(session: str = SESSION) -> SessionState:
    return new_state(session, Grant())


def admitted_state(state: SessionState | None = None) -> SessionState:
    """``state`` (a fresh one by default) with one job admitted and queued."""
    state = state or fresh_state()
    request = parse_request(run_request())
    assert isinstance(request, RunRequest)
    numbers = itertools.count(1)
    decision = admit_run(
        state,
        request,
        grant=Grant(),
        now_ms=NOW_MS,
        new_id=lambda prefix: f"{prefix}-{next(numbers)}",
        route=ModelRoute(None, None, None, state.policy_generation),
    )
    return decision.state
