"""Issue 13 item 2 on fakes: the main role's ``/squad`` command and its live view (status item
and widget), obtained from the main bridge's composition root over a test world."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from application.flows.flow_sessions import FLOWS_COMMAND
from application.main_role import MainRole
from application.ports import SessionNotification, ToolFailure
from application.squads.squad_commands import SQUAD_COMMAND
from application.squads.status import SquadStatusReader, SquadStatusReport
from domain.squad.model import SquadStatus, TaskStatus, Verdict
from tests.integration.main_role.support import RecordingDrive, notices, ui_events
from tests.integration.ops_support import EVIDENCE, recorder, run_to_review, squad_status
from tests.integration.scheduler_steps import failed_squad, started
from tests.runtime_world import RuntimeWorld


def message_of(answer: Any) -> str:
    assert answer.message is not None
    assert answer.message["customType"] == "squad-card"
    text: str = answer.message["content"]
    return text


def test_the_main_role_registers_the_squad_command(role: MainRole) -> None:
    assert role.registrations().commands == (SQUAD_COMMAND, FLOWS_COMMAND)
    assert SQUAD_COMMAND.name == "squad"


def test_squad_status_prints_the_status_card_of_the_newest_squad(
    role: MainRole, world: RuntimeWorld
) -> None:
    for args in ("", "status", f"status {world.squad_id[:8]}"):
        text = message_of(role.command("squad", args))
        assert text.splitlines()[0] == f"Squad: {world.squad_id}"
        assert "Ship a tested feature" not in text, "never a spec field"


@pytest.mark.parametrize("args", ["frobnicate", "status a b", "cancel"])
def test_a_malformed_or_unsafe_squad_command_is_refused_with_its_usage(
    role: MainRole, args: str
) -> None:
    with pytest.raises(ToolFailure) as refused:
        role.command("squad", args)
    assert "/squad" in refused.value.message
    with pytest.raises(ToolFailure):
        role.command("other", "")


def test_pause_stops_and_resume_drives_the_squad_again(
    role: MainRole, world: RuntimeWorld, drive: RecordingDrive
) -> None:
    role.command("squad", "resume")
    assert drive.driven == [world.squad_id], "a running squad nobody drives: this session does"
    answer = role.command("squad", "pause")
    assert squad_status(world) is SquadStatus.PAUSED
    assert answer.notify is not None
    role.command("squad", f"resume {world.squad_id}")
    assert squad_status(world) is SquadStatus.RUNNING
    assert drive.driven == [world.squad_id, world.squad_id]
    role.command("squad", f"cancel {world.squad_id}")
    assert squad_status(world) is not SquadStatus.RUNNING


def test_report_writes_the_evidence_pack_into_the_squad_directory(
    role: MainRole, world: RuntimeWorld
) -> None:
    answer = role.command("squad", "report")
    path = world.store.layout(world.squad_id).report_file
    assert answer.notify is not None
    assert path in answer.notify
    assert world.fs.exists(path)
    assert answer.level == "warning", "nothing is attested yet: the audit does not pass"


def test_review_guides_through_the_gate_only_when_a_review_is_pending(
    role: MainRole, world: RuntimeWorld
) -> None:
    with pytest.raises(ToolFailure) as early:
        role.command("squad", f"review {world.squad_id}")
    assert early.value.message.startswith("OPERATION_REFUSED: ")
    assert "not awaiting orchestrator review" in early.value.message
    run_to_review(world)
    text = message_of(role.command("squad", "review"))
    assert "awaiting orchestrator review" in text
    assert "attestation valid" in text
    for evidence in ("contractChecks", "diffReview", "verificationEvidence", "integrationEvidence"):
        assert evidence in text


def drawn(emitted: list[SessionNotification]) -> list[dict[str, Any]]:
    """The live view's events (status item and widget), without notifications."""
    return [e for e in ui_events(emitted) if e["method"] != "notify"]


def test_the_live_view_shows_a_driven_squad_and_sends_only_changes(
    role: MainRole, world: RuntimeWorld
) -> None:
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    undriven = drawn(emitted)[-1]["lines"]
    assert undriven[0] == f"squad {world.squad_id} · running · 0/4 tasks done · nothing drives it"
    assert undriven[1] == (
        f"  next: /squad resume {world.squad_id} drives it · /squad cancel {world.squad_id} "
        "stops it"
    )
    role.ensure_driver(world.squad_id)
    role.expand_view(False)
    status, widget = drawn(emitted)[-2:]
    assert status["text"] == f"squad {world.squad_id}: running 0/4"
    lines = widget["lines"]
    assert lines[0].startswith(f"squad {world.squad_id} · running · 0/4 tasks done")
    assert any("design (architect) pending · attestation not started" in x for x in lines)
    count = len(emitted)
    role.expand_view(False)
    assert len(emitted) == count, "an unchanged view is not sent again"
    role.stop_driver(world.squad_id)
    role.expand_view(False)
    assert drawn(emitted)[-1]["lines"] == undriven, "no longer driven: shown as undriven again"


def test_the_live_view_shows_a_squad_awaiting_review(role: MainRole, world: RuntimeWorld) -> None:
    run_to_review(world)
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    status = drawn(emitted)[0]
    assert status["text"] == f"squad {world.squad_id}: review 4/4 · review needed"


def test_a_new_session_lists_the_squads_that_need_the_user(
    role: MainRole, world: RuntimeWorld
) -> None:
    failed_squad(world)
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    (notice,) = notices(emitted)
    assert notice["level"] == "warning"
    assert notice["text"].startswith("pi-squad: squads of this project need you:")
    assert (
        f"- {world.squad_id}: failed (0/4 done): /squad status {world.squad_id}" in notice["text"]
    )


def test_a_new_session_drives_again_a_squad_whose_driver_died_mid_run(
    role: MainRole, world: RuntimeWorld, drive: RecordingDrive
) -> None:
    started(world)  # a driver spawned design, then "died": nobody holds the driver lock now
    assert world.task("design").status is TaskStatus.IN_PROGRESS
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    assert drive.driven == [world.squad_id]
    (notice,) = notices(emitted)
    assert (
        f"{world.squad_id}: its driver died mid-run; this session drives it again"
        in (notice["text"])
    )


def test_a_quiet_project_says_nothing_at_session_start(role: MainRole, world: RuntimeWorld) -> None:
    run_to_review(world)
    recorder(world).record_review(world.squad_id, Verdict.PASS, **EVIDENCE)
    assert squad_status(world) is SquadStatus.DONE
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    assert notices(emitted) == []


def test_leaving_while_driving_says_what_happens_and_how_to_resume(
    role: MainRole, world: RuntimeWorld
) -> None:
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    role.ensure_driver(world.squad_id)
    role.session_shutdown()
    notice = notices(emitted)[-1]
    assert notice["stderr"] is True, "kept on the terminal after Pi's UI is gone"
    assert "suspended on their sessions; the chunks they read are kept" in notice["text"]
    assert f"/squad resume {world.squad_id}" in notice["text"]
    assert f"pi-squad run --squad {world.squad_id}" in notice["text"]


def test_the_squad_tool_never_says_the_actual_digest_of_a_mismatched_spec(
    role: MainRole, world: RuntimeWorld
) -> None:
    data = b'{"not": "the spec you pinned"}'
    world.fs.write_atomic(f"{world.cwd}/other.spec.json", data)
    actual = hashlib.sha256(data).hexdigest()
    claimed = hashlib.sha256(b"what the model remembers").hexdigest()
    with pytest.raises(ToolFailure) as refused:
        role.execute_tool("call-1", "squad", {"specFile": "other.spec.json", "specSha256": claimed})
    assert refused.value.message.startswith("SPEC_HASH_MISMATCH: ")
    assert claimed in refused.value.message
    assert actual not in refused.value.message, "a model would copy it instead of checking"


def gates(emitted: list[SessionNotification]) -> list[str]:
    return [
        n.data["message"]["content"]
        for n in emitted
        if n.event == "send_message" and n.data["message"]["customType"] == "squad-review-required"
    ]


def test_a_review_gate_no_session_was_told_of_is_sent_once_when_one_starts(
    role: MainRole, world: RuntimeWorld
) -> None:
    run_to_review(world)  # headless: no session attached
    review = world.store.snapshot(world.squad_id).squad.review
    assert review is not None
    assert review.notified_at is None
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    (gate,) = gates(emitted)
    assert f"Squad {world.squad_id} is awaiting orchestrator review." in gate
    review = world.store.snapshot(world.squad_id).squad.review
    assert review is not None
    assert review.notified_at is not None, "told: recorded on the review"
    role.detach()
    again: list[SessionNotification] = []
    role.attach(again.append)
    assert gates(again) == [], "told once; the system-prompt gate keeps it in view after that"


def test_the_squad_tool_shows_its_slow_steps_in_its_row(
    role: MainRole, world: RuntimeWorld
) -> None:
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    data = b"{}"
    world.fs.write_atomic(f"{world.cwd}/empty.spec.json", data)
    with pytest.raises(ToolFailure):
        role.execute_tool(
            "call-7",
            "squad",
            {"specFile": "empty.spec.json", "specSha256": hashlib.sha256(data).hexdigest()},
        )
    rows = [dict(n.data) for n in emitted if n.event == "tool_update"]
    assert rows == [
        {
            "toolCallId": "call-7",
            "text": "Reading empty.spec.json: its hash, schema, plan and artifacts…",
        }
    ]


def test_the_live_view_reads_in_full_only_the_squads_it_shows(
    role: MainRole, world: RuntimeWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_to_review(world)
    recorder(world).record_review(world.squad_id, Verdict.PASS, **EVIDENCE)  # settled: not shown
    role.attach(lambda notification: None)
    read: list[str | None] = []
    original = SquadStatusReader.status

    def counting(self: SquadStatusReader, squad_id: str | None = None) -> SquadStatusReport:
        read.append(squad_id)
        return original(self, squad_id)

    monkeypatch.setattr(SquadStatusReader, "status", counting)
    role.expand_view(True)
    assert read == [], "a settled squad of the project is judged on its record alone"
