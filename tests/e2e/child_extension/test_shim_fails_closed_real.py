"""The pi-squad package's shim under real Pi 0.80.10 fails closed: a failing, missing or refusing
bridge blocks the tool call, and a bridge's events reach the session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from application.child.role import READER_TOOL
from tests.e2e.child_extension.support import (
    BRIDGE_ARGV,
    Launcher,
    Squad,
    bash_attempt,
    fake_bridge,
    tool_ends,
)

pytestmark = pytest.mark.realpi


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("die", "bridge exited with status 3"),
        ("hang", "no answer to tool_call within 400 ms"),
        ("garbage", "malformed bridge output"),
        ("bad-reply", "malformed tool_call reply"),
    ],
)
def test_a_failing_bridge_blocks_the_tool_call(
    launcher: Launcher, squad: Squad, tmp_path: Path, mode: str, cause: str
) -> None:
    environment = {**squad.environment(), "PI_SQUAD_BRIDGE_TIMEOUT_MS": "400"}
    end, pi = bash_attempt(launcher, squad, fake_bridge(tmp_path, mode), environment)
    assert end["isError"], pi.stderr()
    text = end["result"]["content"][0]["text"]
    assert text.startswith("pi-squad bridge failure: ")
    assert cause in text


def test_a_bridge_that_cannot_start_blocks_everything(
    launcher: Launcher, squad: Squad, tmp_path: Path
) -> None:
    missing = [str(tmp_path / "no-such-bridge")]
    end, _ = bash_attempt(launcher, squad, missing, squad.environment())
    assert end["isError"]
    text = end["result"]["content"][0]["text"]
    assert text.startswith("pi-squad bridge failure: hello failed")


def test_a_partial_child_environment_fails_closed_through_the_real_bridge(
    launcher: Launcher, squad: Squad
) -> None:
    partial = {"PI_SQUAD_CHILD": "1", "PI_SQUAD_ID": squad.published.squad.id}
    end, _ = bash_attempt(launcher, squad, BRIDGE_ARGV, partial)
    assert end["isError"]
    assert "failed closed (missing environment variables" in end["result"]["content"][0]["text"]


def test_a_refused_execution_reaches_the_model_as_the_bridge_message(
    launcher: Launcher, squad: Squad, tmp_path: Path
) -> None:
    records, _, _ = launcher.run(
        "diligent",
        squad.environment(),
        squad.workdir,
        bridge=fake_bridge(tmp_path, "refuse-execute"),
    )
    ends = tool_ends(records)
    assert ends
    assert all(e["toolName"] == READER_TOOL and e["isError"] for e in ends)
    assert {e["result"]["content"][0]["text"] for e in ends} == {"scripted refusal of chunk 0"}


def test_bridge_events_are_delivered_into_the_session(
    launcher: Launcher, squad: Squad, tmp_path: Path
) -> None:
    run = launcher.run(
        "echo", {}, squad.workdir, message="hello", bridge=fake_bridge(tmp_path, "notify")
    )
    (exchange,) = run.server.exchanges()
    assert "squad-note: task 7 is done" in json.dumps(exchange.request["messages"])
