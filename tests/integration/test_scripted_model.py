"""The scripted model server over real HTTP on loopback, with crafted request bodies (no Pi).

A small emulation of what Pi does between model calls (run each call, block normal tools while
the spec is unread, send results back as ``role: "tool"`` messages) drives whole conversations.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.scripted_model import (
    MODEL_ID,
    ScriptedModelServer,
    UnknownPolicy,
    models_config,
    write_models_json,
)
from adapters.scripted_model.conversation import parse_request
from adapters.scripted_model.policies import (
    ECHO_PREFIX,
    IMPATIENT_AFTER_MARKER,
    IMPATIENT_BASH_MARKER,
    IMPATIENT_PARALLEL_MARKER,
    SABOTEUR_DONE,
    SABOTEUR_LOG,
    VERDICT_FAIL,
    VERDICT_PASS,
)
from adapters.scripted_model.saboteur import detached, saboteur_script
from adapters.scripted_model.spec_reading import MAX_ATTEMPTS_PER_CHUNK, spec_progress
from tests.integration.model_http import post as post_to

REPO = Path(__file__).resolve().parents[2]
GUARD_REASON = (
    "Read every canonical squad spec chunk with squad_spec_read before using other tools."
)
SPEC_READ_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["index"],
    "properties": {"index": {"type": "integer", "minimum": 0}},
}


# --- request building and SSE parsing -------------------------------------------------------


def shown(*fields: str) -> dict[str, Any]:
    """An object schema naming ``fields``: the scripted model fills only fields it was shown."""
    return {"type": "object", "properties": {field: {"type": "string"} for field in fields}}


# Pi's own tools name these fields (a model cannot fill a field its tool's schema lacks).
PI_TOOL_FIELDS = {
    "read": ("path", "offset", "limit"),
    "bash": ("command", "timeout"),
    "edit": ("path", "edits", "oldText", "newText"),
    "write": ("path", "content"),
}


def tool(name: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": parameters or shown(*PI_TOOL_FIELDS.get(name, ())),
        },
    }


NORMAL_TOOLS = [tool("read"), tool("bash"), tool("edit"), tool("write")]
SPEC_TOOLS = [*NORMAL_TOOLS, tool("squad_spec_read", SPEC_READ_SCHEMA)]


def request(
    system: str, user: str, *, tools: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL_ID,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": [{"type": "text", "text": user}]},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": NORMAL_TOOLS if tools is None else tools,
    }
    body.update(extra)
    return body


def post(server: ScriptedModelServer, body: object) -> tuple[int, str, bytes]:
    return post_to(server, body, "/v1/chat/completions", {"Authorization": "Bearer dummy"})


def parse_sse(raw: bytes) -> list[dict[str, Any]]:
    """Every ``data:`` event but the terminal ``[DONE]``, which must be last and present."""
    text = raw.decode("utf-8")
    assert text.endswith("data: [DONE]\n\n")
    events = [e for e in text.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    return [json.loads(e[len("data: ") :]) for e in events[:-1]]


def assemble(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What a client rebuilds from the chunks; asserts the shape Pi relies on on the way."""
    text = ""
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage = None
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["id"] == chunks[0]["id"]
        if chunk.get("usage"):
            assert chunk["choices"] == []
            usage = chunk["usage"]
            continue
        (choice,) = chunk["choices"]
        assert finish is None, "nothing but usage may follow the finish chunk"
        delta = choice["delta"]
        text += delta.get("content") or ""
        for piece in delta.get("tool_calls", []):
            index = piece["index"]
            if index not in calls:
                assert piece["id"]
                assert piece["function"]["name"]
                assert piece["type"] == "function"
                calls[index] = {"id": piece["id"], "name": piece["function"]["name"], "args": ""}
            else:
                assert set(piece) == {"index", "function"}
                assert set(piece["function"]) == {"arguments"}
            calls[index]["args"] += piece["function"].get("arguments", "")
        finish = choice["finish_reason"] or finish
    assert usage is not None
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    tool_calls = [
        {"id": c["id"], "name": c["name"], "arguments": json.loads(c["args"])}
        for _, c in sorted(calls.items())
    ]
    assert finish == ("tool_calls" if tool_calls else "stop")
    return {"text": text, "tool_calls": tool_calls, "finish": finish}


def complete(server: ScriptedModelServer, body: dict[str, Any]) -> dict[str, Any]:
    status, content_type, raw = post(server, body)
    assert status == 200, raw
    assert content_type.startswith("text/event-stream")
    return assemble(parse_sse(raw))


class FakeChild:
    """What Pi plus a guard extension do with one assistant message's calls.

    Preflight is sequential and sees only deliveries of earlier messages (Pi 0.80.10 runs the
    ``tool_call`` handlers of all siblings before any executes), so a normal tool beside reads
    is blocked. ``flaky`` chunks fail that many times before they are delivered.
    """

    def __init__(self, chunks: int, *, guard: bool = True, flaky: dict[int, int] | None = None):
        self.chunks = chunks
        self.guard = guard
        self.flaky = dict(flaky or {})
        self.delivered: set[int] = set()
        self.executed: list[tuple[str, dict[str, Any]]] = []

    def run(self, calls: list[dict[str, Any]]) -> list[str]:
        open_ = not self.guard or len(self.delivered) == self.chunks
        missing = [i for i in range(self.chunks) if i not in self.delivered]
        results = []
        newly: set[int] = set()
        for call in calls:
            name, arguments = call["name"], call["arguments"]
            if name == "squad_spec_read":
                index = arguments["index"]
                if not 0 <= index < self.chunks:
                    results.append(f"Error: chunk index {index} out of range")
                elif self.flaky.get(index, 0) > 0:
                    self.flaky[index] -= 1
                    results.append("Error: canonical spec changed while reading")
                else:
                    metadata = {"version": 1, "taskId": "build", "index": index}
                    metadata["chunkCount"] = self.chunks
                    # Chunk text that looks like markers must not steer the model.
                    results.append(
                        json.dumps(metadata) + f"\nsquad-spec-missing: 0\nchunk {index} text"
                    )
                    newly.add(index)
            elif not open_:
                results.append(f"{GUARD_REASON} Missing chunk indices: {missing}")
            else:
                self.executed.append((name, arguments))
                results.append("(no output)")
        self.delivered |= newly
        return results


def assistant_calls(
    calls: Iterable[tuple[str, str, str]], *, text: str | None = None
) -> dict[str, Any]:
    """An assistant message as a request carries it: one ``(id, name, raw JSON arguments)`` per
    tool call."""
    return {
        "role": "assistant",
        "content": text,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in calls
        ],
    }


def converse(
    server: ScriptedModelServer,
    body: dict[str, Any],
    child: FakeChild,
    *,
    max_rounds: int = 20,
) -> list[dict[str, Any]]:
    """Run a whole conversation; returns each assistant message as assembled."""
    body = json.loads(json.dumps(body))
    replies = []
    for _ in range(max_rounds):
        reply = complete(server, body)
        replies.append(reply)
        if not reply["tool_calls"]:
            return replies
        made = [
            (c["id"], c["name"], json.dumps(c["arguments"], separators=(",", ":")))
            for c in reply["tool_calls"]
        ]
        body["messages"].append(assistant_calls(made, text=reply["text"] or None))
        for call, result in zip(reply["tool_calls"], child.run(reply["tool_calls"]), strict=True):
            body["messages"].append({"role": "tool", "content": result, "tool_call_id": call["id"]})
    raise AssertionError("the conversation did not settle")


def read_batches(replies: list[dict[str, Any]]) -> list[list[int]]:
    return [
        [c["arguments"]["index"] for c in r["tool_calls"] if c["name"] == "squad_spec_read"]
        for r in replies
        if r["tool_calls"]
    ]


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer("echo") as running:
        yield running


# --- the wire format ------------------------------------------------------------------------


def test_echo_streams_text_then_finish_then_usage_then_done(server: ScriptedModelServer) -> None:
    status, content_type, raw = post(server, request("sys", "hello there, a longer prompt"))
    assert status == 200
    assert content_type.startswith("text/event-stream")
    chunks = parse_sse(raw)
    reply = assemble(chunks)
    assert reply == {
        "text": ECHO_PREFIX + "hello there, a longer prompt",
        "tool_calls": [],
        "finish": "stop",
    }
    assert len([c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]) > 1
    assert chunks[-2]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["model"] == MODEL_ID


def test_tool_calls_stream_id_and_name_first_then_argument_pieces(
    server: ScriptedModelServer,
) -> None:
    command = "echo a fairly long command line to split into pieces"
    body = request(f"scripted-policy: bash-once\nscripted-bash: {command}", "go")
    chunks = parse_sse(post(server, body)[2])
    pieces = [
        piece
        for chunk in chunks
        if chunk["choices"]
        for piece in chunk["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert pieces[0] == {
        "index": 0,
        "id": "call_1_0",
        "type": "function",
        "function": {"name": "bash", "arguments": ""},
    }
    assert len(pieces) > 2
    assert assemble(chunks)["tool_calls"] == [
        {"id": "call_1_0", "name": "bash", "arguments": {"command": command}}
    ]
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_same_request_same_bytes(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: diligent\nsquad-spec-chunks: 4", "go", tools=SPEC_TOOLS)
    assert post(server, body)[2] == post(server, body)[2]


def test_non_streaming_request_gets_one_completion(server: ScriptedModelServer) -> None:
    status, content_type, raw = post(server, request("sys", "hi", stream=False))
    assert status == 200
    assert content_type == "application/json"
    document = json.loads(raw)
    assert document["object"] == "chat.completion"
    assert document["choices"][0]["message"] == {"role": "assistant", "content": ECHO_PREFIX + "hi"}
    assert document["choices"][0]["finish_reason"] == "stop"


def test_models_listing(server: ScriptedModelServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/v1/models")
    response = connection.getresponse()
    assert response.status == 200
    assert json.loads(response.read())["data"][0]["id"] == MODEL_ID
    connection.close()
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[]", json.dumps({"messages": []}).encode(), json.dumps({"x": 1}).encode()],
)
def test_malformed_requests_get_400_and_the_server_keeps_serving(
    server: ScriptedModelServer, body: bytes
) -> None:
    status, _, raw = post(server, body)
    assert status == 400
    assert json.loads(raw)["error"]["type"] == "invalid_request_error"
    assert complete(server, request("sys", "still here"))["text"] == ECHO_PREFIX + "still here"


def test_keep_alive_connection_serves_several_requests(server: ScriptedModelServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    for word in ("one", "two", "three"):
        connection.request("POST", "/v1/chat/completions", body=json.dumps(request("s", word)))
        response = connection.getresponse()
        assert assemble(parse_sse(response.read()))["text"] == ECHO_PREFIX + word
    connection.close()


def test_parallel_clients(server: ScriptedModelServer) -> None:
    answers: dict[int, str] = {}

    def ask(n: int) -> None:
        answers[n] = complete(server, request("s", f"client {n}"))["text"]

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert answers == {n: f"{ECHO_PREFIX}client {n}" for n in range(8)}


def test_chunk_delay_streams_the_same_events_over_time() -> None:
    body = request("scripted-policy: bash-once", "go")
    with ScriptedModelServer() as plain:
        expected = post(plain, body)[2]
    with ScriptedModelServer(chunk_delay=0.005) as slow:
        started = time.monotonic()
        received = post(slow, body)[2]
        elapsed = time.monotonic() - started
    assert received == expected
    assert elapsed >= 0.005 * len(parse_sse(expected))


def test_stop_ends_idle_keep_alive_connections_quickly() -> None:
    running = ScriptedModelServer().start()
    connection = http.client.HTTPConnection("127.0.0.1", running.port, timeout=10)
    connection.request("POST", "/v1/chat/completions", body=json.dumps(request("s", "x")))
    connection.getresponse().read()
    running.stop()
    running.stop()  # idempotent
    with pytest.raises(RuntimeError):
        _ = running.port
    connection.close()


# --- policy selection -----------------------------------------------------------------------


def test_policy_from_system_prompt_marker_else_default(server: ScriptedModelServer) -> None:
    lazy = complete(server, request("You are QA.\nscripted-policy: lazy\n", "go"))
    assert lazy["tool_calls"] == []
    assert VERDICT_PASS in lazy["text"]
    assert complete(server, request("no marker", "go"))["text"] == ECHO_PREFIX + "go"
    from_user = complete(server, request("no marker", "scripted-policy: lazy"))
    assert VERDICT_PASS in from_user["text"]
    assert [e.policy for e in server.exchanges()] == ["lazy", "echo", "lazy"]


def test_unknown_policy_is_a_400_naming_the_known_ones(server: ScriptedModelServer) -> None:
    status, _, raw = post(server, request("scripted-policy: nonsense", "go"))
    assert status == 400
    message = json.loads(raw)["error"]["message"]
    assert "nonsense" in message
    assert "diligent" in message
    with pytest.raises(UnknownPolicy):
        ScriptedModelServer("nonsense")


# --- diligent -------------------------------------------------------------------------------


def test_diligent_reads_in_reverse_batches_of_three_then_passes(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: diligent\nsquad-spec-chunks: 7", "go", tools=SPEC_TOOLS)
    child = FakeChild(7)
    replies = converse(server, body, child)
    assert read_batches(replies) == [[6, 5, 4], [3, 2, 1], [0]]
    assert child.delivered == set(range(7))
    final = replies[-1]["text"]
    assert "[0, 1, 2, 3, 4, 5, 6] of 7" in final
    assert final.rstrip().endswith(VERDICT_PASS)


@pytest.mark.parametrize(
    "bootstrap",
    [
        'Spec manifest: {"sha256":"ab","bytes":99,"chunkCount":5}',
        "The canonical spec has 5 chunks; read them all.",
        "chunk count: 5",
        "Spec chunks: 5",
    ],
)
def test_diligent_learns_the_count_from_bootstrap_prose(
    server: ScriptedModelServer, bootstrap: str
) -> None:
    body = request("scripted-policy: diligent", bootstrap, tools=SPEC_TOOLS)
    replies = converse(server, body, FakeChild(5))
    assert read_batches(replies) == [[4, 3, 2], [1, 0]]


def test_diligent_follows_the_child_bootstrap_as_the_squad_writes_it(
    server: ScriptedModelServer,
) -> None:
    bootstrap = "\n".join(
        [
            "# pi-squad file-spec task",
            "Squad: sq-1",
            "Task: build",
            "Canonical spec: 99000 bytes, SHA-256 " + "a" * 64,
            "Chunks: 4 (at most 32768 bytes each)",
            "Before any other tool, read every chunk of the canonical spec with "
            'squad_spec_read {"index": N}. Any order works.',
            "Missing chunk indices: [0, 2, 3]",
            "squad-spec-chunks: 4",
            "squad-spec-missing: 0,2,3",
        ]
    )
    body = request(
        f"Agent prompt.\nscripted-policy: diligent\n\n{bootstrap}", "go", tools=SPEC_TOOLS
    )
    assert read_batches(converse(server, body, FakeChild(4))) == [[3, 2, 0]]
    done = bootstrap.replace("squad-spec-missing: 0,2,3", "squad-spec-missing: none")
    body = request(f"scripted-policy: diligent\n{done}", "go", tools=SPEC_TOOLS)
    (only,) = converse(server, body, FakeChild(4))
    assert VERDICT_PASS in only["text"]


def test_diligent_without_a_count_reads_chunk_zero_and_learns_it_from_the_metadata(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: diligent", "Read the spec.", tools=SPEC_TOOLS)
    replies = converse(server, body, FakeChild(4))
    assert read_batches(replies) == [[0], [3, 2, 1]]
    assert VERDICT_PASS in replies[-1]["text"]


def test_diligent_reads_only_the_stated_missing_chunks(server: ScriptedModelServer) -> None:
    system = "scripted-policy: diligent\nsquad-spec-chunks: 6\nsquad-spec-missing: 1, 4"
    replies = converse(server, request(system, "go", tools=SPEC_TOOLS), FakeChild(6))
    assert read_batches(replies) == [[4, 1]]


def test_diligent_retries_a_failed_read_and_gives_up_after_the_limit(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: diligent\nsquad-spec-chunks: 3", "go", tools=SPEC_TOOLS)
    replies = converse(server, body, FakeChild(3, flaky={1: 1}))
    assert read_batches(replies) == [[2, 1, 0], [1]]
    assert VERDICT_PASS in replies[-1]["text"]

    stubborn = converse(server, body, FakeChild(3, flaky={1: 99}))
    assert read_batches(stubborn) == [[2, 1, 0]] + [[1]] * (MAX_ATTEMPTS_PER_CHUNK - 1)
    assert VERDICT_FAIL in stubborn[-1]["text"]
    assert "Could not read spec chunks [1]" in stubborn[-1]["text"]


def test_diligent_without_the_reader_tool_just_reports(server: ScriptedModelServer) -> None:
    replies = converse(server, request("scripted-policy: diligent", "go"), FakeChild(3))
    assert len(replies) == 1
    assert "no spec reader offered" in replies[0]["text"]
    assert VERDICT_PASS in replies[0]["text"]


def test_spec_text_never_steers_the_reading(server: ScriptedModelServer) -> None:
    # FakeChild's chunk text carries "squad-spec-missing: 0"; were it believed, chunk 0 would
    # be read again after the first batch.
    body = request("scripted-policy: diligent\nsquad-spec-chunks: 4", "go", tools=SPEC_TOOLS)
    assert read_batches(converse(server, body, FakeChild(4))) == [[3, 2, 1], [0]]


def test_missing_statement_in_a_block_reason_is_older_than_its_own_rounds_reads() -> None:
    body = request("squad-spec-chunks: 3", "go", tools=SPEC_TOOLS)
    body["messages"] += [
        assistant_calls(
            [("c0", "squad_spec_read", '{"index":0}'), ("c1", "bash", '{"command":"ls"}')]
        ),
        {"role": "tool", "tool_call_id": "c0", "content": '{"index":0,"chunkCount":3}\ntext'},
        {"role": "tool", "tool_call_id": "c1", "content": "Blocked. Missing chunk indices: [0, 2]"},
    ]
    progress = spec_progress(parse_request(body))
    assert progress.chunk_count == 3
    assert progress.delivered == {0}
    assert progress.missing == (2,)


def test_missing_statement_in_a_later_user_message_wins() -> None:
    body = request("squad-spec-chunks: 3", "go", tools=SPEC_TOOLS)
    body["messages"] += [
        assistant_calls([("c0", "squad_spec_read", '{"index":0}')]),
        {"role": "tool", "tool_call_id": "c0", "content": '{"index":0,"chunkCount":3}\ntext'},
        {"role": "user", "content": "Completion rejected.\nsquad-spec-missing: [0]\n"},
    ]
    assert spec_progress(parse_request(body)).missing == (0,)


def test_a_resumed_run_s_system_prompt_lists_deliveries_a_crash_kept_from_counting() -> None:
    # The child's bootstrap is rebuilt for each run: after a restart it lists again the chunks
    # the old process received but died before committing; they are read again.
    body = request("squad-spec-chunks: 3\nsquad-spec-missing: 0, 1, 2", "go", tools=SPEC_TOOLS)
    body["messages"] += [
        assistant_calls([("c0", "squad_spec_read", '{"index":0}')]),
        {"role": "tool", "tool_call_id": "c0", "content": '{"index":0,"chunkCount":3}\ntext'},
        assistant_calls([("c1", "squad_spec_read", '{"index":1}')]),
        {"role": "tool", "tool_call_id": "c1", "content": '{"index":1,"chunkCount":3}\ntext'},
        {"role": "user", "content": "Resume file-spec squad task build."},
    ]
    # The resumed run's system prompt: chunk 1 was delivered but never committed.
    body["messages"][0]["content"] = "squad-spec-chunks: 3\nsquad-spec-missing: 1, 2"
    assert spec_progress(parse_request(body)).missing == (1, 2)
    # Within the run, its own deliveries count as read after the statement.
    body["messages"] += [
        assistant_calls([("c2", "squad_spec_read", '{"index":2}')]),
        {"role": "tool", "tool_call_id": "c2", "content": '{"index":2,"chunkCount":3}\ntext'},
    ]
    assert spec_progress(parse_request(body)).missing == (1,)


# --- impatient ------------------------------------------------------------------------------


def test_impatient_probes_then_reads_all_beside_bash_then_finishes(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: impatient\nsquad-spec-chunks: 4", "go", tools=SPEC_TOOLS)
    child = FakeChild(4, flaky={2: 1})
    replies = converse(server, body, child)
    names = [[c["name"] for c in r["tool_calls"]] for r in replies]
    assert names == [
        ["bash", "read", "write"],
        ["squad_spec_read"] * 4 + ["bash"],
        ["squad_spec_read"],
        ["bash"],
        [],
    ]
    assert IMPATIENT_BASH_MARKER in replies[0]["tool_calls"][0]["arguments"]["command"]
    assert IMPATIENT_PARALLEL_MARKER in replies[1]["tool_calls"][-1]["arguments"]["command"]
    assert read_batches(replies)[1:3] == [[0, 1, 2, 3], [2]]
    # Only the last bash ran: the guard blocked every earlier normal tool.
    assert child.executed == [("bash", {"command": f"echo attested > {IMPATIENT_AFTER_MARKER}"})]
    assert replies[-1]["text"].rstrip().endswith(VERDICT_PASS)


def test_impatient_offers_only_the_tools_it_has(server: ScriptedModelServer) -> None:
    tools = [tool("bash"), tool("squad_spec_read", SPEC_READ_SCHEMA)]
    body = request("scripted-policy: impatient\nsquad-spec-chunks: 2", "go", tools=tools)
    replies = converse(server, body, FakeChild(2))
    assert [c["name"] for c in replies[0]["tool_calls"]] == ["bash"]
    assert VERDICT_PASS in replies[-1]["text"]


# --- lazy and qa-fail -----------------------------------------------------------------------


def test_lazy_settles_with_prose_even_with_a_reader_offered(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: lazy\nsquad-spec-chunks: 9", "go", tools=SPEC_TOOLS)
    replies = converse(server, body, FakeChild(9))
    assert len(replies) == 1
    assert replies[0]["tool_calls"] == []


def qa_body(task: str | None) -> dict[str, Any]:
    system = "scripted-policy: qa-fail\nsquad-spec-chunks: 2"
    if task is not None:
        system += f"\nscripted-task: {task}"
    return request(system, "verify", tools=SPEC_TOOLS)


def test_qa_fail_fails_the_first_report_of_a_task_then_passes(
    server: ScriptedModelServer,
) -> None:
    first = converse(server, qa_body("qa"), FakeChild(2))
    assert read_batches(first) == [[1, 0]]
    assert VERDICT_FAIL in first[-1]["text"]
    assert "## Issues\n- " in first[-1]["text"]
    again = converse(server, qa_body("qa"), FakeChild(2))
    assert VERDICT_PASS in again[-1]["text"]
    retest = converse(server, qa_body("qa-retest-1"), FakeChild(2))
    assert VERDICT_PASS in retest[-1]["text"]
    other = converse(server, qa_body("qa-2"), FakeChild(2))
    assert VERDICT_FAIL in other[-1]["text"]


def test_qa_fail_keys_on_the_reader_metadata_task_and_on_history(
    server: ScriptedModelServer,
) -> None:
    assert VERDICT_FAIL in converse(server, qa_body(None), FakeChild(2))[-1]["text"]
    assert VERDICT_PASS in converse(server, qa_body(None), FakeChild(2))[-1]["text"]

    fresh = ScriptedModelServer().start()
    try:
        body = qa_body("t")
        body["messages"].insert(2, {"role": "assistant", "content": f"old\n{VERDICT_FAIL}\n"})
        body["messages"].insert(3, {"role": "user", "content": "fixed; verify again"})
        assert VERDICT_PASS in converse(fresh, body, FakeChild(2))[-1]["text"]
    finally:
        fresh.stop()


# --- models.json and the command line -------------------------------------------------------


def test_write_models_json(tmp_path: Path) -> None:
    path = write_models_json(tmp_path / "agent", "http://127.0.0.1:1234/v1/")
    document = json.loads(path.read_text())
    assert path == tmp_path / "agent" / "models.json"
    assert document == models_config("http://127.0.0.1:1234/v1")
    provider = document["providers"]["fake"]
    assert provider["baseUrl"] == "http://127.0.0.1:1234/v1"
    assert provider["api"] == "openai-completions"
    assert provider["models"][0]["id"] == "fake-model"
    assert sorted(p.name for p in (tmp_path / "agent").iterdir()) == ["models.json"]


def test_command_line_serves_until_terminated(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "adapters.scripted_model",
            "--port",
            "0",
            "--policy",
            "lazy",
            "--agent-dir",
            str(tmp_path),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert process.stdout is not None
        announced = json.loads(process.stdout.readline())
        assert announced["policy"] == "lazy"
        models = json.loads((tmp_path / "models.json").read_text())
        assert models["providers"]["fake"]["baseUrl"] == announced["baseUrl"]
        connection = http.client.HTTPConnection("127.0.0.1", announced["port"], timeout=10)
        connection.request("POST", "/v1/chat/completions", body=json.dumps(request("s", "go")))
        reply = assemble(parse_sse(connection.getresponse().read()))
        connection.close()
        assert VERDICT_PASS in reply["text"]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_saboteur_script_runs_to_its_end_after_the_reader_of_its_output_is_gone(
    tmp_path: Path,
) -> None:
    """Once the parent stops the child, nothing reads the bash tool's pipe any more; the detached
    script must still log every line, up to its done line, instead of dying of ``SIGPIPE``."""
    spec = tmp_path / "squad" / "spec" / "spec.md"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        finished = subprocess.run(
            ["bash", "-c", detached(saboteur_script(sibling="victim", only="no-such-attack"))],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.DEVNULL,
            cwd=tmp_path,
            env=dict(
                os.environ,
                PI_SQUAD_SPEC_PATH=str(spec),
                PI_SQUAD_TASK_ID="saboteur",
                PI_SQUAD_BRIDGE="[]",
            ),
            timeout=30,
            check=False,
        )
    finally:
        os.close(write_end)
    lines = (tmp_path / SABOTEUR_LOG).read_text(encoding="utf-8").splitlines()
    assert lines == [
        f"saboteur saboteur in {tmp_path / 'squad'}: sibling victim, deleting victim",
        SABOTEUR_DONE,
    ]
    assert finished.returncode == 0
