"""The logical lifecycle of one attempt, exactly as seed §6 draws it, and resource settlement,
tracked separately (``cancelled`` never asserts that the provider stopped billing).

An illegal transition raises: no code path can move a result along an edge the diagram does
not have (a cancelled or expired attempt can never become ``ready``).
"""

from __future__ import annotations

import enum


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
}

# A worker is (or may be) working: admission counts these against concurrency.
ACTIVE = frozenset({State.QUEUED, State.RUNNING})
# Outcomes a worker's report can produce.
REPORTED = frozenset({State.READY, State.INCOMPLETE, State.INVALID, State.FAILED})
# No edge leaves these.
TERMINAL = frozenset(state for state in State if not TRANSITIONS.get(state))


class IllegalTransition(ValueError):
    def __init__(self, source: State, target: State) -> None:
        super().__init__(f"no lifecycle edge {source} -> {target}")
        self.source = source
        self.target = target


def transition(source: State, target: State) -> State:
    if target not in TRANSITIONS.get(source, frozenset()):
        raise IllegalTransition(source, target)
    return target


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


def settle(source: Settlement, target: Settlement) -> Settlement:
    if target not in SETTLEMENT_TRANSITIONS.get(source, frozenset()):
        raise ValueError(f"no settlement edge {source} -> {target}")
    return target
