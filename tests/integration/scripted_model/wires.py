"""What the clients of every wire protocol share (``*_client.py`` beside this module): Pi's own
tools, the answers of the spec reader, and a whole conversation driven as Pi drives one
(``Wire.converse``), each protocol's request and turn shapes aside."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import attrs

from adapters.scripted_model import ScriptedModelServer
from adapters.scripted_model.conversation import Conversation

# Pi's own tools name these fields (a model cannot fill a field its tool's schema lacks).
PI_TOOL_FIELDS = {
    "read": ("path", "offset", "limit"),
    "bash": ("command", "timeout"),
    "edit": ("path", "edits", "oldText", "newText"),
    "write": ("path", "content"),
}
SPEC_READ_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["index"],
    "properties": {"index": {"type": "integer", "minimum": 0}},
}

Reply = dict[str, Any]


@attrs.frozen
class Call:
    """One tool call of an answer, however its wire spells it."""

    id: str
    name: str
    arguments: dict[str, Any]


# What runs one answer's calls: one result text per call, in order.
Runner = Callable[[list[Call]], list[str]]


@attrs.frozen
class Wire:
    """One protocol as Pi's provider adapter speaks it: a first request
    (``request(system, user, thinking=...)``, offering Pi's tools; with ``**offer_reader``, the
    spec reader beside them), the raw answer to a body, one answer assembled from its stream, the
    calls in it, and that answer sent back with its calls' results the way Pi sends them."""

    api: str
    request: Callable[..., dict[str, Any]]
    offer_reader: dict[str, Any]
    post: Callable[[ScriptedModelServer, dict[str, Any]], tuple[int, str, bytes]]
    complete: Callable[[ScriptedModelServer, dict[str, Any]], Reply]
    calls: Callable[[Reply], list[Call]]
    send_back: Callable[[dict[str, Any], Reply, list[str]], None]

    def converse(
        self,
        server: ScriptedModelServer,
        body: dict[str, Any],
        run: Runner,
        *,
        max_rounds: int = 20,
    ) -> list[Reply]:
        """A whole conversation from ``body`` (left as it is): each answer's calls run by
        ``run``; every answer, up to the first without calls."""
        body = copy.deepcopy(body)
        replies = []
        for _ in range(max_rounds):
            reply = self.complete(server, body)
            replies.append(reply)
            calls = self.calls(reply)
            if not calls:
                return replies
            self.send_back(body, reply, run(calls))
        raise AssertionError("the conversation did not settle")


def event_stream(answer: tuple[int, str, bytes]) -> bytes:
    """The body of an answer that must be a streamed 200."""
    status, content_type, raw = answer
    assert status == 200, raw
    assert content_type.startswith("text/event-stream")
    return raw


def spec_result(index: int, chunks: int) -> str:
    """What the spec reader answers for chunk ``index``: its metadata line, then the text."""
    metadata = {"version": 1, "taskId": "build", "index": index, "chunkCount": chunks}
    return json.dumps(metadata) + f"\nchunk {index} text"


def spec_reader(chunks: int) -> Runner:
    """Every call a ``squad_spec_read`` of a spec of ``chunks`` chunks, each answered."""

    def run(calls: list[Call]) -> list[str]:
        assert {call.name for call in calls} == {"squad_spec_read"}
        return [spec_result(call.arguments["index"], chunks) for call in calls]

    return run


def diligent_reading(wire: Wire, server: ScriptedModelServer, chunks: int = 7) -> list[Reply]:
    """A ``diligent`` child's whole conversation over a spec of ``chunks`` chunks, thinking on."""
    system = f"scripted-policy: diligent\nsquad-spec-chunks: {chunks}"
    body = wire.request(system, "go", thinking=True, **wire.offer_reader)
    return wire.converse(server, body, spec_reader(chunks))


def last_conversation(server: ScriptedModelServer) -> Conversation:
    """The conversation the server parsed out of the last request it answered."""
    conversation = server.exchanges()[-1].conversation
    assert conversation is not None
    return conversation
