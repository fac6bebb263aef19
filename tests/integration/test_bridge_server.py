"""The bridge server in-process over real pipes, with scripted handlers: ordering, hooks, limits,
failures; and how the role is chosen and wired."""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.bridge import (
    BridgeRole,
    BridgeServer,
    Emit,
    Notification,
    bridge_role_for,
    main_bridge_role,
)
from adapters.bridge.protocol import (
    encode_line,
    ok_response,
    registrations_payload,
    tool_result_line,
    tool_result_payload,
)
from application.child.role import FailedClosedRole, InertRole, SpecChildRole
from application.ports import (
    ALLOW,
    CommandAnswer,
    CommandSpec,
    PiEvents,
    Registrations,
    SessionIdentity,
    ToolDecision,
    ToolFailure,
    ToolResult,
    ToolSpec,
)
from domain.child_environment import (
    FailedClosedChild,
    LegacyChild,
    MainProcess,
    ProcessRole,
)
from domain.flows.models import SessionModels
from entrypoints.bridge_container import BridgeContainer
from tests.squads import child_environment, multi_chunk_spec, publish_on_disk

TIMEOUT = 5.0


class ScriptedEvents:
    """A ``PiEvents`` and main-role handler whose answers the test controls."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[str] = []
        self.emit: Emit | None = None
        self.detached = False
        self.models: list[SessionModels] = []
        # How many ``session_models`` the role had heard when each tool call executed.
        self.models_heard: dict[str, int] = {}

    def registrations(self) -> Registrations:
        tool = ToolSpec(name="probe", label="Probe", description="d", parameters={})
        command = CommandSpec(name="probe", description="a probe command")
        return Registrations(
            tools=(tool,), guard=True, message_end=True, bootstrap=True, commands=(command,)
        )

    def session_start(self) -> None:
        self.calls.append("session_start")

    def before_agent_start(self) -> str | None:
        return "appended\u2028text"

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision:
        if tool_name == "explode":
            raise RuntimeError("secret internals")
        return ALLOW if tool_name == "ok" else ToolDecision(block=True)

    def execute_tool(self, tool_call_id: str, tool_name: str, params: object) -> ToolResult:
        self.models_heard[tool_call_id] = len(self.models)
        if tool_call_id == "slow":
            assert self.release.wait(TIMEOUT)
        if tool_name == "refuse":
            raise ToolFailure("refused: exactly this text")
        return ToolResult(texts=(tool_call_id, json.dumps(params)), details={"id": tool_call_id})

    def message_end(self, message: Mapping[str, Any]) -> None:
        self.calls.append(f"message_end:{message.get('toolCallId')}")

    def context(self) -> None:
        self.calls.append("context")

    def session_shutdown(self) -> None:
        self.calls.append("session_shutdown")

    def identify(self, identity: SessionIdentity) -> None:
        if identity != SessionIdentity():  # an older shim's ``{}`` names no session
            self.calls.append(f"identify:{identity.session_file}:{identity.session_id}")

    def attach(self, emit: Emit) -> None:
        self.calls.append("attach")
        self.emit = emit

    def detach(self) -> None:
        self.calls.append("detach")
        self.detached = True

    def session_ui(self, has_ui: bool) -> None:
        self.calls.append(f"session_ui:{has_ui}")

    def cancel_tool(self, tool_call_id: str) -> None:
        self.calls.append(f"cancel_tool:{tool_call_id}")

    def ui_answer(self, request_id: str, confirmed: bool) -> None:
        self.calls.append(f"ui_answer:{request_id}:{confirmed}")

    def session_models(self, models: SessionModels) -> None:
        self.models.append(models)

    def command(self, name: str, args: str) -> CommandAnswer:
        self.calls.append(f"command:{name}:{args}")
        if args == "refuse":
            raise ToolFailure("no such squad: exactly this text")
        return CommandAnswer(notify=f"{name} {args}", level="warning")


class Served:
    """A ``BridgeServer`` on a thread, fed and read through OS pipes like a subprocess."""

    def __init__(self, role: BridgeRole, *, read_output: bool = True, **options: Any) -> None:
        in_read, in_write = os.pipe()
        out_read, out_write = os.pipe()
        self.input = os.fdopen(in_write, "wb")
        self._server_out = os.fdopen(out_write, "wb")
        self.output = os.fdopen(out_read, "rb")
        self.log = io.StringIO()
        self.server = BridgeServer(
            role, stdin=os.fdopen(in_read, "rb"), stdout=self._server_out, log=self.log, **options
        )
        self.exit_code: int | None = None
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._serving = threading.Thread(target=self._serve, daemon=True)
        if read_output:
            threading.Thread(target=self._read, daemon=True).start()
        else:  # nobody reads: the shim is gone, writes fail with EPIPE
            self.output.close()
        self._serving.start()
        self._next_id = 1

    def _serve(self) -> None:
        self.exit_code = self.server.serve()
        with contextlib.suppress(BrokenPipeError):  # what the vanished reader never took
            self._server_out.close()

    def _read(self) -> None:
        for line in iter(self.output.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def send_raw(self, data: bytes) -> None:
        self.input.write(data)
        self.input.flush()

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> int:
        request_id = self._next_id
        self._next_id += 1
        line = {"v": 1, "id": request_id, "method": method, "params": dict(params or {})}
        self.send_raw(json.dumps(line).encode() + b"\n")
        return request_id

    def next(self) -> dict[str, Any]:
        line = self.lines.get(timeout=TIMEOUT)
        assert line is not None, self.log.getvalue()
        assert line.endswith(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def result(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        request_id = self.request(method, params)
        response = self.next()
        assert response["id"] == request_id
        assert response["ok"] is True, response
        return response["result"]

    def finish(self) -> int | None:
        self.input.close()
        self._serving.join(TIMEOUT)
        assert not self._serving.is_alive()
        return self.exit_code


@pytest.fixture
def events() -> ScriptedEvents:
    return ScriptedEvents()


@pytest.fixture
def served(events: ScriptedEvents) -> Iterator[Served]:
    serving = Served(main_bridge_role(events))
    yield serving
    events.release.set()
    if not serving.input.closed:
        serving.finish()


def test_a_slow_execution_does_not_hold_back_a_later_one(
    served: Served, events: ScriptedEvents
) -> None:
    slow = served.request("execute_tool", {"toolCallId": "slow", "toolName": "p", "params": 1})
    fast = served.request("execute_tool", {"toolCallId": "fast", "toolName": "p", "params": 2})
    first = served.next()
    assert first["id"] == fast
    assert first["result"] == {"texts": ["fast", "2"], "details": {"id": "fast"}}
    events.release.set()
    second = served.next()
    assert second["id"] == slow
    assert second["result"]["texts"] == ["slow", "1"]


def test_at_most_workers_requests_are_served_at_once_and_the_rest_wait_their_turn(
    events: ScriptedEvents,
) -> None:
    serving = Served(main_bridge_role(events), workers=2)
    try:
        for _ in range(2):
            serving.request("execute_tool", {"toolCallId": "slow", "toolName": "p", "params": 0})
        fast = serving.request("execute_tool", {"toolCallId": "fast", "toolName": "p", "params": 1})
        with pytest.raises(queue.Empty):
            serving.lines.get(timeout=0.3)  # both threads are held: nobody reads the third
        events.release.set()
        answered = {serving.next()["id"] for _ in range(3)}
        assert fast in answered
    finally:
        events.release.set()
        assert serving.finish() == 0


def test_many_concurrent_requests_each_get_their_own_whole_answer(served: Served) -> None:
    ids = {
        served.request("execute_tool", {"toolCallId": f"c{n}", "toolName": "p", "params": n}): n
        for n in range(300)
    }
    for _ in range(len(ids)):
        response = served.next()
        n = ids.pop(response["id"])
        assert response["result"]["details"] == {"id": f"c{n}"}
    assert not ids


def test_hello_answers_the_role_and_its_registrations(served: Served) -> None:
    assert served.result("hello") == {
        "role": "main",
        "protocol": 1,
        "registrations": {
            "tools": [{"name": "probe", "label": "Probe", "description": "d", "parameters": {}}],
            "commands": [{"name": "probe", "description": "a probe command"}],
            "guard": True,
            "messageEnd": True,
            "bootstrap": True,
            "lifecycle": True,
        },
    }


def test_answers_carry_the_handlers_values(served: Served) -> None:
    assert served.result("before_agent_start") == {"append": "appended\u2028text"}
    assert served.result("tool_call", {"toolCallId": "a", "toolName": "ok", "input": {}}) == {
        "block": False
    }
    assert served.result("tool_call", {"toolCallId": "a", "toolName": "no", "input": {}}) == {
        "block": True
    }


def test_handler_failures_become_error_answers(served: Served) -> None:
    served.request("tool_call", {"toolCallId": "a", "toolName": "explode", "input": {}})
    exploded = served.next()
    assert exploded["ok"] is False
    assert exploded["error"] == {"code": "internal", "message": "tool_call failed: RuntimeError"}
    assert "secret internals" in served.log.getvalue()  # the traceback goes to stderr only
    served.request("execute_tool", {"toolCallId": "a", "toolName": "refuse", "params": {}})
    assert served.next()["error"] == {
        "code": "tool_failed",
        "message": "refused: exactly this text",
    }
    assert served.result("hello")["role"] == "main"


def test_notifications_flow_between_session_start_and_shutdown(
    served: Served, events: ScriptedEvents
) -> None:
    served.result("hello")
    assert "attach" not in events.calls, "not before the session exists"
    served.result("session_start")
    # Without ``hasUI`` the session is taken to have no UI (nobody can be asked).
    assert events.calls == ["session_ui:False", "session_start", "attach"]
    assert events.emit is not None
    events.emit(Notification("send_message", {"message": {"content": "hi"}}))
    assert served.next() == {
        "v": 1,
        "event": "send_message",
        "data": {"message": {"content": "hi"}},
    }
    served.result("session_start")
    assert events.calls.count("attach") == 1
    served.result("message_end", {"message": {"role": "toolResult", "toolCallId": "x"}})
    served.result("session_shutdown")
    assert events.calls[-2:] == ["session_shutdown", "detach"]
    assert served.finish() == 0
    assert events.calls.count("detach") == 1


def test_session_controls_reach_the_role(served: Served, events: ScriptedEvents) -> None:
    served.result("session_start", {"hasUI": True})
    assert served.result("cancel_tool", {"toolCallId": "call-9"}) is None
    assert served.result("ui_answer", {"requestId": "q1", "confirmed": True}) is None
    assert events.calls[:2] == ["session_ui:True", "session_start"]
    assert events.calls[-2:] == ["cancel_tool:call-9", "ui_answer:q1:True"]
    served.request("ui_answer", {"requestId": "q1", "confirmed": "yes"})
    assert served.next()["error"]["code"] == "invalid_params"


SESSION_MODELS = {
    "model": {"provider": "acme", "id": "mid"},
    "thinking": "high",
    "available": [
        {"provider": "acme", "id": "mid", "reasoning": True, "cost": {"input": 1, "output": 5}},
        {"provider": "acme"},  # no id: skipped, and counted
    ],
}


def test_the_session_models_reach_the_role_before_the_call_they_came_with(
    served: Served, events: ScriptedEvents
) -> None:
    execute = {"toolCallId": "t1", "toolName": "probe", "params": {}}
    served.result("execute_tool", {**execute, "sessionModels": SESSION_MODELS})
    assert events.models_heard["t1"] == 1
    (heard,) = events.models
    assert (heard.model, heard.provider, heard.thinking) == ("acme/mid", "acme", "high")
    assert [m.ref for m in heard.available.models] == ["acme/mid"]
    assert heard.available.source == "this session's model registry"
    assert heard.available.warning == "1 malformed model entries skipped"
    served.result("command", {"name": "probe", "args": "", "sessionModels": {"available": None}})
    assert events.calls[-1] == "command:probe:"
    assert events.models[-1].model is None
    assert events.models[-1].available.problem == "the session sent none"


def test_a_malformed_session_models_never_fails_the_call(
    served: Served, events: ScriptedEvents
) -> None:
    execute = {"toolCallId": "t2", "toolName": "probe", "params": {}}
    texts = served.result("execute_tool", {**execute, "sessionModels": "acme/mid"})["texts"]
    assert texts[0] == "t2"
    assert events.models == []
    assert "ignored a sessionModels that is not an object" in served.log.getvalue()
    odd = {"model": {"provider": 7, "id": "x"}, "thinking": "extreme", "available": [1]}
    served.result("execute_tool", {**execute, "sessionModels": odd})
    (heard,) = events.models
    assert (heard.model, heard.thinking, heard.available.models) == (None, None, ())


def test_only_the_registrations_asking_for_session_models_say_so() -> None:
    tool = ToolSpec(name="flow", label="F", description="d", parameters={}, session_models=True)
    command = CommandSpec(name="flows", description="c", session_models=True)
    plain = ToolSpec(name="squad", label="S", description="d", parameters={})
    payload = registrations_payload(
        Registrations(tools=(tool, plain), commands=(command,)), lifecycle=True
    )
    assert [t.get("sessionModels") for t in payload["tools"]] == [True, None]
    assert payload["commands"] == [{"name": "flows", "description": "c", "sessionModels": True}]


def test_session_start_names_the_session_to_the_main_role_before_it_attaches(
    served: Served, events: ScriptedEvents
) -> None:
    served.result("hello")
    served.result("session_start", {"sessionFile": "/home/u/.pi/s/1.jsonl", "sessionId": "abc"})
    assert events.calls == [
        "session_ui:False",
        "identify:/home/u/.pi/s/1.jsonl:abc",
        "session_start",
        "attach",
    ]


@pytest.mark.parametrize("params", [{"sessionFile": 7}, {"sessionFile": ""}, {"sessionId": []}])
def test_a_malformed_session_identity_is_refused(
    served: Served, events: ScriptedEvents, params: dict[str, Any]
) -> None:
    served.request("session_start", params)
    answer = served.next()
    assert answer["ok"] is False
    assert answer["error"]["code"] == "invalid_params"
    assert events.calls == []


def test_a_command_is_served_by_the_role_and_answered_as_ui(
    served: Served, events: ScriptedEvents
) -> None:
    answer = served.result("command", {"name": "squad", "args": "status abc"})
    assert answer == {
        "ui": {"method": "notify", "text": "squad status abc", "level": "warning"},
        "message": None,
    }
    assert events.calls[-1] == "command:squad:status abc"
    assert served.result("command", {"name": "squad"})["ui"]["text"] == "squad ", "args default"
    request_id = served.request("command", {"name": "squad", "args": "refuse"})
    refused = served.next()
    assert refused["id"] == request_id
    assert refused["error"] == {
        "code": "tool_failed",
        "message": "no such squad: exactly this text",
    }
    request_id = served.request("command", {"name": "squad", "args": 7})
    assert served.next()["error"]["code"] == "invalid_params"
    assert served.finish() == 0


def test_a_role_without_commands_refuses_the_command_method() -> None:
    served = Served(BridgeRole(name="child-legacy", events=InertRole(), lifecycle=False))
    request_id = served.request("command", {"name": "squad", "args": ""})
    answer = served.next()
    assert answer["id"] == request_id
    assert answer["error"]["code"] == "unknown_method"
    assert "registers no commands" in answer["error"]["message"]
    assert served.finish() == 0


def test_end_of_input_detaches_notifications(served: Served, events: ScriptedEvents) -> None:
    served.result("session_start")
    assert served.finish() == 0
    assert events.detached


def test_the_spec_child_role_settles_its_deliveries_at_shutdown(
    tmp_path: Path,
) -> None:
    published = publish_on_disk(tmp_path, multi_chunk_spec(2))
    container = BridgeContainer()
    container.environ.override(providers.Object(dict(child_environment(published, "build"))))
    role = container.bridge_role()
    assert isinstance(role.events, SpecChildRole)
    assert role.on_shutdown == role.events.context
    assert role.events.registrations().context


def test_an_oversized_line_is_discarded_and_the_next_one_served(events: ScriptedEvents) -> None:
    served = Served(main_bridge_role(events), max_line_bytes=200)
    served.send_raw(b'{"v":1,"id":1,"method":"hello","params":{"pad":"' + b"x" * 5000 + b'"}}\n')
    assert served.result("tool_call", {"toolCallId": "a", "toolName": "ok", "input": 0}) == {
        "block": False
    }
    assert "discarded an input line longer than 200 bytes" in served.log.getvalue()
    assert served.finish() == 0


def test_a_last_line_without_newline_is_still_served(served: Served) -> None:
    served.send_raw(b'{"v":1,"id":41,"method":"hello"}')
    served.input.close()
    assert served.next()["id"] == 41
    assert served.lines.get(timeout=TIMEOUT) is None


def test_a_vanished_reader_does_not_stop_the_bridge(events: ScriptedEvents) -> None:
    served = Served(main_bridge_role(events), read_output=False)
    for _ in range(3):
        served.request("hello")
    assert served.finish() == 0
    assert "output closed" in served.log.getvalue()


def test_a_lone_surrogate_is_sent_as_an_ascii_escape() -> None:
    line = encode_line({"text": "a\ud800b", "ok": "\u2028é"})
    assert line == b'{"text":"a\\ud800b","ok":"\\u2028\\u00e9"}\n'
    assert encode_line({"ok": "\u2028é"}) == '{"ok":"\u2028é"}\n'.encode()


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.text(max_size=40) | st.text(min_size=1024, max_size=1500), max_size=3),
    request_id=st.integers(min_value=0, max_value=2**53),
    details=st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=20)),
)
def test_a_tool_result_line_is_the_generic_encoding(
    texts: list[str], request_id: int, details: dict[str, object]
) -> None:
    # The execute_tool answer escapes its texts on their UTF-8 bytes; it must stay the line
    # the generic encoder writes (a lone surrogate included: then that whole line).
    result = ToolResult(texts=tuple(texts), details=details)
    line = tool_result_line(request_id, result)
    generic = encode_line(ok_response(request_id, tool_result_payload(result)))
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert line == generic


@pytest.mark.parametrize(
    "text",
    [
        'a "quoted" \\ back\\slash\n\r\t\b\f end',
        "control \x00 \x01 \x1f \x7f kept apart",
        "non-ASCII é ü 漢字 😀 and \u2028 \u2029 raw",
        "lone \ud800 surrogate",
        "",
    ],
)
def test_every_escape_json_requires_is_written_as_json_writes_it(text: str) -> None:
    result = ToolResult(texts=(text, text * 100), details={})
    line = tool_result_line(3, result)
    assert json.loads(line)["result"]["texts"] == [text, text * 100]
    assert line == encode_line(ok_response(3, tool_result_payload(result)))


# -- which role a bridge serves ---------------------------------------------------------------


def _choose(requested: str, process_role: ProcessRole) -> BridgeRole:
    def child_events(role: ProcessRole) -> PiEvents:
        return FailedClosedRole(role) if isinstance(role, FailedClosedChild) else InertRole()

    return bridge_role_for(
        requested,  # type: ignore[arg-type]
        process_role,
        main_role=lambda: BridgeRole(name="main", events=InertRole()),
        child_events=child_events,
    )


@pytest.mark.parametrize(
    ("requested", "process_role", "name", "lifecycle"),
    [
        ("main", MainProcess(), "main", True),
        ("child", LegacyChild(), "child-legacy", False),
        ("child", FailedClosedChild("partial"), "child-failed-closed", True),
        ("main", FailedClosedChild("partial"), "child-failed-closed", True),
        ("main", LegacyChild(), "child-failed-closed", True),
        ("child", MainProcess(), "child-failed-closed", True),
    ],
)
def test_the_requested_role_and_the_environment_must_agree(
    requested: str, process_role: ProcessRole, name: str, lifecycle: bool
) -> None:
    role = _choose(requested, process_role)
    assert role.name == name
    assert role.lifecycle is lifecycle
    if name == "child-failed-closed":
        decision = role.events.tool_call("c", "read", {})
        assert decision.block


def test_the_container_builds_a_spec_child_from_the_environment(tmp_path: Path) -> None:
    published = publish_on_disk(tmp_path, multi_chunk_spec(2))
    container = BridgeContainer()
    container.environ.override(providers.Object(dict(child_environment(published, "build"))))
    container.requested_role.override(providers.Object("child"))
    role = container.bridge_role()
    assert role.name == "child-spec"
    assert isinstance(role.events, SpecChildRole)
    assert role.events.registrations().guard


def test_the_main_role_is_replaceable_in_the_container(events: ScriptedEvents) -> None:
    container = BridgeContainer()
    container.environ.override(providers.Object({}))
    container.requested_role.override(providers.Object("main"))
    default = container.bridge_role().events.registrations()
    assert next(tool.name for tool in default.tools) == "squad"
    assert not default.guard
    container.main_role.override(providers.Factory(main_bridge_role, events))
    role = container.bridge_role()
    assert role.events is events
    assert role.notifications is events
    assert role.on_shutdown is not None
