"""A ``flow`` tool call longer than the tool-call horizon: the call answers that the flow
continues detached, the live row moves to a widget, and when the flow settles the session gets
a notice and a message with the outcome and the card's lines; its run record ends as any
flow's. The horizon follows the shim's answer bound (``PI_SQUAD_BRIDGE_EXECUTE_TIMEOUT_MS``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dependency_injector import providers

from application.flows.detached_flows import DETACHED_MESSAGE_TYPE
from application.flows.flow_card import FLOW_CARD_TYPE
from application.main_role import MainRole
from application.ports import SessionEvent, SessionNotification
from entrypoints.main_bridge_container import MainBridgeContainer, flow_detach_after
from tests.fakes.child_runtime import FakeChild
from tests.fakes.flows import ScriptedRuntime

CALL = {"agent": "researcher", "task": "t", "why": "a long look"}
WIDGET = "pi-squad-flow-call-1"


class Slow:
    """A child that answers only once released (on the scripted runtime's timer thread)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, child: FakeChild) -> None:
        self.started.set()
        if self.release.wait(10) and not child.killed:
            child.say("found it, late")
            child.settle()


@pytest.fixture
def scripted() -> ScriptedRuntime:
    return ScriptedRuntime(delay=0.0)


@pytest.fixture
def container(tmp_path: Path, scripted: ScriptedRuntime) -> MainBridgeContainer:
    (tmp_path / "project").mkdir()
    built = MainBridgeContainer()
    built.environ.override(
        providers.Object({"PI_SQUAD_ROOT": str(tmp_path / "root"), "HOME": str(tmp_path)})
    )
    built.cwd.override(providers.Object(str(tmp_path / "project")))
    built.driver.runtime.override(providers.Object(scripted.runtime))
    return built


@pytest.fixture
def role(container: MainBridgeContainer) -> Iterator[MainRole]:
    built: MainRole = container.handler(view_interval=0.0, flow_detach_after=0.2)
    yield built
    built.session_shutdown()
    built.detach()


def _wait_for(notes: list[SessionNotification], kind: str) -> SessionNotification:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for note in list(notes):
            message = note.data.get("message")
            if isinstance(message, dict) and message.get("customType") == kind:
                return note
        time.sleep(0.02)
    raise AssertionError(f"no {kind} message")


def _widgets(notes: list[SessionNotification]) -> list[object]:
    return [
        n.data["lines"]
        for n in notes
        if n.event is SessionEvent.UI
        and n.data.get("method") == "setWidget"
        and n.data.get("key") == WIDGET
    ]


def test_a_flow_past_the_horizon_answers_detached_and_reports_when_it_settles(
    role: MainRole, scripted: ScriptedRuntime, container: MainBridgeContainer
) -> None:
    notes: list[SessionNotification] = []
    role.attach(notes.append)
    slow = Slow()
    scripted.scripts["single"] = slow
    answer = role.execute_tool("call-1", "flow", CALL)
    assert slow.started.is_set()
    run_id = answer.details["runId"]
    assert answer.details["detached"] is True
    assert "continues detached" in answer.texts[0]
    assert f"pi-squad flow status {run_id}" in answer.texts[0]
    slow.release.set()
    settled = _wait_for(notes, DETACHED_MESSAGE_TYPE)
    message = settled.data["message"]
    assert "found it, late" in message["content"]
    assert message["details"]["runId"] == run_id
    assert "lines" in message["details"]["entry"]["data"]  # the card's lines
    assert settled.data["options"] == {"deliverAs": "followUp", "triggerTurn": True}
    shown = _widgets(notes)
    assert shown[-1] is None  # cleared once settled
    assert any(isinstance(lines, list) and lines for lines in shown[:-1])
    assert any(
        n.data.get("method") == "notify" and run_id in str(n.data.get("text")) for n in notes
    )
    view = container.flow_journal().find(run_id)
    assert str(view.status) == "completed"


def test_a_flow_within_the_horizon_answers_as_before(
    role: MainRole, scripted: ScriptedRuntime
) -> None:
    answer = role.execute_tool("call-1", "flow", CALL)
    assert "detached" not in answer.details
    assert answer.details["entry"]["customType"] == FLOW_CARD_TYPE


def test_the_session_ending_cancels_a_detached_flow_and_its_record_says_so(
    role: MainRole, scripted: ScriptedRuntime, container: MainBridgeContainer
) -> None:
    slow = Slow()
    scripted.scripts["single"] = slow
    answer = role.execute_tool("call-1", "flow", CALL)
    run_id = answer.details["runId"]
    role.session_shutdown()
    slow.release.set()
    deadline = time.monotonic() + 10
    view = container.flow_journal().find(run_id)
    while not view.record.ended and time.monotonic() < deadline:
        time.sleep(0.02)
        view = container.flow_journal().find(run_id)
    assert str(view.status) == "cancelled"


def test_the_horizon_follows_the_shims_answer_bound() -> None:
    assert flow_detach_after({}) == 840.0
    assert flow_detach_after({"PI_SQUAD_BRIDGE_EXECUTE_TIMEOUT_MS": "60000"}) == 56.0
    for unusable in ("0", "-5", "x", "1.5"):
        assert flow_detach_after({"PI_SQUAD_BRIDGE_EXECUTE_TIMEOUT_MS": unusable}) == 840.0
