"""``google-generative-ai``: ``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`` as the
Gemini API (``generativelanguage.googleapis.com``) answers it, for Pi 0.80.10's adapter on the
``@google/genai`` SDK with ``baseUrl`` ``http://HOST:PORT/v1beta``. Pi always streams, so the
non-streaming ``:generateContent`` is not answered; the model is the one the path names.

Pi sends ``systemInstruction`` (one text part), ``contents`` of ``user`` turns (text parts, or
the ``functionResponse`` parts ``{name, response: {output | error}}`` of one round's results)
and ``model`` turns (``thought`` parts, text parts, ``functionCall`` parts ``{name, args}``,
signatures as ``thoughtSignature``), ``tools[].functionDeclarations[]`` with
``parametersJsonSchema``, and ``generationConfig.thinkingConfig.includeThoughts`` when it wants
thinking. Ids: Pi sends no call ids to a Gemini model, so a call without one is given the id its
turn streamed (``call_ROUND_POSITION``) and a response answers the first open call of its name.

Refused as the API refuses (HTTP 400, ``INVALID_ARGUMENT``): a body that is no object, missing
``contents``, a turn with no parts, a part with no data, a role other than ``user``/``model``; a
function name outside ``^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$``; a declaration whose parameters
schema is not an ``object`` schema or has ``anyOf``/``oneOf``/``allOf`` at its top; a function
call turn not following a user turn or a function response turn; a function response turn not
following a function call turn, answering a call that turn did not make, or answering a
different number of calls; a ``thoughtSignature`` that does not verify (a thought part's against
its text, any other part's against its turn's thinking).

The stream itself is written by ``google_generative_ai_stream``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from adapters.scripted_model.conversation import Conversation, Message, ToolCall
from adapters.scripted_model.replies import Reply
from adapters.scripted_model.sse import tool_call_id
from adapters.scripted_model.wire.common import ApiRefusal, Encoded, Turn, signature_matches
from adapters.scripted_model.wire.google_generative_ai_stream import stream

FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")
TOP_LEVEL_COMBINATORS = ("anyOf", "oneOf", "allOf")
_PATH = re.compile(r"^/v1beta/models/([^/:]+):streamGenerateContent$")
_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}

# The API's own words, by rule.
NOT_A_MESSAGE = 'Invalid JSON payload received. Unknown name "": Root element must be a message.'
NO_CONTENTS = "* GenerateContentRequest.contents: contents is not specified\n"
BAD_ROLE = "Please use a valid role: user, model."
CORRUPTED_SIGNATURE = "Corrupted thought signature."
CALL_TURN_ORDER = (
    "Please ensure that function call turn comes immediately after a user turn or after a "
    "function response turn."
)
RESPONSE_TURN_ORDER = (
    "Please ensure that function response turn comes immediately after a function call turn."
)
RESPONSE_COUNT = (
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn."
)
INVALID_NAME = (
    "Invalid function name. Must start with a letter or an underscore. Must be alphameric "
    "(a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum "
    "length of 64."
)
NOT_OBJECT_SCHEMA = "functionDeclaration parameters schema should be of type OBJECT"


def violation(field: str, message: str) -> str:
    """One field violation as the API lists it in its 400 message."""
    return f"* GenerateContentRequest.{field}: {message}\n"


class GoogleGenerativeAI:
    api = "google-generative-ai"

    def handles(self, path: str) -> bool:
        return _PATH.match(path) is not None

    def parse(self, body: object, path: str) -> Conversation:
        matched = _PATH.match(path)
        if not isinstance(body, dict) or matched is None:
            raise ApiRefusal(NOT_A_MESSAGE)
        tools = _tools(body.get("tools"))
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            raise ApiRefusal(NO_CONTENTS)
        system = _system(body.get("systemInstruction", body.get("system_instruction")))
        turns = _Turns()
        for position, content in enumerate(contents):
            turns.add(position, content)
        config = _field(body, "generationConfig", "generation_config")
        thinking = _field(config, "thinkingConfig", "thinking_config")
        return Conversation(
            model=matched.group(1),
            stream=True,
            messages=tuple(system + turns.messages),
            tools=tools,
            reasoning=_field(thinking, "includeThoughts", "include_thoughts") is True
            and _field(thinking, "thinkingBudget", "thinking_budget") != 0,
            thinking_returned=turns.thinking_returned,
        )

    def encode(self, reply: Reply, turn: Turn) -> Encoded:
        return stream(reply, turn)

    def error_document(self, refusal: ApiRefusal) -> dict[str, Any]:
        status = _STATUS.get(refusal.status, "UNKNOWN")
        return {"error": {"code": refusal.status, "message": refusal.message, "status": status}}


@attrs.define
class _Turns:
    """The ``contents`` read turn by turn, checking each against the turn before it."""

    messages: list[Message] = attrs.field(factory=list)
    thinking_returned: int = 0
    rounds: int = 0
    previous: str | None = None
    """The kind of the turn before: ``user``, ``response`` (function responses) or ``model``."""
    open_calls: tuple[ToolCall, ...] = ()
    """The calls of the turn before, when it was a function call turn."""

    def add(self, position: int, content: object) -> None:
        if not isinstance(content, dict):
            raise ApiRefusal(_invalid_value(f"contents[{position}]", "Content", content))
        role = content.get("role", "user")
        if role not in ("user", "model"):
            raise ApiRefusal(BAD_ROLE)
        parts = _parts(content.get("parts"), f"contents[{position}]")
        if role == "model":
            self._model(parts, position)
        else:
            self._user(parts)

    def _model(self, parts: list[dict[str, Any]], position: int) -> None:
        self.rounds += 1
        thinking = "".join(p["text"] for p in parts if p.get("thought") is True and _text(p))
        texts: list[str] = []
        calls: list[ToolCall] = []
        for part in parts:
            signature = part.get("thoughtSignature", part.get("thought_signature"))
            if part.get("thought") is True:
                if not signature_matches(_text(part) or "", signature):
                    raise ApiRefusal(CORRUPTED_SIGNATURE)
                self.thinking_returned += 1
                continue
            if signature is not None and not (thinking and signature_matches(thinking, signature)):
                raise ApiRefusal(CORRUPTED_SIGNATURE)
            call = _field(part, "functionCall", "function_call")
            if call is not None:
                calls.append(self._call(call, len(calls), position))
            elif _text(part) is not None:
                texts.append(part["text"])
        if calls and self.previous not in ("user", "response"):
            raise ApiRefusal(CALL_TURN_ORDER)
        self.messages.append(
            Message(
                role="assistant", text="\n".join(texts), round=self.rounds, tool_calls=tuple(calls)
            )
        )
        self.previous, self.open_calls = "model", tuple(calls)

    def _call(self, call: object, slot: int, position: int) -> ToolCall:
        if not isinstance(call, dict):
            raise ApiRefusal(
                _invalid_value(f"contents[{position}].parts.function_call", "FunctionCall", call)
            )
        given = call.get("id")
        arguments = call.get("args")
        arguments = arguments if isinstance(arguments, dict) else {}
        return ToolCall(
            id=given if isinstance(given, str) and given else tool_call_id(self.rounds, slot),
            name=str(call.get("name", "")),
            arguments=arguments,
            raw_arguments=json.dumps(arguments, ensure_ascii=False),
        )

    def _user(self, parts: list[dict[str, Any]]) -> None:
        responses = [
            r
            for p in parts
            if (r := _field(p, "functionResponse", "function_response")) is not None
        ]
        texts = [p["text"] for p in parts if _text(p) is not None]
        if responses:
            self._responses(responses)
        if texts:
            self.messages.append(Message(role="user", text="\n".join(texts), round=self.rounds))
        self.previous, self.open_calls = "response" if responses else "user", ()

    def _responses(self, responses: list[object]) -> None:
        if not self.open_calls:
            raise ApiRefusal(RESPONSE_TURN_ORDER)
        if len(responses) != len(self.open_calls):
            raise ApiRefusal(RESPONSE_COUNT)
        unanswered = list(self.open_calls)
        for response in responses:
            call = _answered(response, unanswered)
            if call is None:
                raise ApiRefusal(RESPONSE_TURN_ORDER)
            unanswered.remove(call)
            assert isinstance(response, dict)  # _answered matches objects only
            self.messages.append(
                Message(
                    role="tool",
                    text=_response_text(response.get("response")),
                    round=self.rounds,
                    tool_call_id=call.id,
                )
            )


def _answered(response: object, unanswered: list[ToolCall]) -> ToolCall | None:
    """The open call a function response answers: the one of its id, else the first of its
    name (Pi sends no ids to Gemini models, and answers a round's calls in order)."""
    if not isinstance(response, dict):
        return None
    given = response.get("id")
    if isinstance(given, str) and given:
        return next((call for call in unanswered if call.id == given), None)
    return next((call for call in unanswered if call.name == response.get("name")), None)


def _response_text(response: object) -> str:
    """Pi's ``{"output": text}`` (or ``{"error": text}`` for a failed call) as the result text;
    any other response object as its JSON."""
    if isinstance(response, dict):
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                return str(response[key])
    return json.dumps(response, ensure_ascii=False) if response is not None else ""


def _system(instruction: object) -> list[Message]:
    if instruction is None:
        return []
    if isinstance(instruction, dict):
        parts = _parts(instruction.get("parts"), "system_instruction")
        text = "\n".join(p["text"] for p in parts if _text(p) is not None)
        return [Message(role="system", text=text, round=0)]
    raise ApiRefusal(_invalid_value("system_instruction", "Content", instruction))


def _parts(raw: object, field: str) -> list[dict[str, Any]]:
    if raw is not None and not isinstance(raw, list):
        raise ApiRefusal(_invalid_value(f"{field}.parts", "Part", raw))
    if not raw:
        raise ApiRefusal(violation(f"{field}.parts", "contents.parts must not be empty."))
    for position, part in enumerate(raw):
        if not isinstance(part, dict):
            raise ApiRefusal(_invalid_value(f"{field}.parts[{position}]", "Part", part))
        if not any(key in part for key in _PART_DATA):
            raise ApiRefusal(
                violation(
                    f"{field}.parts[{position}].data",
                    "required oneof field 'data' must have one initialized field",
                )
            )
    return raw


_PART_DATA = (
    "text",
    "inlineData",
    "inline_data",
    "fileData",
    "file_data",
    "functionCall",
    "function_call",
    "functionResponse",
    "function_response",
    "executableCode",
    "executable_code",
    "codeExecutionResult",
    "code_execution_result",
)


def _tools(raw: object) -> dict[str, Mapping[str, Any]]:
    """Offered function name -> the parameters schema it was declared with (``{}`` for none)."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ApiRefusal(_invalid_value("tools", "Tool", raw))
    tools: dict[str, Mapping[str, Any]] = {}
    problems: list[str] = []
    for t, tool in enumerate(raw):
        if not isinstance(tool, dict):
            raise ApiRefusal(_invalid_value(f"tools[{t}]", "Tool", tool))
        declarations = _field(tool, "functionDeclarations", "function_declarations") or []
        if not isinstance(declarations, list):
            raise ApiRefusal(
                _invalid_value(
                    f"tools[{t}].function_declarations", "FunctionDeclaration", declarations
                )
            )
        for d, declaration in enumerate(declarations):
            field = f"tools[{t}].function_declarations[{d}]"
            name = _field(declaration, "name", "name")
            if not isinstance(name, str) or not FUNCTION_NAME.match(name):
                problems.append(violation(f"{field}.name", INVALID_NAME))
                continue
            key, schema = _declared_schema(declaration)
            if schema is not None and not _object_schema(schema):
                problems.append(violation(f"{field}.{key}", NOT_OBJECT_SCHEMA))
            tools[name] = schema if isinstance(schema, dict) else {}
    if problems:
        # The API checks every declaration and lists each violation in one message.
        raise ApiRefusal("".join(problems))
    return tools


def _declared_schema(declaration: object) -> tuple[str, object]:
    for camel, snake in (
        ("parametersJsonSchema", "parameters_json_schema"),
        ("parameters", "parameters"),
    ):
        schema = _field(declaration, camel, snake)
        if schema is not None:
            return snake, schema
    return "parameters", None


def _object_schema(schema: object) -> bool:
    """An ``object`` schema (JSON Schema's ``object`` or the OpenAPI subset's ``OBJECT``) with
    no combinator at its top: what a function's arguments can be."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    return (
        isinstance(kind, str)
        and kind.lower() == "object"
        and not any(key in schema for key in TOP_LEVEL_COMBINATORS)
    )


def _field(value: object, camel: str, snake: str) -> Any:
    """A field by its JSON name or its proto name (the API accepts both)."""
    if not isinstance(value, dict):
        return None
    return value.get(camel, value.get(snake))


def _text(part: Mapping[str, Any]) -> str | None:
    text = part.get("text")
    return text if isinstance(text, str) else None


def _invalid_value(field: str, message_type: str, value: object) -> str:
    """The API's answer to a JSON value its proto field cannot hold."""
    kind = f"type.googleapis.com/google.ai.generativelanguage.v1beta.{message_type}"
    return f"Invalid value at '{field}' ({kind}), {json.dumps(value, ensure_ascii=False)[:200]}"
