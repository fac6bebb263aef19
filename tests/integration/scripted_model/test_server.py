"""The scripted model server on the ``openai-completions`` wire: the stream Pi reads, plain
completions, the models listing, malformed requests, keep-alive and parallel clients, stopping,
and how a policy is chosen."""

from __future__ import annotations

import http.client
import json
import threading
import time

import pytest

from adapters.scripted_model import MODEL_ID, ScriptedModelServer, UnknownPolicy
from adapters.scripted_model.policies import ECHO_PREFIX, VERDICT_PASS
from tests.integration.scripted_model.completions_client import (
    assemble,
    complete,
    parse_sse,
    post,
    request,
)


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


def test_reply_answers_its_marker_and_a_sequence_in_turn_across_requests(
    server: ScriptedModelServer,
) -> None:
    def said(system: str) -> str:
        _status, _type, raw = post(server, request(system, "go"))
        text: str = assemble(parse_sse(raw))["text"]
        return text

    assert said("scripted-policy: reply\nscripted-reply: ROUTE: recon") == "ROUTE: recon"
    judge = (
        "scripted-policy: reply\nscripted-replies: VERDICT: REVISE\\nadd a test || VERDICT: PASS"
    )
    assert said(judge) == "VERDICT: REVISE\nadd a test"
    assert said(judge) == "VERDICT: PASS"
    assert said(judge) == "VERDICT: PASS"
    assert said("scripted-policy: reply") == "scripted reply"
