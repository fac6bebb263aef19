"""The role a bridge process builds from its environment: a legacy child registers nothing, a
partial or disagreeing environment fails closed, and the main role registers the squad tools and
refuses what the CLI refuses."""

from __future__ import annotations

import json
from pathlib import Path

from application.child.role import READER_TOOL
from application.squads.create_squad import PublishedSquad
from domain.spec.documents import tool_parameters
from tests.integration.bridge_protocol.support import TASK, StartBridge
from tests.squads import BAD_NEW_TASKS, child_environment


def test_a_legacy_child_registers_nothing(start_bridge: StartBridge) -> None:
    legacy = start_bridge({"PI_SQUAD_CHILD": "1"})
    assert legacy.result("hello") == {
        "role": "child-legacy",
        "protocol": 1,
        "registrations": {
            "tools": [],
            "commands": [],
            "guard": False,
            "messageEnd": False,
            "bootstrap": False,
            "lifecycle": False,
        },
    }
    assert legacy.close() == 0


def test_a_partial_environment_fails_closed(
    published: PublishedSquad, start_bridge: StartBridge
) -> None:
    environment = dict(child_environment(published, TASK))
    del environment["PI_SQUAD_SPEC_SHA256"]
    partial = start_bridge(environment)
    hello = partial.result("hello")
    assert hello["role"] == "child-failed-closed"
    assert hello["registrations"]["tools"] == []
    assert hello["registrations"]["guard"] is True
    for tool in ("bash", READER_TOOL, "read"):
        decision = partial.result("tool_call", {"toolCallId": "c", "toolName": tool, "input": {}})
        assert decision["block"] is True
        assert "PI_SQUAD_SPEC_SHA256" in decision["reason"]
    response = partial.call(
        "execute_tool", {"toolCallId": "c", "toolName": READER_TOOL, "params": {"index": 0}}
    )
    assert response["error"]["code"] == "tool_failed"
    assert "failed closed" in partial.result("before_agent_start")["append"]
    assert partial.close() == 0


def test_the_main_role_registers_the_squad_tools_and_no_guard(
    start_bridge: StartBridge,
) -> None:
    main = start_bridge({}, role="main")
    hello = main.result("hello")
    assert hello["role"] == "main"
    names = [tool["name"] for tool in hello["registrations"]["tools"]]
    assert names == [
        "squad",
        "squad_status",
        "squad_modify",
        "squad_review",
        "squad_message",
        "flow",
    ]
    assert "squad_spec_read" not in names
    assert hello["registrations"]["guard"] is False
    assert hello["registrations"]["lifecycle"] is True
    # The flow faces: /flows beside /squad, the card's renderer, the session controls.
    assert [c["name"] for c in hello["registrations"]["commands"]] == ["squad", "flows"]
    assert hello["registrations"]["entryRenderers"] == ["pi-squad-flow-card"]
    assert main.result("session_start", {"hasUI": True}) is None
    assert main.result("cancel_tool", {"toolCallId": "not-running"}) is None
    assert main.result("ui_answer", {"requestId": "unknown", "confirmed": False}) is None
    assert main.result("session_shutdown") is None
    assert main.close() == 0


def test_each_squad_tool_registers_its_schema_file_as_parameters(
    start_bridge: StartBridge,
) -> None:
    main = start_bridge({}, role="main")
    tools = {tool["name"]: tool for tool in main.result("hello")["registrations"]["tools"]}
    for name in ("status", "modify", "review", "message"):
        assert tools[f"squad_{name}"]["parameters"] == tool_parameters(f"squad-{name}-call")
    assert tools["squad"]["parameters"] == tool_parameters("squad-call")
    # Self-contained: squad_modify's task is the new-task schema, inlined.
    task = tools["squad_modify"]["parameters"]["properties"]["task"]
    assert task["required"] == ["id", "title", "agent"]
    assert "$ref" not in json.dumps(tools)
    assert main.close() == 0


def test_the_main_role_refuses_the_new_tasks_the_cli_refuses(
    tmp_path: Path, published: PublishedSquad, start_bridge: StartBridge
) -> None:
    """``squad_modify`` add_task checks its task as ``--task-json`` does, before any change."""
    root = tmp_path / "root"
    main = start_bridge({"PI_SQUAD_ROOT": str(root)}, role="main")
    main.result("hello")
    squad_id = published.squad.id
    before = sorted(p.name for p in (root / squad_id).iterdir())
    for number, (task, complaint) in enumerate(BAD_NEW_TASKS):
        params = {"action": "add_task", "squadId": squad_id, "task": task}
        response = main.call(
            "execute_tool",
            {"toolCallId": f"m{number}", "toolName": "squad_modify", "params": params},
        )
        assert response["ok"] is False, task
        assert response["error"]["code"] == "tool_failed"
        message = response["error"]["message"]
        assert message.startswith("TASK_INPUT_INVALID: squad_modify: "), message
        assert complaint in message, message
    assert sorted(p.name for p in (root / squad_id).iterdir()) == before
    others: tuple[tuple[str, dict[str, object], str], ...] = (
        ("squad_modify", {"action": "teleport"}, "TASK_INPUT_INVALID: squad_modify: 'action'"),
        ("squad_review", {"verdict": "pass"}, "REVIEW_INVALID: Review rejected: missing"),
        ("squad_message", {"message": 5}, "MESSAGE_INVALID: squad_message: 'message' must be"),
        ("squad_status", {"squadId": 5}, "USAGE: squad_status: 'squadId' must be a string"),
    )
    for tool, arguments, complaint in others:
        response = main.call(
            "execute_tool", {"toolCallId": "o", "toolName": tool, "params": arguments}
        )
        assert response["error"]["message"].startswith(complaint), response
    assert main.close() == 0


def test_a_role_that_disagrees_with_the_environment_fails_closed(
    published: PublishedSquad, start_bridge: StartBridge
) -> None:
    as_main = start_bridge(child_environment(published, TASK), role="main")
    as_child = start_bridge({}, role="child")
    for bridge in (as_main, as_child):
        assert bridge.result("hello")["role"] == "child-failed-closed"
        decision = bridge.result("tool_call", {"toolCallId": "c", "toolName": "bash", "input": 0})
        assert decision["block"] is True
