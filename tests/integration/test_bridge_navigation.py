"""The bridge's ``navigation`` method and ``session_shutdown``'s reason (docs/bridge.md): what
the shim forwards reaches the role's ``on_session_change``, before ``on_shutdown``; a failing
navigation never stops the shutdown; the main role lists the events only when it delegates."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters.bridge import main_bridge_role
from adapters.bridge.protocol import registrations_payload
from application.ports import Registrations, SessionChange
from domain.delegation.navigation import NAVIGATION_EVENTS
from entrypoints.main_bridge_container import build_main_bridge_role
from tests.integration.bridge_server.support import ScriptedEvents, Served


def served_with(
    events: ScriptedEvents, changes: list[SessionChange], *, fail: bool = False
) -> Served:
    def on_change(change: SessionChange) -> None:
        changes.append(change)
        events.calls.append(f"change:{change.event}")
        if fail:
            raise RuntimeError("the store is locked")

    def on_shutdown() -> None:
        events.session_shutdown()

    role = attrs.evolve(
        main_bridge_role(events), on_session_change=on_change, on_shutdown=on_shutdown
    )
    return Served(role)


def test_navigation_requests_reach_the_role_with_reason_and_position() -> None:
    events, changes = ScriptedEvents(), list[SessionChange]()
    served = served_with(events, changes)
    try:
        assert served.result("navigation", {"event": "session_before_switch", "reason": "new"}) is (
            None
        )
        served.result("navigation", {"event": "session_before_fork", "position": "at"})
        served.result("navigation", {"event": "session_before_tree"})
    finally:
        served.finish()
    assert changes == [
        SessionChange("session_before_switch", reason="new"),
        SessionChange("session_before_fork", position="at"),
        SessionChange("session_before_tree"),
    ]


@pytest.mark.parametrize("params", [{}, {"event": 3}])
def test_a_navigation_without_an_event_is_refused_and_reaches_nobody(
    params: dict[str, Any],
) -> None:
    events, changes = ScriptedEvents(), list[SessionChange]()
    served = served_with(events, changes)
    try:
        served.request("navigation", params)
        answer = served.next()
    finally:
        served.finish()
    assert answer["error"]["code"] == "invalid_params"
    assert changes == []


SWITCH = "session_before_switch"


@pytest.mark.parametrize(
    ("method", "params", "event"),
    [
        pytest.param("navigation", {"event": SWITCH, "reason": 1}, SWITCH, id="reason-not-text"),
        pytest.param("navigation", {"event": SWITCH, "reason": ""}, SWITCH, id="reason-empty"),
        pytest.param(
            "navigation", {"event": SWITCH, "position": "x" * 65}, SWITCH, id="position-too-long"
        ),
        pytest.param("session_shutdown", {}, "session_shutdown", id="shutdown-no-reason"),
        pytest.param(
            "session_shutdown", {"reason": None}, "session_shutdown", id="shutdown-reason-null"
        ),
        pytest.param(
            "session_shutdown", {"reason": 7}, "session_shutdown", id="shutdown-reason-not-text"
        ),
        pytest.param(
            "session_shutdown",
            {"reason": "x" * 65},
            "session_shutdown",
            id="shutdown-reason-too-long",
        ),
    ],
)
def test_a_malformed_or_missing_detail_is_dropped_and_the_session_change_still_reaches_the_role(
    method: str, params: dict[str, Any], event: str
) -> None:
    """The detail is dropped, never a reason to skip navigating (jobs of the old task would
    otherwise survive it)."""
    events, changes = ScriptedEvents(), list[SessionChange]()
    served = served_with(events, changes)
    assert served.result(method, params) is None
    served.finish()
    assert changes == [SessionChange(event)]


def test_shutdown_navigates_with_its_reason_before_the_role_shuts_down() -> None:
    events, changes = ScriptedEvents(), list[SessionChange]()
    served = served_with(events, changes)
    served.result("session_start")
    served.result("session_shutdown", {"reason": "fork"})
    assert served.finish() == 0
    assert changes == [SessionChange("session_shutdown", reason="fork")]
    assert events.calls[-3:] == ["change:session_shutdown", "session_shutdown", "detach"]


def test_a_failing_navigation_still_shuts_down_and_detaches() -> None:
    events, changes = ScriptedEvents(), list[SessionChange]()
    served = served_with(events, changes, fail=True)
    served.result("session_start")
    served.request("session_shutdown", {"reason": "new"})
    answer = served.next()
    served.finish()
    assert answer["ok"] is False
    assert answer["error"]["code"] == "internal"
    assert events.calls[-3:] == ["change:session_shutdown", "session_shutdown", "detach"]
    assert "the store is locked" in served.log.getvalue()


def test_a_role_that_does_not_listen_ignores_navigation() -> None:
    events = ScriptedEvents()
    served = Served(main_bridge_role(events))
    assert served.result("navigation", {"event": "session_before_tree"}) is None
    served.result("session_shutdown", {"reason": "quit"})
    served.finish()
    assert events.calls == ["session_shutdown"]


def test_hello_lists_navigation_only_when_registered() -> None:
    assert "navigation" not in registrations_payload(Registrations(), lifecycle=True)
    listed = registrations_payload(Registrations(navigation=NAVIGATION_EVENTS), lifecycle=True)
    assert listed["navigation"] == list(NAVIGATION_EVENTS)


def _main_role(root: Path) -> Any:
    environ = {**os.environ, "PI_SQUAD_ROOT": str(root)}
    environ.pop("PI_SQUAD_CHILD", None)
    return build_main_bridge_role(environ)


def test_the_main_role_forwards_navigation_only_when_it_offers_delegate(tmp_path: Path) -> None:
    root = tmp_path / "root"
    without = _main_role(root)
    assert without.events.registrations().navigation == ()
    assert without.on_session_change is None
    policy = root / "delegation" / "policy.json"
    policy.parent.mkdir(parents=True)
    policy.write_text(json.dumps({"version": 1}))
    with_delegation = _main_role(root)
    assert with_delegation.events.registrations().navigation == NAVIGATION_EVENTS
    assert with_delegation.on_session_change is not None
    # Before any delegate call nothing of this bridge runs: navigation leaves the store alone.
    with_delegation.on_session_change(SessionChange("session_before_tree"))
    with_delegation.on_session_change(SessionChange("session_shutdown", reason="quit"))
    assert with_delegation.on_shutdown is not None
    with_delegation.on_shutdown()
    assert not (root / "delegation" / "sessions").exists()
