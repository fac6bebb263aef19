"""A ``bash-ro`` flow child's bridge: the parent's spawn environment makes it one, and it then
screens every ``bash`` call (blocks with a reason unless read-only), lets other tools pass, and
fails closed on a malformed call or an unusable environment value."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from adapters.bridge.roles import bridge_role_for
from application.child.closed import FailedClosedRole, closed_role_for
from application.child.readonly_bash import ReadOnlyBashRole
from domain.child_environment import (
    BASH_READONLY,
    CHILD_FLAG,
    ChildEnvironment,
    FailedClosedChild,
    LegacyChild,
    MainProcess,
    ReadOnlyBashChild,
    flow_child_environ,
)
from entrypoints.children import bridge_command
from tests.integration.bridge_once import Request, serve_once


def _role(environ: dict[str, str]) -> object:
    return ChildEnvironment.from_environ(environ, "posix")


def test_the_spawn_environment_decides_a_read_only_bash_child() -> None:
    assert _role(flow_child_environ(read_only_bash=True)) == ReadOnlyBashChild()
    assert _role(flow_child_environ(read_only_bash=False)) == LegacyChild()
    # Any other value fails closed; outside a child the variable means nothing.
    assert isinstance(_role({CHILD_FLAG: "1", BASH_READONLY: "0"}), FailedClosedChild)
    assert isinstance(_role({CHILD_FLAG: "1", BASH_READONLY: ""}), FailedClosedChild)
    assert _role({BASH_READONLY: "1"}) == MainProcess()


def test_the_bridge_serves_the_screen_for_a_bash_ro_child() -> None:
    role = bridge_role_for(
        "child",
        ReadOnlyBashChild(),
        main_role=lambda: pytest.fail("not the main role"),
        child_events=closed_role_for,  # type: ignore[arg-type]
    )
    assert role.name == "child-bash-ro"
    assert isinstance(role.events, ReadOnlyBashRole)
    assert role.events.registrations().guard


@pytest.mark.parametrize(
    ("tool", "tool_input", "blocked"),
    [
        ("bash", {"command": "ls -la"}, False),
        ("bash", {"command": "git log --oneline -3"}, False),
        ("bash", {"command": "echo x > file"}, True),
        ("bash", {"command": "ls && rm -rf src"}, True),
        ("bash", {"command": 42}, True),
        ("bash", {}, True),
        ("bash", "ls", True),
        ("read", {"path": "x"}, False),
        ("grep", {"pattern": "x"}, False),
    ],
)
def test_the_role_screens_bash_and_lets_other_tools_pass(
    tool: str, tool_input: object, blocked: bool
) -> None:
    decision = ReadOnlyBashRole().tool_call("c1", tool, tool_input)
    assert decision.block is blocked
    if blocked:
        assert decision.reason is not None
        assert decision.reason.startswith("bash-ro: blocked")


def test_an_unusable_value_blocks_every_tool() -> None:
    role = closed_role_for(FailedClosedChild(f"{BASH_READONLY} must be 1 when it is set"))
    assert isinstance(role, FailedClosedRole)
    assert role.tool_call("c1", "read", {}).block


def test_a_real_bridge_process_blocks_a_write_and_admits_ls(tmp_path: Path) -> None:
    """The process the shim starts, with the environment the dispatcher gives a bash-ro child."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith("PI_SQUAD")}
    environ.update(flow_child_environ(read_only_bash=True))
    requests: list[Request] = [
        ("hello", {"role": "child"}),
        ("tool_call", {"toolCallId": "c1", "toolName": "bash", "input": {"command": "ls"}}),
        (
            "tool_call",
            {"toolCallId": "c2", "toolName": "bash", "input": {"command": "echo x > file"}},
        ),
    ]
    completed = serve_once([*bridge_command(), "--role", "child"], requests, environ, tmp_path)
    answers = {a["id"]: a for a in map(json.loads, completed.stdout.splitlines()) if "id" in a}
    assert answers[1]["result"]["role"] == "child-bash-ro"
    assert answers[1]["result"]["registrations"]["guard"] is True
    assert answers[2]["result"]["block"] is False
    assert answers[3]["result"]["block"] is True
    assert "output redirection" in answers[3]["result"]["reason"]
    assert not (tmp_path / "file").exists()
