"""The wire format between the Pi extension shim and the Python bridge (``docs/bridge.md``).

Newline-delimited JSON, UTF-8, one object per line, every object carrying ``"v": 1``:

* request (shim -> bridge): ``{"v":1,"id":<int>,"method":<str>,"params":{...}}``
* response (bridge -> shim): ``{"v":1,"id":<same>,"ok":true,"result":...}`` or
  ``{"v":1,"id":<same>,"ok":false,"error":{"code":<str>,"message":<str>}}``
* event (bridge -> shim, unsolicited): ``{"v":1,"event":<str>,"data":{...}}``

No I/O here, only shapes, so the server and the tests share one definition.
"""

from __future__ import annotations

import enum
import errno
import json
from collections.abc import Mapping
from typing import Any, Final

import attrs

from application.ports import (
    CommandAnswer,
    CommandQuestion,
    Registrations,
    ToolDecision,
    ToolResult,
)

PROTOCOL_VERSION: Final = 1
MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""A longer request line is discarded (and logged): it cannot be a request of this protocol."""


class Method(enum.StrEnum):
    """The request methods, in the order a Pi process uses them."""

    HELLO = "hello"
    SESSION_START = "session_start"
    BEFORE_AGENT_START = "before_agent_start"
    TOOL_CALL = "tool_call"
    EXECUTE_TOOL = "execute_tool"
    MESSAGE_END = "message_end"
    CONTEXT = "context"
    PROVIDER_REQUEST = "provider_request"
    COMMAND = "command"
    COMPLETE = "complete"
    CANCEL_TOOL = "cancel_tool"
    UI_ANSWER = "ui_answer"
    NAVIGATION = "navigation"
    SESSION_SHUTDOWN = "session_shutdown"


# Unsolicited events (bridge -> shim) are the application's ``SessionEvent``s.


class ResponseErrorCode(enum.StrEnum):
    """The ``error.code`` of an ``ok:false`` response."""

    BAD_REQUEST = "bad_request"
    UNSUPPORTED_VERSION = "unsupported_version"
    UNKNOWN_METHOD = "unknown_method"
    INVALID_PARAMS = "invalid_params"
    TOOL_FAILED = "tool_failed"
    INTERNAL = "internal"


class ProtocolError(Exception):
    """A request the bridge cannot serve; becomes an ``ok:false`` response when it has an id."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@attrs.frozen
class Request:
    id: int
    method: str
    params: Mapping[str, Any]


RequestId = int | str


def parse_request(line: bytes) -> Request:
    """One request line (without its ``\\n``). Raises ``MalformedLine`` when no id can be
    answered, ``AnswerableError`` when the line has an id but is not a valid request."""
    try:
        decoded = json.loads(line)
    except ValueError as exc:  # invalid UTF-8 (UnicodeDecodeError) or invalid JSON
        raise MalformedLine(f"not a JSON line: {exc}") from None
    if not isinstance(decoded, dict):
        raise MalformedLine(f"not a JSON object: {type(decoded).__name__}")
    raw_id = decoded.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, int | str):
        raise MalformedLine("no usable id (an integer)")
    if decoded.get("v") != PROTOCOL_VERSION:
        raise AnswerableError(
            raw_id,
            ProtocolError(
                ResponseErrorCode.UNSUPPORTED_VERSION,
                f"protocol version {decoded.get('v')!r} is not supported (this bridge speaks "
                f"{PROTOCOL_VERSION})",
            ),
        )
    if not isinstance(raw_id, int):
        raise AnswerableError(
            raw_id, ProtocolError(ResponseErrorCode.BAD_REQUEST, "id must be an integer")
        )
    method = decoded.get("method")
    if not isinstance(method, str):
        raise AnswerableError(
            raw_id, ProtocolError(ResponseErrorCode.BAD_REQUEST, "method must be a string")
        )
    params = decoded.get("params", {})
    if not isinstance(params, dict):
        raise AnswerableError(
            raw_id, ProtocolError(ResponseErrorCode.BAD_REQUEST, "params must be an object")
        )
    return Request(id=raw_id, method=method, params=params)


class MalformedLine(Exception):
    """A line that carries no id to answer: it is logged, never answered."""


class AnswerableError(Exception):
    def __init__(self, request_id: RequestId, error: ProtocolError) -> None:
        super().__init__(str(error))
        self.request_id = request_id
        self.error = error


def ok_response(request_id: RequestId, result: object) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "id": request_id, "ok": True, "result": result}


def error_response(request_id: RequestId, code: str, message: str) -> dict[str, Any]:
    return {
        "v": PROTOCOL_VERSION,
        "id": request_id,
        "ok": False,
        "error": {"code": code, "message": message},
    }


def event_message(event: str, data: Mapping[str, Any]) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "event": event, "data": dict(data)}


# ``json.dumps`` with these arguments builds this very encoder on every call (a quarter of the
# cost of a small object); one instance writes the same text and keeps no state between calls.
_UTF8_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ASCII_ENCODER: Final = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def encode_line(message: object) -> bytes:
    """Compact JSON, raw UTF-8 (U+2028/U+2029 included: readers split on ``\\n`` only), one
    ``\\n``. A string holding a lone surrogate cannot be UTF-8: then ASCII escapes are used."""
    utf8 = _utf8_fragment(message)
    if utf8 is not None:
        return utf8 + b"\n"
    return _ASCII_ENCODER.encode(message).encode("ascii") + b"\n"


def registrations_payload(registrations: Registrations, *, lifecycle: bool) -> dict[str, Any]:
    """``hello``'s ``registrations``. ``lifecycle``: the shim keeps the bridge running and
    forwards ``session_start``/``session_shutdown``; with nothing registered and no lifecycle
    (a legacy child) the shim closes the bridge and installs nothing at all."""
    # ``sessionModels`` only where true: the other registrations read as before.
    payload: dict[str, Any] = {
        "tools": [
            {
                "name": tool.name,
                "label": tool.label,
                "description": tool.description,
                "parameters": dict(tool.parameters),
                **({"sessionModels": True} if tool.session_models else {}),
            }
            for tool in registrations.tools
        ],
        "commands": [
            {
                "name": command.name,
                "description": command.description,
                **({"sessionModels": True} if command.session_models else {}),
            }
            for command in registrations.commands
        ],
        "guard": registrations.guard,
        "messageEnd": registrations.message_end,
        "bootstrap": registrations.bootstrap,
        "lifecycle": lifecycle,
    }
    if registrations.entry_renderers:  # optional, like ``commands`` to an older shim
        payload["entryRenderers"] = list(registrations.entry_renderers)
    if registrations.navigation:  # optional too: an older shim forwards no navigation
        payload["navigation"] = list(registrations.navigation)
    if registrations.context:  # optional: only a spec child awaits Pi's ``context`` event
        payload["context"] = True
    if registrations.provider_request:  # optional: only a delegated worker admits requests
        payload["providerRequest"] = True
    return payload


def decision_payload(decision: ToolDecision) -> dict[str, Any]:
    if not decision.block:
        return {"block": False}
    payload: dict[str, Any] = {"block": True}
    if decision.reason is not None:
        payload["reason"] = decision.reason
    return payload


def command_answer_payload(answer: CommandAnswer) -> dict[str, Any]:
    ui: dict[str, Any] | None = None if answer.ui is None else dict(answer.ui)
    if ui is None and answer.notify is not None:
        ui = {"method": "notify", "text": answer.notify, "level": answer.level}
    message = None if answer.message is None else dict(answer.message)
    payload: dict[str, Any] = {"ui": ui, "message": message}
    if answer.question is not None:
        payload["question"] = question_payload(answer.question)
    return payload


def question_payload(question: CommandQuestion) -> dict[str, Any]:
    """A dialog's next question (docs/bridge.md, ``command``), ``options`` for a choice only."""
    payload: dict[str, Any] = {
        "key": question.key,
        "kind": question.kind.value,
        "title": question.title,
        "args": question.args,
        "cancelled": question.cancelled,
    }
    if question.options:
        payload["options"] = list(question.options)
    return payload


def tool_result_payload(result: ToolResult) -> dict[str, Any]:
    return {"texts": list(result.texts), "details": dict(result.details)}


def tool_result_line(request_id: RequestId, result: ToolResult) -> bytes:
    """``encode_line(ok_response(request_id, tool_result_payload(result)))``, the same bytes,
    with each text escaped on its UTF-8 bytes (``_json_string_parts``): ``json`` escapes a
    32 KiB chunk character by character, which costs more than the rest of the answer."""
    if type(request_id) is int:  # not a bool: JSON writes those as true/false
        parts = _tool_result_parts(request_id, result)
        if parts is not None:
            return b"".join(parts)
    # A string id, or a lone surrogate somewhere: what the generic encoder writes (then every
    # non-ASCII character of the line is escaped, which no per-text fragment could reproduce).
    return encode_line(ok_response(request_id, tool_result_payload(result)))


def _tool_result_parts(request_id: int, result: ToolResult) -> list[bytes] | None:
    """The pieces of ``tool_result_line``, joined once (a 32 KiB text is copied only there);
    ``None`` when a text or ``details`` cannot be UTF-8 (a lone surrogate)."""
    details = _utf8_fragment(dict(result.details))
    if details is None:
        return None
    parts = [b'{"v":%d,"id":%d,"ok":true,"result":{"texts":[' % (PROTOCOL_VERSION, request_id)]
    encodings = result.utf8
    for position, text in enumerate(result.texts):
        if position:
            parts.append(b",")
        text_parts = _json_string_parts(text, encodings[position] if encodings else None)
        if text_parts is None:
            return None
        parts += text_parts
    parts += (b'],"details":', details, b"}}\n")
    return parts


# What ``json.dumps(..., ensure_ascii=False)`` escapes with a short form; backslash first, so
# no escape introduced here is escaped again.
_SHORT_ESCAPES = (
    (b"\\", b"\\\\"),
    (b'"', b'\\"'),
    (b"\n", b"\\n"),
    (b"\r", b"\\r"),
    (b"\t", b"\\t"),
    (b"\x08", b"\\b"),
    (b"\x0c", b"\\f"),
)
# The other control characters, which ``json`` writes as ``\u00XX``: rare, so their presence
# only sends the text to ``json`` itself.
_OTHER_CONTROLS = bytes(code for code in range(0x20) if code not in b"\n\r\t\x08\x0c")
_OTHER_CONTROL_BYTES = tuple(bytes((code,)) for code in _OTHER_CONTROLS)
# From this length, one ``in`` (memchr) per control byte beats ``translate``'s byte-by-byte
# loop (measured on 32 KiB chunk texts: 11 us vs 18 us); below it, the fixed cost of 27 calls
# dominates.
_SCAN_FROM = 4096


def _json_string_parts(text: str, utf8: bytes | None) -> tuple[bytes, ...] | None:
    """``text`` as ``encode_line`` writes it, in pieces: raw UTF-8 but for the escapes JSON
    requires, each replacement one pass in C over the bytes. ``None`` for a lone surrogate.
    ``utf8`` is ``text.encode("utf-8")`` when the caller holds it (``ToolResult.utf8``)."""
    if utf8 is None:
        try:
            utf8 = text.encode("utf-8")
        except UnicodeEncodeError:
            return None
    if _has_other_control(utf8):
        return (_fragment(text),)  # json's \u00XX form; cannot fail: ``text`` is UTF-8
    for byte, escape in _SHORT_ESCAPES:
        utf8 = utf8.replace(byte, escape)  # absent: the same object back, after one memchr
    return (b'"', utf8, b'"')


def _has_other_control(utf8: bytes) -> bool:
    if len(utf8) < _SCAN_FROM:
        return len(utf8.translate(None, _OTHER_CONTROLS)) != len(utf8)
    return any(control in utf8 for control in _OTHER_CONTROL_BYTES)


def _utf8_fragment(value: object) -> bytes | None:
    """``value`` as ``encode_line`` writes it without the newline, or ``None`` when a string
    in it holds a lone surrogate (``encode_line`` then escapes the whole line to ASCII)."""
    try:
        return _UTF8_ENCODER.encode(value).encode("utf-8")
    except UnicodeEncodeError:
        return None


def _fragment(value: object) -> bytes:
    """``value`` as ``encode_line`` writes it, without the newline."""
    return encode_line(value)[:-1]


def failure_name(exc: Exception) -> str:
    """What an internal failure's answer may say: its type and, for an OS error, its errno name
    (``OSError (EROFS)``): never a message, which may quote a path or content."""
    name = type(exc).__name__
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"{name} ({errno.errorcode.get(exc.errno, exc.errno)})"
    return name
