"""The bridge protocol's lines: malformed input, unknown methods, lines longer than the input
buffer, other protocol versions, end of input, and a stdout of protocol lines alone."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from application.child.role import GUARD_REASON, READER_TOOL
from tests.integration.bridge_protocol.support import BridgeProcess


def test_malformed_input_is_answered_when_it_has_an_id_and_never_stops_the_bridge(
    child: BridgeProcess,
) -> None:
    child.result("hello")
    child.send_raw(b"not json at all\n")
    child.send_raw(b"\xff\xfe invalid utf-8\n")
    child.send_raw(b"[1, 2, 3]\n")
    child.send_raw(b'{"v": 1, "method": "hello"}\n')  # no id
    child.send_raw(b"\n   \n")  # blank lines are skipped
    child.wait_stderr("ignored a malformed input line", 4)
    assert child.silent()

    child.send({"v": 1, "id": 7})
    assert child.next_message()["error"]["code"] == "bad_request"
    child.send({"v": 1, "id": 8, "method": "tool_call", "params": ["bash"]})
    assert child.next_message()["error"]["code"] == "bad_request"
    child.send({"v": 1, "id": "nine", "method": "hello"})
    assert child.next_message() == {
        "v": 1,
        "id": "nine",
        "ok": False,
        "error": {"code": "bad_request", "message": "id must be an integer"},
    }
    response = child.call("tool_call", {"toolCallId": "c", "input": {}})
    assert response["ok"] is False
    assert response["error"] == {
        "code": "invalid_params",
        "message": "params.toolName must be a string",
    }
    response = child.call("execute_tool", {"toolCallId": "c", "toolName": READER_TOOL})
    assert response["error"]["code"] == "invalid_params"
    # A CRLF line and a tool name holding U+2028 (JSON-legal raw) are still one request each.
    child.send_raw(b'{"v":1,"id":20,"method":"hello"}\r\n')
    assert child.next_message()["id"] == 20
    weird = child.result("tool_call", {"toolCallId": "c", "toolName": "bash\u2028x", "input": 1})
    assert weird == {"block": True, "reason": GUARD_REASON}
    assert child.close() == 0


def test_an_unknown_method_is_refused(child: BridgeProcess) -> None:
    response = child.call("squad", {"goal": "recursion"})
    assert response["ok"] is False
    assert response["error"]["code"] == "unknown_method"
    assert child.result("hello")["role"] == "child-spec"


def test_lines_longer_than_the_input_buffer_are_each_read_whole(
    child: BridgeProcess,
) -> None:
    # One write holding three requests, the middle one 200 KiB long (several input buffers):
    # each is answered as one line (in completion order, so matched by id).
    long_text = "é" * (100 * 1024)
    lines = [
        {"v": 1, "id": 1, "method": "hello", "params": {}},
        {"v": 1, "id": 2, "method": "squad", "params": {"goal": long_text}},
        {"v": 1, "id": 3, "method": "hello", "params": {}},
    ]
    child.send_raw(b"".join(json.dumps(m, ensure_ascii=False).encode() + b"\n" for m in lines))
    answers = sorted((child.next_message() for _ in lines), key=lambda a: int(a["id"]))
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert [a["ok"] for a in answers] == [True, False, True]
    assert answers[1]["error"]["code"] == "unknown_method"


@pytest.mark.parametrize("version", [2, 0, "1", None])
def test_another_protocol_version_is_refused(child: BridgeProcess, version: object) -> None:
    message: dict[str, Any] = {"id": 3, "method": "hello"}
    if version is not None:
        message["v"] = version
    child.send(message)
    response = child.next_message()
    assert response["id"] == 3
    assert response["ok"] is False
    assert response["error"]["code"] == "unsupported_version"
    assert response["v"] == 1


def test_end_of_input_exits_cleanly_after_answering_what_is_in_flight(
    child: BridgeProcess,
) -> None:
    child.result("hello")
    request_id = child.request(
        "execute_tool", {"toolCallId": "r", "toolName": READER_TOOL, "params": {"index": 0}}
    )
    started = time.monotonic()
    assert child.close() == 0
    assert time.monotonic() - started < 5
    response = child.next_message()
    assert response["id"] == request_id
    assert response["ok"] is True
    assert child.messages.get(timeout=1) is None  # stdout closed
    assert "Traceback" not in child.stderr()


def test_stdout_carries_only_protocol_lines(child: BridgeProcess) -> None:
    child.result("hello")
    child.send_raw(b"garbage\n")
    child.result("tool_call", {"toolCallId": "c", "toolName": "bash", "input": {}})
    assert child.close() == 0
    for line in child.raw_lines:
        assert line.endswith(b"\n")
        assert json.loads(line)["v"] == 1
