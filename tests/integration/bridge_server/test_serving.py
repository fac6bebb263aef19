"""The bridge server in-process over real pipes: concurrent executions and their limit, hello and
answers, handler failures, notifications, session controls, session models and identity,
commands, and what shutdown settles."""

from __future__ import annotations

import queue
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from adapters.bridge import BridgeRole, Notification, main_bridge_role
from adapters.bridge.protocol import registrations_payload
from application.child.role import InertRole, SpecChildRole
from application.ports import CommandSpec, Registrations, ToolSpec
from entrypoints.bridge_container import BridgeContainer
from tests.integration.bridge_server.support import ScriptedEvents, Served
from tests.squads import child_environment, multi_chunk_spec, publish_on_disk


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
