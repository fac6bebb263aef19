"""The bridge server's lines on the wire: oversized and unterminated input, a vanished reader, and
output encoded as JSON writes it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.bridge import main_bridge_role
from adapters.bridge.protocol import encode_line, ok_response, tool_result_line, tool_result_payload
from application.ports import ToolResult
from tests.integration.bridge_server.support import TIMEOUT, ScriptedEvents, Served


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
