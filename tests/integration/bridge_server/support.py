"""Scripted handlers for the in-process bridge server (``ScriptedEvents``) and the server itself
served over real pipes (``Served``)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import threading
from collections.abc import Mapping
from typing import Any

from adapters.bridge import BridgeRole, BridgeServer, Emit
from application.ports import (
    ALLOW,
    CommandAnswer,
    CommandSpec,
    Registrations,
    SessionIdentity,
    ToolDecision,
    ToolFailure,
    ToolResult,
    ToolSpec,
)
from domain.flows.models import SessionModels

TIMEOUT = 5.0


class ScriptedEvents:
    """A ``PiEvents`` and main-role handler whose answers the test controls."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[str] = []
        self.emit: Emit | None = None
        self.detached = False
        self.models: list[SessionModels] = []
        # How many ``session_models`` the role had heard when each tool call executed.
        self.models_heard: dict[str, int] = {}

    def registrations(self) -> Registrations:
        tool = ToolSpec(name="probe", label="Probe", description="d", parameters={})
        command = CommandSpec(name="probe", description="a probe command")
        return Registrations(
            tools=(tool,), guard=True, message_end=True, bootstrap=True, commands=(command,)
        )

    def session_start(self) -> None:
        self.calls.append("session_start")

    def before_agent_start(self) -> str | None:
        return "appended\u2028text"

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision:
        if tool_name == "explode":
            raise RuntimeError("secret internals")
        return ALLOW if tool_name == "ok" else ToolDecision(block=True)

    def execute_tool(self, tool_call_id: str, tool_name: str, params: object) -> ToolResult:
        self.models_heard[tool_call_id] = len(self.models)
        if tool_call_id == "slow":
            assert self.release.wait(TIMEOUT)
        if tool_name == "refuse":
            raise ToolFailure("refused: exactly this text")
        return ToolResult(texts=(tool_call_id, json.dumps(params)), details={"id": tool_call_id})

    def message_end(self, message: Mapping[str, Any]) -> None:
        self.calls.append(f"message_end:{message.get('toolCallId')}")

    def context(self) -> None:
        self.calls.append("context")

    def session_shutdown(self) -> None:
        self.calls.append("session_shutdown")

    def identify(self, identity: SessionIdentity) -> None:
        if identity != SessionIdentity():  # an older shim's ``{}`` names no session
            self.calls.append(f"identify:{identity.session_file}:{identity.session_id}")

    def attach(self, emit: Emit) -> None:
        self.calls.append("attach")
        self.emit = emit

    def detach(self) -> None:
        self.calls.append("detach")
        self.detached = True

    def session_ui(self, has_ui: bool) -> None:
        self.calls.append(f"session_ui:{has_ui}")

    def cancel_tool(self, tool_call_id: str) -> None:
        self.calls.append(f"cancel_tool:{tool_call_id}")

    def ui_answer(self, request_id: str, confirmed: bool) -> None:
        self.calls.append(f"ui_answer:{request_id}:{confirmed}")

    def session_models(self, models: SessionModels) -> None:
        self.models.append(models)

    def command(self, name: str, args: str) -> CommandAnswer:
        self.calls.append(f"command:{name}:{args}")
        if args == "refuse":
            raise ToolFailure("no such squad: exactly this text")
        return CommandAnswer(notify=f"{name} {args}", level="warning")


class Served:
    """A ``BridgeServer`` on a thread, fed and read through OS pipes like a subprocess."""

    def __init__(self, role: BridgeRole, *, read_output: bool = True, **options: Any) -> None:
        in_read, in_write = os.pipe()
        out_read, out_write = os.pipe()
        self.input = os.fdopen(in_write, "wb")
        self._server_out = os.fdopen(out_write, "wb")
        self.output = os.fdopen(out_read, "rb")
        self.log = io.StringIO()
        self.server = BridgeServer(
            role, stdin=os.fdopen(in_read, "rb"), stdout=self._server_out, log=self.log, **options
        )
        self.exit_code: int | None = None
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self._serving = threading.Thread(target=self._serve, daemon=True)
        if read_output:
            threading.Thread(target=self._read, daemon=True).start()
        else:  # nobody reads: the shim is gone, writes fail with EPIPE
            self.output.close()
        self._serving.start()
        self._next_id = 1

    def _serve(self) -> None:
        self.exit_code = self.server.serve()
        with contextlib.suppress(BrokenPipeError):  # what the vanished reader never took
            self._server_out.close()

    def _read(self) -> None:
        for line in iter(self.output.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def send_raw(self, data: bytes) -> None:
        self.input.write(data)
        self.input.flush()

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> int:
        request_id = self._next_id
        self._next_id += 1
        line = {"v": 1, "id": request_id, "method": method, "params": dict(params or {})}
        self.send_raw(json.dumps(line).encode() + b"\n")
        return request_id

    def next(self) -> dict[str, Any]:
        line = self.lines.get(timeout=TIMEOUT)
        assert line is not None, self.log.getvalue()
        assert line.endswith(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def result(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        request_id = self.request(method, params)
        response = self.next()
        assert response["id"] == request_id
        assert response["ok"] is True, response
        return response["result"]

    def finish(self) -> int | None:
        self.input.close()
        self._serving.join(TIMEOUT)
        assert not self._serving.is_alive()
        return self.exit_code
