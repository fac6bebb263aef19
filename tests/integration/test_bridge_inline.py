"""Methods a role serves inline (``BridgeRole.inline``): answered by the thread that holds the
bridge's input, before it reads on, so such an answer wakes no other thread; every other
method is still served concurrently. A spec child's chunk read and its delivery are the only
inline methods."""

from __future__ import annotations

import queue

import attrs
import pytest

from adapters.bridge import main_bridge_role
from adapters.bridge.protocol import Method
from adapters.bridge.roles import bridge_role_for
from application.child.closed import FailedClosedRole, InertRole
from application.ports import PiEvents
from domain.child_environment import (
    FailedClosedChild,
    LegacyChild,
    MainProcess,
    ProcessRole,
    SpecChild,
)
from tests.integration.bridge_server.support import ScriptedEvents, Served

QUIET = 0.3  # how long a line must stay unanswered to count as not read (a bound, no timing)


def _inline(events: ScriptedEvents) -> Served:
    role = attrs.evolve(main_bridge_role(events), inline=frozenset({Method.EXECUTE_TOOL}))
    return Served(role)


def test_inline_requests_are_answered_in_order_without_a_second_thread() -> None:
    events = ScriptedEvents()
    serving = _inline(events)
    try:
        ids = [
            serving.request("execute_tool", {"toolCallId": f"c{n}", "toolName": "p", "params": n})
            for n in range(50)
        ]
        assert [serving.next()["id"] for _ in ids] == ids
        # Nobody else was woken to await the input meanwhile.
        assert len(serving.server._threads) == 1
        # A method that is not inline still hands the input on while it is served.
        assert serving.result("hello")["role"] == "main"
        assert len(serving.server._threads) == 2
    finally:
        assert serving.finish() == 0


def test_a_line_waits_for_the_inline_answer_before_it_is_read() -> None:
    events = ScriptedEvents()
    serving = _inline(events)
    try:
        slow = serving.request(
            "execute_tool", {"toolCallId": "slow", "toolName": "p", "params": {}}
        )
        hello = serving.request("hello")
        with pytest.raises(queue.Empty):
            serving.lines.get(timeout=QUIET)  # the input is held by the inline read
        events.release.set()
        assert [serving.next()["id"] for _ in range(2)] == [slow, hello]
    finally:
        events.release.set()
        assert serving.finish() == 0


def test_without_inline_methods_a_slow_execution_does_not_hold_the_input() -> None:
    events = ScriptedEvents()
    served = Served(main_bridge_role(events))
    try:
        slow = served.request("execute_tool", {"toolCallId": "slow", "toolName": "p", "params": {}})
        hello = served.request("hello")
        assert served.next()["id"] == hello  # answered while the execution still runs
        events.release.set()
        assert served.next()["id"] == slow
    finally:
        events.release.set()
        assert served.finish() == 0


def test_inline_errors_and_unknown_lines_are_still_answered() -> None:
    serving = _inline(ScriptedEvents())
    try:
        refused = serving.request(
            "execute_tool", {"toolCallId": "c", "toolName": "refuse", "params": {}}
        )
        answer = serving.next()
        assert answer["id"] == refused
        assert answer["error"] == {"code": "tool_failed", "message": "refused: exactly this text"}
        unknown = serving.request("no_such_method")
        assert serving.next()["id"] == unknown
        serving.send_raw(b"not json\n")
        assert serving.result("hello")["role"] == "main"
    finally:
        assert serving.finish() == 0


SPEC_CHILD = SpecChild(
    squad_id="s",
    task_id="t",
    spec_path="/s/spec/spec.v1.json",
    spec_sha256="0" * 64,
    spec_bytes=1,
    chunk_bytes=32768,
    squad_dir="/s",
)


def _events(role: ProcessRole) -> PiEvents:
    return FailedClosedRole(role) if isinstance(role, FailedClosedChild) else InertRole()


@pytest.mark.parametrize(
    ("requested", "process_role", "inline"),
    [
        ("child", SPEC_CHILD, {"execute_tool", "message_end"}),
        ("child", LegacyChild(), set()),
        ("main", MainProcess(), set()),
        ("child", FailedClosedChild("reason"), set()),
    ],
)
def test_only_a_spec_childs_chunk_read_and_delivery_are_inline(
    requested: str, process_role: ProcessRole, inline: set[str]
) -> None:
    role = bridge_role_for(
        requested,  # type: ignore[arg-type]
        process_role,
        main_role=lambda: main_bridge_role(ScriptedEvents()),
        child_events=_events,
    )
    assert set(role.inline) == inline
