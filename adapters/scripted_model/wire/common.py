"""What every wire protocol of the scripted model shares: the refusal a real API answers with,
the token usage it reports, the thinking it streams (and checks when it comes back), and the
rule that a model fills only the argument fields it was shown.

A protocol module (``openai_completions``, ``openai_responses``, ``anthropic_messages``,
``google_generative_ai``) turns its request body into a :class:`Conversation` (refusing, with
the real API's words, what the real API refuses) and turns a :class:`Reply` into the bytes the
real API would stream. Policies never see the protocol.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.replies import PlannedCall, Reply

# Keys OpenAI's function-calling check refuses at the top of a tool's ``parameters`` (its own
# message names five; ``const``, ``if`` and ``$ref`` there are refused in other words, and a
# schema with them is no object schema a model can fill either).
OPENAI_TOP_LEVEL_REFUSED = ("oneOf", "anyOf", "allOf", "enum", "not")
_THINKING_KEY = b"pi-squad scripted model: thinking signature"


class ApiRefusal(Exception):
    """A request the real API answers with an error status (400 unless said otherwise)."""

    def __init__(self, message: str, *, status: int = 400, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.message = message
        self.status = status
        self.kind = kind


@attrs.frozen
class TokenUsage:
    """Tokens of one answer as the provider reports them; ``input`` excludes the cached parts.
    ``reasoning`` is the share of ``output`` spent thinking."""

    input: int
    output: int
    cache_read: int
    cache_write: int
    reasoning: int = 0

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_write


@attrs.frozen
class Turn:
    """What a protocol needs besides the reply to write one answer."""

    model: str
    round_number: int
    stream: bool
    usage: TokenUsage


@attrs.frozen
class Encoded:
    """An answer: a stream of Server-Sent Events (each ``bytes`` one event, blank line included)
    or one JSON document."""

    content_type: str
    events: tuple[bytes, ...]

    @property
    def payload(self) -> bytes:
        return b"".join(self.events)


class WireProtocol(Protocol):
    """One of the APIs Pi 0.80.10 speaks with a custom ``baseUrl``."""

    api: str
    """Pi's name for it (``models.json`` ``api``)."""

    def handles(self, path: str) -> bool:
        """Whether a POST to ``path`` (query removed) is this protocol's."""
        ...

    def parse(self, body: object, path: str) -> Conversation:
        """The conversation, or ``ApiRefusal`` in the real API's words."""
        ...

    def encode(self, reply: Reply, turn: Turn) -> Encoded: ...

    def error_document(self, refusal: ApiRefusal) -> dict[str, Any]:
        """The JSON body of an error answer, shaped as the real API shapes it."""
        ...


# -- usage ------------------------------------------------------------------------------------


def token_usage(request_bytes: int, reply: Reply, round_number: int) -> TokenUsage:
    """Four bytes a token. A prompt cache as providers keep one: the first round writes a
    quarter of its prompt to the cache, and every later round reads half of it from there."""
    prompt = max(1, request_bytes // 4)
    cache_read = prompt // 2 if round_number > 1 else 0
    cache_write = prompt // 4 if round_number == 1 else prompt // 8
    produced = len(reply.text) + sum(
        len(call.name) + len(json.dumps(dict(call.arguments))) for call in reply.tool_calls
    )
    reasoning = len(reply.thinking) // 4
    return TokenUsage(
        input=max(1, prompt - cache_read - cache_write),
        output=max(1, produced // 4) + reasoning,
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=reasoning,
    )


# -- thinking ---------------------------------------------------------------------------------


def thinking_for(policy: str, reply: Reply, round_number: int) -> str:
    """The reasoning a scripted turn streams before its answer: deterministic, and naming what
    follows so a person reading a transcript sees it belongs to this turn."""
    calls = ", ".join(call.name for call in reply.tool_calls) or "no tool"
    return f"Scripted reasoning, round {round_number}: policy {policy} answers with {calls}."


def thinking_signature(text: str) -> str:
    """The opaque signature the provider attaches to a thinking block and checks when the block
    is sent back: a block changed on its way through Pi no longer matches."""
    digest = hmac.new(_THINKING_KEY, text.encode("utf-8"), hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def signature_matches(text: str, signature: object) -> bool:
    return isinstance(signature, str) and hmac.compare_digest(signature, thinking_signature(text))


# -- what a model can fill --------------------------------------------------------------------


def fitted(reply: Reply, tools: Mapping[str, Mapping[str, Any]]) -> Reply:
    """The reply a real model could give: a call of an offered tool carries only the top-level
    fields the tool's received schema names (a model cannot fill a field it was never shown).
    A call of a tool not offered stays as it is: models do call tools they were not given."""
    calls = tuple(_fitted_call(call, tools.get(call.name)) for call in reply.tool_calls)
    return attrs.evolve(reply, tool_calls=calls)


def _fitted_call(call: PlannedCall, schema: Mapping[str, Any] | None) -> PlannedCall:
    if schema is None:
        return call
    properties = schema.get("properties")
    shown = properties if isinstance(properties, Mapping) else {}
    arguments = {key: value for key, value in call.arguments.items() if key in shown}
    return call if len(arguments) == len(call.arguments) else PlannedCall(call.name, arguments)


def openai_schema_problem(name: str, parameters: object) -> str | None:
    """OpenAI's function-calling check of one tool's ``parameters`` (Chat Completions and
    Responses alike), in its words."""
    if not isinstance(parameters, Mapping):
        return f"Invalid schema for function '{name}': schema must be a JSON Schema object."
    if parameters.get("type") != "object" or any(
        key in parameters for key in OPENAI_TOP_LEVEL_REFUSED
    ):
        return (
            f"Invalid schema for function '{name}': schema must have type 'object' and not "
            "have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level."
        )
    return None


def sse_event(document: Mapping[str, Any], event: str | None = None) -> bytes:
    """One Server-Sent Event carrying ``document`` as JSON (with an ``event:`` line if named)."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(document, ensure_ascii=False)}\n\n".encode()


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]
