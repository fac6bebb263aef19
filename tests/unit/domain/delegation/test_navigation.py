"""Which of the main Pi's session events are task navigation (domain/delegation/navigation.py;
docs/delegation.md, "Navigation")."""

from __future__ import annotations

import pytest

from domain.delegation.navigation import (
    NAVIGATION_EVENTS,
    NOT_NAVIGATION,
    TREE_REASON,
    navigation_reason,
)


@pytest.mark.parametrize(
    ("event", "detail", "expected"),
    [
        (
            "session_before_switch",
            {"reason": "new"},
            "a new session was requested (session_before_switch, reason new)",
        ),
        (
            "session_before_switch",
            {"reason": "resume"},
            "a switch to another session was requested (session_before_switch, reason resume)",
        ),
        (
            "session_before_fork",
            {"position": "before"},
            "a fork was requested (session_before_fork, position before)",
        ),
        (
            "session_before_fork",
            {"position": "at"},
            "a clone was requested (session_before_fork, position at)",
        ),
        ("session_before_tree", {}, TREE_REASON),
        (
            "session_shutdown",
            {"reason": "fork"},
            "the main Pi session ended (session_shutdown, reason fork)",
        ),
        (
            "session_shutdown",
            {"reason": "quit"},
            "the main Pi session ended (session_shutdown, reason quit)",
        ),
        ("session_shutdown", {}, "the main Pi session ended (session_shutdown)"),
    ],
)
def test_each_session_switching_event_is_navigation_with_its_reason(
    event: str, detail: dict[str, str], expected: str
) -> None:
    assert navigation_reason(event, **detail) == expected


def test_an_unknown_detail_still_navigates_and_is_never_quoted() -> None:
    # The event says the session is changing; an unexpected detail cannot turn that off, and
    # only Pi's own words reach a receipt.
    assert navigation_reason("session_before_switch", reason="x" * 40) == (
        "a session switch was requested (session_before_switch)"
    )
    assert navigation_reason("session_before_fork") == "a fork was requested (session_before_fork)"
    assert navigation_reason("session_shutdown", reason="<injected>") == (
        "the main Pi session ended (session_shutdown)"
    )


@pytest.mark.parametrize("event", [*NOT_NAVIGATION, "session_before_compact", "turn_end", ""])
def test_compaction_renames_tree_after_events_and_others_are_not_navigation(event: str) -> None:
    assert navigation_reason(event, reason="manual") is None


def test_the_forwarded_events_are_the_before_events_only() -> None:
    assert NAVIGATION_EVENTS == (
        "session_before_switch",
        "session_before_fork",
        "session_before_tree",
    )
    assert not set(NAVIGATION_EVENTS) & set(NOT_NAVIGATION)
