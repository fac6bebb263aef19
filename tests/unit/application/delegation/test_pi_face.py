"""The delegation session in the main Pi (application/delegation/pi_face.py) on fakes: the
tool's JSON unchanged with a person's entry beside it, ``/delegate status|collect`` drawn from
the same answers, and the live row and notices following the jobs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from application.delegation.pi_face import NOTHING_TO_COLLECT, DelegationFace
from application.delegation.tool import DELEGATE_ENTRY_TYPE, delegate_tool
from application.ports import SessionEvent, SessionNotification, ToolFailure
from domain.delegation.display import COLLECT_NEXT, STATUS_KEY, WIDGET_KEY
from domain.delegation.outcome_lines import RESOLVE_NEXT
from domain.delegation.policy import SessionGrant
from tests.fakes.delegation import PROJECT, DelegationWorld, outcome, report
from tests.unit.application.delegation.support import (
    FINDING,
    binding,
    first_item,
    job,
    run_request,
    world,
)

FAILURE = "the provider refused the key"


class Screen:
    """What the face drew: every ``ui`` event in order."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, notification: SessionNotification) -> None:
        assert notification.event == SessionEvent.UI
        self.events.append(dict(notification.data))

    def notices(self) -> list[str]:
        return [e["text"] for e in self.events if e["method"] == "notify"]

    def statuses(self) -> list[str | None]:
        return [e["text"] for e in self.events if e["method"] == "setStatus"]

    def widgets(self) -> list[list[str] | None]:
        return [e["lines"] for e in self.events if e["method"] == "setWidget"]


def face_over(w: DelegationWorld) -> tuple[DelegationFace, Screen]:
    host = w.host()
    face = DelegationFace(lambda: host, interval=0)
    screen = Screen()
    face.attach(screen)
    return face, screen


def content(answer: Any) -> str:
    text: str = answer.message["content"]
    return text


def test_the_tool_answers_the_same_json_and_leaves_an_entry_for_the_person() -> None:
    face, _ = face_over(world())
    result = face.tool(run_request(job("k1"), job("k2")))
    assert result.texts == (delegate_tool(world().host(), run_request(job("k1"), job("k2"))),)
    entry = result.details["entry"]
    assert entry["customType"] == DELEGATE_ENTRY_TYPE
    ran = json.loads(result.texts[0])
    assert entry["data"]["lines"] == [
        f"delegate run — batch {ran['batchId']}: 2 jobs · maxRequests 4 each · deadline 120 s",
        f"  … k1 ({ran['jobs'][0]['jobId']}) admitted",
        f"  … k2 ({ran['jobs'][1]['jobId']}) admitted",
    ]


def test_a_refused_call_is_a_tool_failure_naming_its_code() -> None:
    face, _ = face_over(world())
    with pytest.raises(ToolFailure) as refused:
        face.tool({**run_request(), "jobId": "j-0000000000000001"})
    assert refused.value.message.startswith("DELEGATE_FORGED_FIELD: ")


def failed_and_running(w: DelegationWorld, face: DelegationFace) -> dict[str, Any]:
    """k1 fails with a provider error, k2 still runs: the run's answer."""
    ran = json.loads(face.tool(run_request(job("k1"), job("k2"))).texts[0])
    lease = w.runtime.lease(ran["jobs"][0]["jobId"])
    face.host().report(lease, outcome(b"", stop_reason="error", error_message=FAILURE))
    return dict(ran)


def test_status_lists_every_job_with_its_state_and_failure_reason() -> None:
    w = world()
    face, _ = face_over(w)
    ran = failed_and_running(w, face)
    lines = content(face.command("status")).splitlines()
    assert lines[0].startswith("delegate status — session s1 · ")
    assert lines[1].startswith(f"batch {ran['batchId']} · policy 1 · task 0")
    assert lines[2].startswith("  ✗ k1 (investigate) failed: ")
    assert lines[2].endswith(f"{FAILURE} · 0 requests")
    assert lines[3] == "  ▸ k2 (investigate) running · 0 requests"
    # The same reason the CLI's and the tool's `status` give.
    rows = face.host().handle({"version": 1, "op": "status"})["batches"][0]["jobs"]
    assert FAILURE in rows[0]["reason"]
    assert f": {rows[0]['reason']} · " in lines[2]


def test_collect_shows_the_results_and_the_models_next_step_acknowledging_nothing() -> None:
    w = world()
    face, _ = face_over(w)
    ran = json.loads(face.tool(run_request()).texts[0])
    lease = w.runtime.lease(ran["jobs"][0]["jobId"])
    finding = {**FINDING, "basis": "inferred", "evidenceIds": []}
    face.host().report(lease, outcome(report(answer="stale after a write", findings=[finding])))
    lines = content(face.command("collect")).splitlines()
    assert (
        lines[0] == f"delegate collect — batch {ran['batchId']}: 1 result · 0 expired · 0 pending"
    )
    assert lines[1].startswith(f"  ✓ k1 ({ran['jobs'][0]['jobId']}) ready · complete · 1/1")
    assert "    answer: stale after a write" in lines
    assert "    finding f1 (inferred): the value is never invalidated" in lines
    assert lines[-1] == RESOLVE_NEXT
    state = face.host().snapshot()
    assert state is not None
    assert state.batches[ran["batchId"]].acknowledged == 0  # the model's cursor is its own


def test_collect_with_nothing_to_show_says_so_and_a_wrong_word_gets_the_usage() -> None:
    face, _ = face_over(world())
    assert content(face.command("collect")) == NOTHING_TO_COLLECT
    with pytest.raises(ToolFailure) as refused:
        face.command("watch")
    assert refused.value.message.startswith("usage: /delegate status|collect")
    with pytest.raises(ToolFailure) as unknown:
        face.command("collect b-00000000000000000000000000000009")
    assert unknown.value.message.startswith("DELEGATE_NOT_FOUND: ")


def test_the_row_follows_a_job_from_queued_to_running_to_settled_with_one_notice() -> None:
    w = world(session=SessionGrant(max_active_jobs=1))
    face, screen = face_over(w)
    ran = json.loads(face.tool(run_request(job("k1"), job("k2"))).texts[0])
    k1, k2 = (row["jobId"] for row in ran["jobs"])
    assert screen.statuses() == ["delegate: 1 queued · 1 running"]
    assert screen.widgets() == [["▸ k1 (investigate) running", "… k2 (investigate) queued"]]
    face.host().report(w.runtime.lease(k1), outcome(report()))  # k2 starts in the freed slot
    face.refresh()
    assert screen.notices() == [f"delegate: job k1 ({k1}) ready · 1/1 covered — {COLLECT_NEXT}"]
    assert screen.statuses()[-1] == "delegate: 1 running · 1 ready"
    face.refresh()  # nothing changed: nothing drawn again
    assert len(screen.events) == 5
    face.host().report(w.runtime.lease(k2), outcome(report()))
    face.refresh()
    assert len(screen.notices()) == 2
    assert screen.notices()[-1].startswith(f"delegate: job k2 ({k2}) ready")
    assert screen.widgets()[-1] == [
        "✓ k1 (investigate) ready · 1/1 covered",
        "✓ k2 (investigate) ready · 1/1 covered",
    ]


def test_the_row_is_removed_when_nothing_is_left_to_show() -> None:
    w = world()
    face, screen = face_over(w)
    ran = json.loads(face.tool(run_request()).texts[0])
    face.host().report(w.runtime.lease(ran["jobs"][0]["jobId"]), outcome(report()))
    item = first_item(face.host(), ran["batchId"])
    face.tool(
        {
            "version": 1,
            "op": "resolve",
            **binding(ran, item),
            "idempotencyKey": "r1",
            "disposition": "discard",
            "findings": [],
        }
    )
    assert screen.statuses()[-1] == "delegate: 1 discarded"  # settled a moment ago
    w.clock.advance(61)  # past the minute a settled job lingers
    face.refresh()
    assert screen.statuses()[-1] is None
    assert screen.widgets()[-1] is None
    assert screen.events[-2:] == [
        {"method": "setStatus", "key": STATUS_KEY, "text": None},
        {"method": "setWidget", "key": WIDGET_KEY, "lines": None},
    ]


def test_jobs_that_settled_before_the_first_read_are_not_announced_again() -> None:
    w = world()
    earlier, _ = face_over(w)
    ran = json.loads(earlier.tool(run_request()).texts[0])
    earlier.host().report(w.runtime.lease(ran["jobs"][0]["jobId"]), outcome(report()))
    later, screen = face_over(w)  # a new bridge over the same session
    later.command("status")
    assert screen.notices() == []
    assert screen.statuses() == ["delegate: 1 ready"]


def test_nothing_is_drawn_and_no_host_is_made_before_the_first_call() -> None:
    made: list[int] = []

    def make_host() -> Any:
        made.append(1)
        return world().host()

    face = DelegationFace(make_host, interval=0)
    screen = Screen()
    face.attach(screen)
    face.refresh()
    assert made == []
    assert screen.events == []


def test_capture_cancel_and_resolve_leave_entries_in_their_own_words() -> None:
    w = world()
    w.fs.add_file(f"{PROJECT}/cache.py", b"def get():\n    return cache[key]\n")
    face, _ = face_over(w)
    captured = face.tool({"version": 1, "op": "capture", "paths": ["cache.py"]})
    source = json.loads(captured.texts[0])["sources"][0]
    assert captured.details["entry"]["data"]["lines"] == [
        "delegate capture — 1 source · 0 receipts",
        f"  {source['sourceId']} cache.py · 2 lines · captured",
    ]
    ran = json.loads(face.tool(run_request()).texts[0])
    cancelled = face.tool({"version": 1, "op": "cancel", "batchId": ran["batchId"]})
    lines = cancelled.details["entry"]["data"]["lines"]
    assert lines[:2] == [f"delegate cancel — batch {ran['batchId']}: 1 job cancelled", "  ✗ k1"]
