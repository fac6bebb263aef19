"""The main Pi's session events reach the delegation host as navigation
(application/delegation/navigation.py): one ``navigate`` per navigation event, with its reason;
nothing for compaction; nothing at all while this bridge has not delegated. With the real host
on the fake runtime: leases revoked before any worker is asked to stop, and a late report never
published."""

from __future__ import annotations

import attrs
import pytest

from application.delegation.navigation import SessionNavigation
from application.ports import SessionChange
from tests.fakes.delegation import outcome, report
from tests.unit.application.delegation.support import (
    first_lease,
    job,
    job_states,
    revoked_when_asked,
    started,
    world,
)


@attrs.define
class RecordingHost:
    reasons: list[str] = attrs.field(factory=list)

    def navigate(self, reason: str) -> int:
        self.reasons.append(reason)
        return len(self.reasons)


CHANGES = [
    (
        SessionChange("session_before_switch", reason="new"),
        "a new session was requested (session_before_switch, reason new)",
    ),
    (
        SessionChange("session_before_switch", reason="resume"),
        "a switch to another session was requested (session_before_switch, reason resume)",
    ),
    (
        SessionChange("session_before_fork", position="before"),
        "a fork was requested (session_before_fork, position before)",
    ),
    (
        SessionChange("session_before_fork", position="at"),
        "a clone was requested (session_before_fork, position at)",
    ),
    (SessionChange("session_before_tree"), "tree navigation was requested (session_before_tree)"),
    (
        SessionChange("session_shutdown", reason="new"),
        "the main Pi session ended (session_shutdown, reason new)",
    ),
    (
        SessionChange("session_shutdown", reason="reload"),
        "the main Pi session ended (session_shutdown, reason reload)",
    ),
    (SessionChange("session_shutdown"), "the main Pi session ended (session_shutdown)"),
]


@pytest.mark.parametrize(("change", "reason"), CHANGES)
def test_each_navigation_event_navigates_the_host_once_with_its_reason(
    change: SessionChange, reason: str
) -> None:
    host = RecordingHost()
    assert SessionNavigation(lambda: host).session_change(change) == 1
    assert host.reasons == [reason]


@pytest.mark.parametrize(
    "change",
    [
        SessionChange("session_compact", reason="manual"),
        SessionChange("session_compact", reason="threshold"),
        SessionChange("session_tree"),
        SessionChange("session_start", reason="new"),
        SessionChange("session_info_changed"),
    ],
)
def test_compaction_and_other_events_never_navigate(change: SessionChange) -> None:
    host = RecordingHost()
    assert SessionNavigation(lambda: host).session_change(change) is None
    assert host.reasons == []


def test_a_bridge_that_never_delegated_navigates_nothing() -> None:
    asked: list[bool] = []

    def no_host() -> None:
        asked.append(True)

    navigation = SessionNavigation(no_host)
    assert navigation.session_change(SessionChange("session_before_tree")) is None
    assert asked == [True]


def test_tree_navigation_revokes_first_cancels_running_work_and_drops_its_late_result() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host, job("a"), job("b"))
    ready_id, running_id = (row["jobId"] for row in admitted["jobs"])
    host.report(w.runtime.lease(ready_id), outcome(report()))
    late = w.runtime.lease(running_id)
    revoked_first = revoked_when_asked(w)
    generation = SessionNavigation(lambda: host).session_change(
        SessionChange("session_before_tree")
    )
    assert generation == 1
    assert revoked_first == [True]  # the lease was gone before the worker was stopped
    assert w.runtime.cancelled == [late]
    # The killed worker's report, arriving after the navigation: dropped, never published.
    assert host.report(late, outcome(report()))["published"] is False
    assert host.authorize_request(late) is False
    assert job_states(host, admitted["batchId"]) == ["stale", "cancelled"]
    collected = host.handle({"version": 1, "op": "collect", "batchId": admitted["batchId"]})
    by_job = {item["receipt"]["identity"]["jobId"]: item for item in collected["items"]}
    cancelled = by_job[running_id]
    assert cancelled["result"] is None
    assert cancelled["receipt"]["hostStatus"] == "cancelled"
    assert cancelled["receipt"]["reason"] == (
        "task navigation: tree navigation was requested (session_before_tree)"
    )
    assert cancelled["receipt"]["observations"]["lateResultsDropped"] == 1
    # It was bound to the generation the navigation left behind.
    assert cancelled["receipt"]["identity"]["taskGeneration"] == generation - 1


def test_compaction_leaves_running_work_and_ready_results_alone() -> None:
    w = world()
    host = w.host()
    admitted = started(w, host, job("a"), job("b"))
    host.report(first_lease(w, admitted), outcome(report()))
    navigation = SessionNavigation(lambda: host)
    assert navigation.session_change(SessionChange("session_compact", reason="manual")) is None
    assert job_states(host, admitted["batchId"]) == ["ready", "running"]
    assert w.runtime.cancelled == []
