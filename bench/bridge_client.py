"""The shim's side of the JSON-lines bridge protocol (docs/bridge.md), driven from Python.

``BridgeProcess`` starts the real ``pi-squad bridge --role child`` subprocess (this interpreter,
``-m entrypoints.cli``, exactly the argv the end-to-end tests pin through ``PI_SQUAD_BRIDGE``)
and speaks to it over its stdin/stdout pipes the way ``entrypoints/pi/index.ts`` does: one
compact JSON object per line, raw UTF-8, ids increasing from 1.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from bench.common import REPO

BRIDGE_ARGV = (sys.executable, "-m", "entrypoints.bridge")
PROTOCOL_VERSION = 1


class BridgeError(RuntimeError):
    pass


class BridgeProcess:
    def __init__(
        self,
        env: Mapping[str, str],
        *,
        stderr_path: Path,
        role: str = "child",
        argv: Sequence[str] = BRIDGE_ARGV,
    ) -> None:
        self._stderr_path = stderr_path
        self._stderr: IO[bytes] = stderr_path.open("wb")
        self.started_ns = time.perf_counter_ns()
        self.process = subprocess.Popen(
            [*argv, "--role", role],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=dict(env),
            cwd=REPO,
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self._in = self.process.stdin
        self._out = self.process.stdout
        self._next_id = 1

    # -- protocol -------------------------------------------------------------------------------

    def send(self, method: str, params: Mapping[str, Any]) -> int:
        request_id = self._next_id
        self._next_id += 1
        line = json.dumps(
            {"v": PROTOCOL_VERSION, "id": request_id, "method": method, "params": params},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        self._in.write(line.encode("utf-8") + b"\n")
        self._in.flush()
        return request_id

    def receive(self) -> dict[str, Any]:
        """The next response (events are skipped)."""
        while True:
            line = self._out.readline()
            if not line:
                raise BridgeError(f"the bridge closed its output:\n{self.stderr_tail()}")
            message: dict[str, Any] = json.loads(line)
            if "event" not in message:
                return message

    def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """One request answered; raises on a response for another id."""
        request_id = self.send(method, params)
        response = self.receive()
        if response.get("id") != request_id:
            raise BridgeError(f"answer for {response.get('id')} while waiting for {request_id}")
        return response

    def call(self, method: str, params: Mapping[str, Any]) -> Any:
        """``request`` that must succeed; returns ``result``."""
        response = self.request(method, params)
        if not response.get("ok"):
            raise BridgeError(f"{method} refused: {response.get('error')}")
        return response.get("result")

    # -- lifetime -------------------------------------------------------------------------------

    def stderr_tail(self) -> str:
        self._stderr.flush()
        try:
            return self._stderr_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def close(self, timeout: float = 10.0) -> int:
        with contextlib.suppress(OSError):
            self._in.close()
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self._out.close()
        self._stderr.close()
        return code

    def __enter__(self) -> BridgeProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
