"""Issue 6, end-to-end tests 1, 3, 6 and 7 with real Pi 0.80.10: a main Pi with the package
loaded starts a file squad through its ``squad`` tool; the squad's children are real Pi
processes on the scripted model; plus the rejection of a mixed call, a lazy child that never
completes, and a legacy inline squad with no reader and no guard."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from adapters.pi_runtime import PiRuntime
from domain.squad.model import SquadStatus, TaskStatus
from tests.e2e.main_pi import MainPiWorld, call_tool_once
from tests.e2e.pi_rpc_client import PiRpcError
from tests.e2e.real_pi import demo_world

pytestmark = pytest.mark.realpi


@pytest.fixture
def world(tmp_path: Path, runtime: PiRuntime) -> Iterator[MainPiWorld]:
    yield from demo_world(MainPiWorld, tmp_path, runtime)


def call_squad(
    world: MainPiWorld,
    arguments: Mapping[str, object],
    session: tuple[str, ...] = ("--no-session",),
) -> str:
    client = world.main_pi(session)
    try:
        text, failed = call_tool_once(client, "Start the squad.", "squad", arguments)
        if failed:
            return f"ERROR {text}"
        squad_ids = world.squads()
        assert squad_ids
        world.wait_for_status(squad_ids[-1], {SquadStatus.REVIEW, SquadStatus.FAILED})
        return text
    finally:
        client.close()


def test_main_pi_starts_a_file_squad_that_reaches_review_with_valid_attestations(
    world: MainPiWorld,
) -> None:
    digest = hashlib.sha256((world.project / "demo.spec.json").read_bytes()).hexdigest()
    text = call_squad(world, {"specFile": "demo.spec.json", "specSha256": digest})
    assert "started with 4 tasks" in text
    (squad_id,) = world.squads()
    snapshot = world.store().snapshot(squad_id)
    assert snapshot.squad.status is SquadStatus.REVIEW
    verified = world.cli("verify", squad_id, "--json")
    assert verified.returncode == 0, verified.stdout
    report = json.loads(verified.stdout)
    assert {t["attestation"] for t in report["tasks"]} == {"valid"}


def test_the_main_pi_session_that_starts_a_squad_is_recorded_as_its_owner(
    world: MainPiWorld,
) -> None:
    sessions = world.base / "main-sessions"
    digest = hashlib.sha256((world.project / "demo.spec.json").read_bytes()).hexdigest()
    arguments = {"specFile": "demo.spec.json", "specSha256": digest}
    call_squad(world, arguments, ("--session-dir", str(sessions)))
    (squad_id,) = world.squads()
    owner = world.store().snapshot(squad_id).squad.session_file
    assert owner is not None, "the shim named the session at session_start"
    (session_file,) = sessions.glob("*.jsonl")
    assert Path(owner) == session_file, "Pi's own session file of the main session"


def test_squad_call_with_both_spec_file_and_goal_is_rejected_with_nothing_published(
    world: MainPiWorld,
) -> None:
    digest = hashlib.sha256((world.project / "demo.spec.json").read_bytes()).hexdigest()
    text = call_squad(world, {"specFile": "demo.spec.json", "specSha256": digest, "goal": "x"})
    assert text.startswith("ERROR")
    assert world.squads() == []
    assert not world.root.exists() or not [
        p for p in world.root.iterdir() if not p.name.startswith(".")
    ]


def test_lazy_child_is_rejected_and_reopened_on_its_session_never_done(world: MainPiWorld) -> None:
    for definition in world.agents.glob("*.json"):
        document = json.loads(definition.read_text())
        document["prompt"] = document["prompt"].replace(
            "scripted-policy: diligent", "scripted-policy: lazy"
        )
        definition.write_text(json.dumps(document))
    digest = hashlib.sha256((world.project / "demo.spec.json").read_bytes()).hexdigest()
    client = world.main_pi()
    try:
        prompt = (
            "Start.\nscripted-policy: tool-once\nscripted-tool: squad\n"
            f"scripted-args: {json.dumps({'specFile': 'demo.spec.json', 'specSha256': digest})}"
        )
        client.prompt(prompt, timeout=90)
        (squad_id,) = world.squads()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            design = world.store().snapshot(squad_id).tasks["design"]
            if design.status is TaskStatus.SUSPENDED:
                break
            time.sleep(0.25)
        design = world.store().snapshot(squad_id).tasks["design"]
        assert design.status is TaskStatus.SUSPENDED, "three rejections suspend, never done"
        assert design.completed is None
        assert design.output is None
        assert design.session is not None
        sessions = list((world.root / squad_id / "design" / "session").glob("*.jsonl"))
        assert len(sessions) == 1, "every respawn resumed the same task-owned session"
        history = world.store().messages(squad_id, "design")
        assert sum(m.text.startswith("Completion rejected") for m in history) >= 2
        assert world.store().snapshot(squad_id).tasks["build"].status is TaskStatus.BLOCKED
    finally:
        client.close()


def test_legacy_inline_squad_runs_without_reader_or_guard(world: MainPiWorld) -> None:
    arguments = {
        "goal": "Say hello",
        "tasks": [{"id": "hello", "title": "Say hello", "agent": "docs", "description": "Say hi."}],
    }
    text = call_squad(world, arguments)
    assert "started with 1 tasks" in text
    (squad_id,) = world.squads()
    snapshot = world.store().snapshot(squad_id)
    assert snapshot.squad.spec is None
    assert snapshot.squad.status is SquadStatus.REVIEW
    task_dir = world.root / squad_id / "hello"
    assert not (task_dir / "spec-read-state.json").exists()
    assert not (task_dir / "spec-read-attestation.json").exists()
    assert snapshot.tasks["hello"].status is TaskStatus.DONE


def is_ui(method: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r.get("type") == "extension_ui_request" and r.get("method") == method


def test_the_main_pi_shows_the_squad_live_and_answers_slash_squad(world: MainPiWorld) -> None:
    digest = hashlib.sha256((world.project / "demo.spec.json").read_bytes()).hexdigest()
    client = world.main_pi()
    try:
        commands = client.command({"type": "get_commands"})["commands"]
        assert "squad" in [c["name"] for c in commands if c.get("source") == "extension"]
        arguments = {"specFile": "demo.spec.json", "specSha256": digest}
        prompt = (
            "Start.\nscripted-policy: tool-once\nscripted-tool: squad\n"
            f"scripted-args: {json.dumps(arguments)}"
        )
        records = client.prompt(prompt, timeout=90)
        (squad_id,) = world.squads()
        # The squad tool's row showed its slow step while it ran.
        updates = [r for r in records if r.get("type") == "tool_execution_update"]
        assert any("Reading demo.spec.json" in json.dumps(r) for r in updates), updates
        # The widget above the editor: one line per task with its read progress.
        widget = client.find(
            lambda r: (
                is_ui("setWidget")(r)
                and any(
                    re.search(r"attestation (not started|reading \d+/\d+)", line)
                    for line in r.get("widgetLines") or []
                )
            ),
            timeout=60,
        )
        assert widget["widgetLines"][0].startswith(f"squad {squad_id} · ")
        status = client.find(lambda r: is_ui("setStatus")(r) and "statusText" in r, timeout=10)
        assert status["statusText"].startswith(f"squad {squad_id}: ")
        world.wait_for_status(squad_id, {SquadStatus.REVIEW})
        gate = client.find(
            lambda r: (
                r.get("type") == "message_end"
                and "awaiting orchestrator review" in str(r["message"].get("content"))
            ),
            timeout=60,
        )
        assert "attestation valid" in str(gate["message"]["content"])
        client.send({"type": "prompt", "message": f"/squad status {squad_id[:10]}"})
        try:
            card = client.find(
                lambda r: (
                    r.get("type") == "message_end"
                    and f"Squad: {squad_id}" in str(r["message"].get("content"))
                ),
                timeout=30,
            )
        except PiRpcError as failure:
            failure.add_note(world.main_model_calls())
            raise
        assert card["message"].get("customType") == "squad-card"
    finally:
        client.close()
