"""``openai-responses``: ``POST /v1/responses`` as OpenAI's Responses API answers it (Pi's OpenAI
SDK client posts to ``{baseUrl}/responses``, the provider's ``baseUrl`` being ``.../v1``).

What Pi 0.80.10 sends (``openai-responses-shared.js``): ``input`` items in order: the system
prompt as a ``developer`` message, ``user`` messages of ``input_text`` parts, each earlier
assistant turn as its items (the ``reasoning`` item it was streamed, sent back whole; a
``message`` of ``output_text``; one ``function_call`` per call) and each tool result as a
``function_call_output`` (its text blocks joined by ``"\\n"``). ``tools`` are ``{"type":
"function", "name", "description", "parameters", "strict"}``; ``reasoning: {"effort",
"summary"}`` asks for thinking (``effort: "none"`` asks for none); ``stream: true`` and
``store: false`` always, so only streams are answered (see ``openai_responses_stream``).

Refused as the API refuses, in its words, with its ``param`` and ``code``: a function tool whose
name is outside ``^[a-zA-Z0-9_-]{1,64}$`` or whose ``parameters`` is not a plain object schema at
the top level; a ``function_call_output`` whose ``call_id`` no earlier ``function_call`` made,
and a ``function_call`` no later output answers; an item id without its type's prefix (``fc``,
``msg``, ``rs``); a ``reasoning`` item not followed by the message or call it preceded, one
without ``encrypted_content`` (404: under ``store: false`` there is nothing to look it up in), and
one whose ``encrypted_content`` does not verify. The scripted model's ``encrypted_content`` is
the ``thinking_signature`` of the item's summary, so a summary changed on its way through Pi
fails the check as well (the real API reasons from the encrypted content and would not notice).

The conversation: ``instructions`` and ``system``/``developer`` messages become ``system``
messages; the assistant items of one turn (a run of them, a ``reasoning`` item opening a new
one) become one ``assistant`` message, its text the ``output_text`` parts joined by ``"\\n"``;
each ``function_call_output`` a ``tool`` message.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

from adapters.scripted_model.conversation import Conversation, Message, ToolCall
from adapters.scripted_model.replies import Reply
from adapters.scripted_model.wire.common import (
    ApiRefusal,
    Encoded,
    Turn,
    openai_schema_problem,
    signature_matches,
)
from adapters.scripted_model.wire.fixed_paths import AnswersOnPaths
from adapters.scripted_model.wire.openai_responses_stream import encode_stream

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_TOOL_NAME = 64
_ID_PREFIX = {"function_call": "fc", "message": "msg", "reasoning": "rs"}
_ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
_SIGNATURE_BYTES = 32  # an HMAC-SHA256 digest: anything else was never this server's


class ResponsesRefusal(ApiRefusal):
    """A refusal naming the request field at fault (``param``) and the API's error ``code``."""

    def __init__(
        self, message: str, *, param: str | None = None, code: str | None = None, status: int = 400
    ) -> None:
        super().__init__(message, status=status)
        self.param = param
        self.code = code


class OpenAIResponses(AnswersOnPaths):
    api = "openai-responses"
    paths = ("/v1/responses", "/responses")

    def parse(self, body: object, path: str) -> Conversation:
        if not isinstance(body, dict):
            raise ResponsesRefusal(
                "We could not parse the JSON body of your request. (HINT: This likely means "
                "you aren't using your HTTP library correctly. The OpenAI API expects a JSON "
                "payload, but what was sent was not valid JSON. If you have trouble figuring "
                "out how to fix this, please contact us through our help center at "
                "help.openai.com.)"
            )
        tools = _tools(body.get("tools"))
        reader = _InputReader()
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            reader.messages.append(Message(role="system", text=instructions, round=0))
        reader.read(body.get("input"))
        model = body.get("model")
        reasoning = body.get("reasoning")
        return Conversation(
            model=model if isinstance(model, str) else "",
            stream=body.get("stream") is True,
            messages=tuple(reader.messages),
            tools=tools,
            # No effort is the model's default (medium); only "none" turns thinking off.
            reasoning=isinstance(reasoning, dict) and reasoning.get("effort") != "none",
            thinking_returned=reader.returned,
        )

    def encode(self, reply: Reply, turn: Turn) -> Encoded:
        # Pi always streams; a request with ``stream: false`` is answered with the stream too.
        return encode_stream(reply, turn)

    def error_document(self, refusal: ApiRefusal) -> dict[str, Any]:
        param, code = (
            (refusal.param, refusal.code) if isinstance(refusal, ResponsesRefusal) else (None, None)
        )
        return {
            "error": {
                "message": refusal.message,
                "type": refusal.kind,
                "param": param,
                "code": code,
            }
        }


class _InputReader:
    """Reads ``input`` items in order into messages, checking what the API checks on the way."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.returned = 0
        self._rounds = 0
        self._turn: tuple[list[str], list[ToolCall]] | None = None
        self._made: set[str] = set()
        self._unanswered: dict[str, None] = {}  # insertion-ordered: the API names the first

    def read(self, raw: object) -> None:
        if isinstance(raw, str):
            self.messages.append(Message(role="user", text=raw, round=0))
            return
        if not isinstance(raw, list) or not raw:
            raise ResponsesRefusal(
                "Missing required parameter: 'input'.",
                param="input",
                code="missing_required_parameter",
            )
        for position, item in enumerate(raw):
            where = f"input[{position}]"
            if not isinstance(item, dict):
                raise _invalid_type(where, "an object", item)
            kind = item.get("type", "message")
            _check_id(item, kind, where)
            if kind == "message":
                self._message(item, where)
            elif kind == "reasoning":
                self._reasoning(item, raw[position + 1] if position + 1 < len(raw) else None)
            elif kind == "function_call":
                self._function_call(item, where)
            elif kind == "function_call_output":
                self._output(item, where)
            else:
                raise ResponsesRefusal(
                    f"Invalid value: '{kind}'.", param=f"{where}.type", code="invalid_value"
                )
        self._close()
        if self._unanswered:
            call_id = next(iter(self._unanswered))
            raise ResponsesRefusal(
                f"No tool output found for function call {call_id}.", param="input"
            )

    def _message(self, item: Mapping[str, Any], where: str) -> None:
        role = item.get("role")
        if not isinstance(role, str) or role not in _ROLES:
            raise ResponsesRefusal(
                f"Invalid value: '{role}'. Supported values are: 'assistant', 'system', "
                "'developer', and 'user'.",
                param=f"{where}.role",
                code="invalid_value",
            )
        text = _text(item.get("content"), f"{where}.content")
        if role == "assistant":
            self._open()[0].append(text)
            return
        self._close()
        self.messages.append(Message(role=_ROLES[role], text=text, round=self._rounds))

    def _reasoning(self, item: Mapping[str, Any], following: object) -> None:
        item_id = item.get("id")
        if not _is_assistant_output(following):
            raise ResponsesRefusal(
                f"Item '{item_id}' of type 'reasoning' was provided without its required "
                "following item.",
                param="input",
            )
        content = item.get("encrypted_content")
        if not isinstance(content, str) or not content:
            raise ResponsesRefusal(
                f"Item with id '{item_id}' not found. Items are not persisted when `store` is "
                "set to false. Try again with `store` set to true, or remove this item from "
                "your input.",
                param="input",
                status=404,
            )
        summary = item.get("summary")
        parts = summary if isinstance(summary, list) else []
        text = "\n\n".join(
            part["text"]
            for part in parts
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
        if not signature_matches(text, content):
            reason = (
                ""
                if _decodable(content)
                else (" Reason: Encrypted content could not be decrypted or parsed.")
            )
            raise ResponsesRefusal(
                f"The encrypted content for item {item_id} could not be verified.{reason}",
                code="invalid_encrypted_content",
            )
        self._close()  # a reasoning item is the first of its turn's items
        self._open()
        self.returned += 1

    def _function_call(self, item: Mapping[str, Any], where: str) -> None:
        call_id = _string(item, "call_id", where)
        name = _string(item, "name", where)
        raw_arguments = _string(item, "arguments", where)
        try:
            decoded = json.loads(raw_arguments) if raw_arguments else {}
        except json.JSONDecodeError:
            decoded = {}
        arguments = decoded if isinstance(decoded, dict) else {}
        self._open()[1].append(ToolCall(call_id, name, arguments, raw_arguments))
        self._made.add(call_id)
        self._unanswered[call_id] = None

    def _output(self, item: Mapping[str, Any], where: str) -> None:
        call_id = _string(item, "call_id", where)
        if call_id not in self._made:
            raise ResponsesRefusal(
                f"No tool call found for function call output with call_id {call_id}.",
                param="input",
            )
        if "output" not in item:
            raise _missing(f"{where}.output")
        text = _text(item["output"], f"{where}.output")
        self._unanswered.pop(call_id, None)
        self._close()
        self.messages.append(
            Message(role="tool", text=text, round=self._rounds, tool_call_id=call_id)
        )

    def _open(self) -> tuple[list[str], list[ToolCall]]:
        if self._turn is None:
            self._turn = ([], [])
        return self._turn

    def _close(self) -> None:
        if self._turn is None:
            return
        texts, calls = self._turn
        self._turn = None
        self._rounds += 1
        self.messages.append(
            Message(
                role="assistant",
                text="\n".join(t for t in texts if t),
                round=self._rounds,
                tool_calls=tuple(calls),
            )
        )


def _tools(raw: object) -> dict[str, Mapping[str, Any]]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise _invalid_type("tools", "an array", raw)
    tools: dict[str, Mapping[str, Any]] = {}
    for position, tool in enumerate(raw):
        where = f"tools[{position}]"
        if not isinstance(tool, dict):
            raise _invalid_type(where, "an object", tool)
        if tool.get("type") != "function":
            continue  # the API's own tools (web search and the like) are none a policy calls
        name = _string(tool, "name", where)
        if len(name) > MAX_TOOL_NAME:
            raise ResponsesRefusal(
                f"Invalid '{where}.name': string too long. Expected a string with maximum "
                f"length {MAX_TOOL_NAME}, but got a string with length {len(name)} instead.",
                param=f"{where}.name",
                code="string_above_max_length",
            )
        if not TOOL_NAME.match(name):
            raise ResponsesRefusal(
                f"Invalid '{where}.name': string does not match pattern. Expected a string "
                "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                param=f"{where}.name",
                code="invalid_value",
            )
        if "parameters" not in tool:
            raise _missing(f"{where}.parameters")
        parameters = tool["parameters"]
        if parameters is not None:  # null is the API's "no parameters"
            problem = openai_schema_problem(name, parameters)
            if problem is not None:
                raise ResponsesRefusal(
                    problem, param=f"{where}.parameters", code="invalid_function_parameters"
                )
        tools[name] = parameters if isinstance(parameters, dict) else {}
    return tools


def _check_id(item: Mapping[str, Any], kind: object, where: str) -> None:
    item_id = item.get("id")
    prefix = _ID_PREFIX.get(kind) if isinstance(kind, str) else None
    if prefix is not None and isinstance(item_id, str) and not item_id.startswith(prefix):
        raise ResponsesRefusal(
            f"Invalid '{where}.id': '{item_id}'. Expected an ID that begins with '{prefix}'.",
            param=f"{where}.id",
            code="invalid_id_prefix",
        )


def _is_assistant_output(item: object) -> bool:
    if not isinstance(item, dict):
        return False
    kind = item.get("type", "message")
    return kind == "function_call" or (kind == "message" and item.get("role") == "assistant")


def _decodable(content: str) -> bool:
    try:
        return len(base64.b64decode(content, validate=True)) == _SIGNATURE_BYTES
    except (binascii.Error, ValueError):
        return False


def _text(content: object, where: str) -> str:
    """A string, or the text of a list of content parts (``input_text``, ``output_text``)
    joined by newlines; images and files carry none."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _invalid_type(where, "one of a string or array of objects", content)
    return "\n".join(
        part["text"]
        for part in content
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def _string(item: Mapping[str, Any], field: str, where: str) -> str:
    value = item.get(field)
    if value is None:
        raise _missing(f"{where}.{field}")
    if not isinstance(value, str):
        raise _invalid_type(f"{where}.{field}", "a string", value)
    return value


def _missing(param: str) -> ResponsesRefusal:
    return ResponsesRefusal(
        f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter"
    )


def _invalid_type(param: str, expected: str, value: object) -> ResponsesRefusal:
    return ResponsesRefusal(
        f"Invalid type for '{param}': expected {expected}, but got {_json_type(value)} instead.",
        param=param,
        code="invalid_type",
    )


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
