"""The logical lifecycle of one attempt, as seed §6 draws it plus the one edge its text asks for
(``accepted → stale``: an accepted review whose bound source changes is marked stale before it
can be used as completion evidence again), and resource settlement, tracked separately
(``cancelled`` never asserts that the provider stopped billing).

An illegal transition raises :class:`~domain.errors.IllegalTransition` (the one error every
status machine of the project raises): no code path can move a result along an edge the diagram
does not have (a cancelled or expired attempt can never become ``ready``).
"""

from __future__ import annotations

import enum

from domain.errors import IllegalTransition, legal_transition

__all__ = ["IllegalTransition"]


class State(enum.StrEnum):
    PROPOSED = "proposed"
    REJECTED = "rejected"
    QUEUED = "queued"
    RUNNING = "running"
    READY = "ready"
    INCOMPLETE = "incomplete"
    INVALID = "invalid"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    STALE = "stale"
    ACCEPTED = "accepted"
    DISCARDED = "discarded"


TRANSITIONS: dict[State, frozenset[State]] = {
    State.PROPOSED: frozenset({State.REJECTED, State.QUEUED}),
    State.QUEUED: frozenset({State.RUNNING, State.CANCELLED}),
    State.RUNNING: frozenset(
        {
            State.READY,
            State.INCOMPLETE,
            State.INVALID,
            State.FAILED,
            State.CANCELLED,
            State.EXPIRED,
        }
    ),
    State.READY: frozenset({State.STALE, State.ACCEPTED, State.DISCARDED}),
    State.INCOMPLETE: frozenset({State.DISCARDED}),
    State.INVALID: frozenset({State.DISCARDED}),
    State.FAILED: frozenset({State.DISCARDED}),
    State.ACCEPTED: frozenset({State.STALE}),
}

# A worker is (or may be) working: admission counts these against concurrency.
ACTIVE = frozenset({State.QUEUED, State.RUNNING})
# Outcomes a worker's report can produce.
REPORTED = frozenset({State.READY, State.INCOMPLETE, State.INVALID, State.FAILED})
# A result on which the parent may rely: a relevant source change stales it (seed §6).
FROZEN_TARGET = frozenset({State.READY, State.ACCEPTED})
# No edge leaves these.
TERMINAL = frozenset(state for state in State if not TRANSITIONS.get(state))


def transition(source: State, target: State) -> State:
    return legal_transition(TRANSITIONS, source, target, "attempt lifecycle")


class Settlement(enum.StrEnum):
    """What is known of the attempt's provider resources, apart from its logical state."""

    RESERVED = "reserved"
    IN_FLIGHT = "in_flight"
    SETTLED = "settled"
    UNCERTAIN = "uncertain"


SETTLEMENT_TRANSITIONS: dict[Settlement, frozenset[Settlement]] = {
    Settlement.RESERVED: frozenset({Settlement.IN_FLIGHT, Settlement.SETTLED}),
    Settlement.IN_FLIGHT: frozenset({Settlement.SETTLED, Settlement.UNCERTAIN}),
    Settlement.UNCERTAIN: frozenset({Settlement.SETTLED}),
}
# The worker may still hold provider resources (running, or stopped without confirmation):
# each such attempt keeps its concurrency slot.
SETTLING = frozenset({Settlement.IN_FLIGHT, Settlement.UNCERTAIN})


def settle(source: Settlement, target: Settlement) -> Settlement:
    return legal_transition(SETTLEMENT_TRANSITIONS, source, target, "attempt settlement")
