"""Issue 13 item 5: the command line says what happened and what to type next. A failed task
shows the first line of its reason and where the full text is; a running squad that no process
drives says so with the command that continues it, and ``watch`` stops instead of waiting
forever."""

from __future__ import annotations

import io
import itertools
import sys
from pathlib import Path

import attrs
import pytest

from adapters.store.lock import FastenersLockFactory
from application.squads.status import first_line
from domain.errors import ErrorCode, PiSquadError
from domain.squad.model import Verdict
from entrypoints.frame_sinks import PlainLines
from entrypoints.frames import Frame
from entrypoints.watch import watch_loop
from tests.integration.cli_support import CliRun, Sandbox, run_cli
from tests.integration.ops_support import published, recorder, run_to_review, status_reader
from tests.integration.scheduler_steps import failed_squad
from tests.integration.watch_support import frame_source
from tests.runtime_world import RuntimeWorld

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="whether a driver holds its lock is asked of Linux"
)


@pytest.fixture
def world(tmp_path: Path) -> RuntimeWorld:
    return published(tmp_path / "w")


def cli(tmp_path: Path, world: RuntimeWorld, *arguments: str) -> CliRun:
    return run_cli(Sandbox.create(tmp_path / "cli"), list(arguments), root=world.root)


def test_a_failed_task_shows_the_first_line_of_its_reason_and_where_the_rest_is(
    world: RuntimeWorld,
) -> None:
    failed_squad(world)
    error = world.task("design").error
    assert error
    report = status_reader(world).status(world.squad_id)
    (design,) = [t for t in report.tasks if t.task_id == "design"]
    assert design.reason == first_line(error)
    text = report.text().splitlines()
    at = text.index(next(line for line in text if " design (" in line))
    assert text[at + 1] == (
        f"    reason: {first_line(error)} (full text: pi-squad report {world.squad_id})"
    )
    tasks = {t["taskId"]: t for t in report.document()["tasks"]}
    assert tasks["design"]["reason"] == first_line(error)
    assert tasks["build"]["reason"] is None, "only failed or suspended tasks have a reason"


def test_the_first_line_skips_blank_lines_and_is_cut_with_an_ellipsis() -> None:
    assert (
        first_line("\n\n  provider error: no API key  \nstack...") == "provider error: no API key"
    )
    cut = first_line("x" * 500, limit=20)
    assert cut == "x" * 19 + "…"
    assert first_line("") == ""


@linux_only
def test_status_says_when_no_process_drives_a_running_squad_and_what_to_type(
    tmp_path: Path, world: RuntimeWorld
) -> None:
    command = f"pi-squad run --squad {world.squad_id}"
    undriven = cli(tmp_path, world, "status", world.squad_id)
    assert f"Driver: none, nothing will change; continue it with: {command}" in undriven.stdout
    assert cli(tmp_path, world, "status", world.squad_id, "--json").json()["driven"] is False

    driver_lock = world.store.layout(world.squad_id).driver_lock
    with FastenersLockFactory().try_lock(driver_lock) as taken:
        assert taken
        driven = cli(tmp_path, world, "status", world.squad_id)
        assert "Driver:" not in driven.stdout
        assert cli(tmp_path, world, "status", world.squad_id, "--json").json()["driven"] is True


def undriven_frame(world: RuntimeWorld) -> Frame:
    """The world's running squad as watch reads it, with no process driving it."""
    frame = frame_source(world)()
    return attrs.evolve(frame, report=attrs.evolve(frame.report, driven=False))


def test_watch_stops_once_nothing_has_driven_the_squad_for_the_grace_period(
    world: RuntimeWorld,
) -> None:
    frame = undriven_frame(world)
    clock = itertools.count(0.0, 1.0)
    sleeps: list[float] = []
    reads = itertools.count(1)

    def source() -> Frame:
        assert next(reads) < 50, "watch never stopped"
        return frame

    last = watch_loop(
        source,
        PlainLines(io.StringIO()),
        interval=1.0,
        sleep=sleeps.append,
        monotonic=lambda: next(clock),
        undriven_grace=5.0,
    )
    assert last.report.undriven
    assert 2 <= len(sleeps) <= 5, "stopped after the grace period, not at once and not never"


@linux_only
def test_the_watch_command_says_what_to_type_when_nothing_drives_the_squad(
    tmp_path: Path, world: RuntimeWorld
) -> None:
    watched = cli(tmp_path, world, "watch", world.squad_id, "--interval", "0.5")
    assert watched.returncode == 1, watched.stdout + watched.stderr
    assert f"continue it with: pi-squad run --squad {world.squad_id}" in watched.stdout
    document = cli(tmp_path, world, "watch", world.squad_id, "--interval", "0.5", "--json").json()
    assert document["stoppedBecause"] == "no_driver"


def test_the_review_gate_shows_each_tasks_attestation_state_and_chunks(world: RuntimeWorld) -> None:
    run_to_review(world)
    (gate,) = [n.text for n in world.notices if n.kind == "review_required"]
    spec = world.store.snapshot(world.squad_id).squad.spec
    assert spec is not None
    count = spec.chunk_count
    for task_id, agent in (("design", "architect"), ("build", "backend"), ("qa", "qa")):
        assert f"- {task_id} ({agent}): done · attestation valid" in gate
    assert f"chunks {count}/{count}" not in gate, "the word carries the read progress"
    assert "Attestations: 4 of 4 required verify against the canonical spec" in gate
    assert "Ship a tested feature" not in gate, "never a spec field"


def test_verify_and_report_label_the_audit_apart_from_a_failed_squads_outcome(
    tmp_path: Path, world: RuntimeWorld
) -> None:
    failed_squad(world)
    verified = cli(tmp_path, world, "verify", world.squad_id)
    lines = verified.stdout.splitlines()
    assert (
        "squad outcome (not judged here): status failed · review none · 0 of 4 tasks done" in lines
    )
    assert lines[-1].startswith("attestation audit: PASS"), "nothing done: nothing to disprove"
    assert "verdict" not in verified.stdout.lower()
    document = cli(tmp_path, world, "verify", world.squad_id, "--json").json()
    assert document["audit"] == {"passed": True}
    assert document["squad"] == {"status": "failed", "review": None}
    report = cli(tmp_path, world, "report", world.squad_id)
    assert "Squad outcome (not judged by the audit): status failed, review none" in report.stdout
    assert report.stdout.splitlines()[-1].startswith("Attestation audit: FAIL")


def test_review_lists_every_missing_evidence_item_at_once_by_its_flag(
    tmp_path: Path, world: RuntimeWorld
) -> None:
    run_to_review(world)
    refused = cli(tmp_path, world, "review", world.squad_id, "--verdict", "fail", "--json")
    assert refused.error_code() == "REVIEW_INVALID"
    message = refused.json()["error"]["message"]
    for flag in ("--contract-check", "--diff-review", "--verification", "--integration", "--issue"):
        assert f"{flag}: " in message, message
    partial = cli(
        tmp_path, world, "review", world.squad_id, "--verdict", "pass", "--diff-review", "ok"
    )
    assert "--diff-review" not in partial.stderr
    assert "--contract-check" in partial.stderr
    assert "--issue" not in partial.stderr, "a pass needs no issue"


def test_the_review_tool_names_every_missing_field_at_once(world: RuntimeWorld) -> None:
    run_to_review(world)
    with pytest.raises(PiSquadError) as refused:
        recorder(world).record_review(
            world.squad_id,
            Verdict.PASS,
            contract_checks=[],
            diff_review="",
            verification_evidence=["pytest"],
            integration_evidence="",
        )
    assert refused.value.code is ErrorCode.REVIEW_INVALID
    message = refused.value.message
    assert "contractChecks: " in message
    assert "diffReview: " in message
    assert "integrationEvidence: " in message
    assert "verificationEvidence" not in message
