"""A stand-in ``pi --mode rpc`` executable for the parent's adapter (``adapters.pi_rpc``).

Run as ``python fake_pi_executable.py --mode rpc ...``; standard library only, so it never
imports the project. It speaks Pi 0.80.10's RPC framing: one JSON command per stdin line,
records on stdout split on ``\\n`` only and written with raw non-ASCII (U+2028 included),
responses ``{"type":"response","id","command","success",...}``, events without ids.

``FAKE_PI_MODE`` chooses the behaviour:

``settle``        (default) accepts the prompt and runs two turns (text plus one ``read`` tool
                  call, then text) to ``agent_settled``; exits 0 when stdin closes, as Pi does.
``spam``          like ``settle`` with ``FAKE_PI_SPAM`` (default 2000) ``message_update``
                  records, each repeating the whole partial message, before the first message end.
                  With ``FAKE_PI_BIG_TEXT=N``, the last assistant message ends with a block of
                  N ``y`` characters (a record longer than one pipe read).
``unicode``       like ``settle``, preceded by a malformed line, a line of invalid UTF-8 and one
                  with a duplicate key, and with a raw U+2028 inside the final assistant text.
``linger``        like ``settle`` but ignores stdin closing (exits only on a signal).
``exit``          accepts the prompt, starts a turn, writes over 64 KiB to stderr ending with
                  ``fake pi: fatal: boom``, and exits with status 3 after ``FAKE_PI_EXIT_DELAY``
                  seconds (default 0); never answers anything after the prompt.
``hang``          ignores SIGTERM, accepts the prompt, starts a turn and never settles.
``busy``          accepts the prompt, starts a ``bash`` tool call and stays streaming:
                  ``steer``/``follow_up`` are accepted
                  unless their message is ``refuse``; ``abort`` ends the run (aborted message,
                  ``agent_settled``, then the ``abort`` response, in Pi's order).
``provider_error`` accepts the prompt; the model's response fails (an assistant message with
                  ``stopReason: "error"`` and ``errorMessage`` ``PROVIDER_ERROR``), Pi retries
                  (``auto_retry_start``), the retry fails too and Pi gives up
                  (``auto_retry_end`` with ``finalError``); then it stalls, never settling.
``refuse_prompt`` answers ``prompt`` with ``success: false``.
``silent``        never answers ``get_state``.
``no_session``    answers ``get_state`` without a ``sessionFile`` (as ``--no-session`` does).
``die``           writes ``fake pi: cannot start`` to stderr and exits 2 before reading stdin.

``FAKE_PI_RECORD``: a path where it writes, before reading stdin, a JSON object with its
``argv`` (after the script), ``cwd``, ``env``, ``pid``, and the appended system prompt file's
``promptFile``, ``promptMode`` and ``promptText``.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time
import uuid
from typing import Any

MODE = os.environ.get("FAKE_PI_MODE", "settle")
SETTLING_MODES = ("settle", "spam", "unicode", "linger")
FATAL = "fake pi: fatal: boom"

USAGE_ONE = {
    "input": 120,
    "output": 7,
    "cacheRead": 0,
    "cacheWrite": 0,
    "reasoning": 0,
    "totalTokens": 127,
    "cost": {"input": 0.01, "output": 0.0025, "cacheRead": 0, "cacheWrite": 0, "total": 0.0125},
}
USAGE_TWO = {
    "input": 300,
    "output": 11,
    "cacheRead": 0,
    "cacheWrite": 0,
    "reasoning": 0,
    "totalTokens": 311,
    "cost": {"input": 0.03, "output": 0.005, "cacheRead": 0, "cacheWrite": 0, "total": 0.035},
}
FIRST_TEXT = "Reading the file."
LAST_TEXTS = ("All done.", "Second block")
PROVIDER_ERROR = "429 rate_limit_error: slow down"
UNICODE_TEXT = "line\u2028separated \u00e9t\u00e9 \U0001f600"


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def emit(record: dict[str, Any]) -> None:
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))  # compact, as Pi
    sys.stdout.buffer.write(text.encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def raw(line: bytes) -> None:
    sys.stdout.buffer.write(line + b"\n")
    sys.stdout.buffer.flush()


def respond(command: dict[str, Any], success: bool, **extra: Any) -> None:
    record: dict[str, Any] = {"type": "response", "command": command.get("type")}
    if "id" in command:
        record["id"] = command["id"]
    record["success"] = success
    record.update(extra)
    emit(record)


def assistant(content: list[dict[str, Any]], usage: dict[str, Any], stop: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "api": "openai-completions",
        "provider": "fake",
        "model": "fake-model",
        "usage": usage,
        "stopReason": stop,
        "timestamp": int(time.time() * 1000),
    }


class FakePi:
    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.streaming = False
        resume = option(argv, "--session")
        session_dir = option(argv, "--session-dir")
        if resume is not None:
            self.session_file: str | None = resume
            self.session_id = os.path.basename(resume).rsplit(".", 1)[0]
        elif session_dir is not None:
            self.session_id = uuid.uuid4().hex
            self.session_file = os.path.join(session_dir, f"fake_{self.session_id}.jsonl")
        else:
            self.session_file = None
            self.session_id = uuid.uuid4().hex

    def record(self, path: str) -> None:
        prompt_file = option(self.argv, "--append-system-prompt")
        info: dict[str, Any] = {
            "argv": self.argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "pid": os.getpid(),
            "promptFile": prompt_file,
        }
        if prompt_file is not None:
            info["promptMode"] = stat.S_IMODE(os.stat(prompt_file).st_mode)
            with open(prompt_file, encoding="utf-8") as handle:
                info["promptText"] = handle.read()
        staging = path + ".tmp"
        with open(staging, "w", encoding="utf-8") as handle:
            json.dump(info, handle)
        os.replace(staging, path)

    def serve(self) -> None:
        for line in sys.stdin.buffer:
            command = json.loads(line)
            kind = command.get("type")
            if kind == "get_state":
                self.get_state(command)
            elif kind == "prompt":
                self.prompt(command)
            elif kind in ("steer", "follow_up"):
                if MODE in ("hang", "exit"):
                    continue
                refused = command.get("message") == "refuse" or not self.streaming
                respond(command, not refused, **({"error": "refused"} if refused else {}))
            elif kind == "abort":
                if MODE in ("hang", "exit"):
                    continue
                if self.streaming:
                    self.streaming = False
                    aborted = assistant([], USAGE_ONE, "aborted")
                    emit({"type": "message_end", "message": aborted})
                    emit({"type": "turn_end", "message": aborted, "toolResults": []})
                    emit({"type": "agent_end", "messages": [aborted], "willRetry": False})
                    emit({"type": "agent_settled"})
                respond(command, True)
            else:
                respond(command, False, error=f"Unknown command: {kind}")
        if MODE in ("linger", "hang"):
            while True:
                time.sleep(60)

    def get_state(self, command: dict[str, Any]) -> None:
        if MODE == "silent":
            return
        data: dict[str, Any] = {
            "thinkingLevel": "off",
            "isStreaming": self.streaming,
            "sessionId": self.session_id,
            "messageCount": 0,
        }
        if self.session_file is not None and MODE != "no_session":
            data["sessionFile"] = self.session_file
        respond(command, True, data=data)

    def prompt(self, command: dict[str, Any]) -> None:
        if MODE == "refuse_prompt" or self.streaming:
            respond(command, False, error="Agent is already processing.")
            return
        respond(command, True)
        self.streaming = True
        emit({"type": "agent_start"})
        emit({"type": "turn_start"})
        if MODE == "exit":
            sys.stderr.write("x" * 70_000 + "\n" + FATAL + "\n")
            sys.stderr.flush()
            time.sleep(float(os.environ.get("FAKE_PI_EXIT_DELAY", "0")))
            os._exit(3)
        if MODE == "busy":
            emit({"type": "tool_execution_start", "toolCallId": "call_busy", "toolName": "bash"})
        if MODE == "provider_error":
            failed = assistant([], USAGE_ONE, "error") | {"errorMessage": PROVIDER_ERROR}
            emit({"type": "message_end", "message": failed})
            emit({"type": "agent_end", "messages": [failed], "willRetry": True})
            emit({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 1, "delayMs": 1,
                  "errorMessage": PROVIDER_ERROR})  # fmt: skip
            emit({"type": "message_end", "message": failed})
            emit({"type": "auto_retry_end", "success": False, "attempt": 1,
                  "finalError": PROVIDER_ERROR})  # fmt: skip
        if MODE not in SETTLING_MODES:
            return
        self.run_to_settlement(str(command.get("message", "")))

    def run_to_settlement(self, message: str) -> None:
        if MODE == "unicode":
            raw(b"{not json")
            raw(b'{"type":"agent_start","text":"\xff\xfe"}')
            raw(b'{"type":"tool_execution_start","type":"agent_start"}')
        user = {"role": "user", "content": [{"type": "text", "text": message}], "timestamp": 0}
        emit({"type": "message_start", "message": user})
        emit({"type": "message_end", "message": user})
        call = {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a"}}
        first = assistant([{"type": "text", "text": FIRST_TEXT}, call], USAGE_ONE, "toolUse")
        emit({"type": "message_start", "message": assistant([], USAGE_ONE, "stop")})
        if MODE == "spam":
            for index in range(int(os.environ.get("FAKE_PI_SPAM", "2000"))):
                partial = assistant([{"type": "text", "text": "x" * index}], USAGE_ONE, "stop")
                event = {"type": "text_delta", "contentIndex": 0, "delta": "x"}
                emit({"type": "message_update", "message": partial, "assistantMessageEvent": event})
        emit({"type": "message_end", "message": first})
        emit({"type": "tool_execution_start", "toolCallId": "call_1", "toolName": "read"})
        result = {"content": [{"type": "text", "text": "file text"}], "details": {}}
        emit({"type": "tool_execution_end", "toolCallId": "call_1", "toolName": "read"} | result)
        tool_result = {"role": "toolResult", "toolCallId": "call_1", "toolName": "read"} | result
        emit({"type": "message_start", "message": tool_result})
        emit({"type": "message_end", "message": tool_result})
        emit({"type": "turn_end", "message": first, "toolResults": [tool_result]})
        emit({"type": "turn_start"})
        texts = (*LAST_TEXTS, UNICODE_TEXT) if MODE == "unicode" else LAST_TEXTS
        if big := int(os.environ.get("FAKE_PI_BIG_TEXT", "0")):
            texts = (*texts, "y" * big)
        last = assistant([{"type": "text", "text": text} for text in texts], USAGE_TWO, "stop")
        emit({"type": "message_start", "message": last})
        emit({"type": "message_end", "message": last})
        emit({"type": "turn_end", "message": last, "toolResults": []})
        emit(
            {"type": "agent_end", "messages": [user, first, tool_result, last], "willRetry": False}
        )
        if self.session_file is not None:
            with open(self.session_file, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"type": "message", "text": message}) + "\n")
        self.streaming = False
        emit({"type": "agent_settled"})


def main() -> int:
    argv = sys.argv[1:]
    if option(argv, "--mode") != "rpc":
        sys.stderr.write("fake pi: only --mode rpc is faked\n")
        return 2
    if MODE == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    fake = FakePi(argv)
    record = os.environ.get("FAKE_PI_RECORD")
    if record:
        fake.record(record)
    if MODE == "die":
        sys.stderr.write("fake pi: cannot start\n")
        return 2
    fake.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
