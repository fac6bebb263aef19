"""A ``pi-squad bridge`` subprocess spoken to as the shim speaks to it (``BridgeProcess``), and the
published squad its spec child works on."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import IO, Any, Protocol

from application.child.role import READER_TOOL
from domain.chunks import ChunkTable
from tests.squads import multi_chunk_spec

BRIDGE = (sys.executable, "-m", "entrypoints.cli", "bridge")
SPEC = multi_chunk_spec(5)
TABLE = ChunkTable.of(SPEC)
COUNT = TABLE.chunk_count
TASK = "build"
ANSWER_TIMEOUT = 15.0


class BridgeProcess:
    """One bridge subprocess; every stdout line is one JSON message, split on ``\\n`` only."""

    def __init__(self, environment: Mapping[str, str], role: str = "child") -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PI_SQUAD_")}
        env.update(environment)
        self.process = subprocess.Popen(
            [*BRIDGE, "--role", role],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self.raw_lines: list[bytes] = []
        self._stderr = bytearray()
        self._next_id = 1
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            self.raw_lines.append(line)
            self.messages.put(json.loads(line))
        self.messages.put(None)

    def _drain(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(4096):  # type: ignore[attr-defined]
            self._stderr.extend(chunk)

    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: Mapping[str, Any]) -> None:
        self.send_raw(json.dumps(message, ensure_ascii=False).encode() + b"\n")

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> int:
        request_id = self._next_id
        self._next_id += 1
        self.send({"v": 1, "id": request_id, "method": method, "params": dict(params or {})})
        return request_id

    def next_message(self, timeout: float = ANSWER_TIMEOUT) -> dict[str, Any]:
        message = self.messages.get(timeout=timeout)
        assert message is not None, f"bridge exited: {self.stderr()}"
        return message

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The response to one request; events that arrive before it are kept in ``events``."""
        request_id = self.request(method, params)
        response = self.next_message()
        while "event" in response:
            self.events.append(response)
            response = self.next_message()
        assert response["id"] == request_id
        return response

    def result(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        response = self.call(method, params)
        assert response["ok"] is True, response
        return response["result"]

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=ANSWER_TIMEOUT)

    def wait_stderr(self, text: str, count: int, timeout: float = ANSWER_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while self.stderr().count(text) < count:
            assert time.monotonic() < deadline, f"stderr: {self.stderr()}"
            time.sleep(0.01)

    def silent(self, seconds: float = 0.3) -> bool:
        """Nothing more arrives on stdout within ``seconds``."""
        try:
            self.messages.get(timeout=seconds)
        except queue.Empty:
            return True
        return False


class StartBridge(Protocol):
    def __call__(self, environment: Mapping[str, str], role: str = "child") -> BridgeProcess: ...


def tool_result_message(tool_call_id: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """The finalised tool-result message as Pi 0.80.10 hands it to ``message_end``."""
    return {
        "role": "toolResult",
        "toolCallId": tool_call_id,
        "toolName": READER_TOOL,
        "content": [{"type": "text", "text": text} for text in result["texts"]],
        "details": result["details"],
        "isError": False,
        "timestamp": 1_700_000_000_000,
    }
