"""Real Pi 0.80.10 (``--mode rpc``) driven by the scripted model server on loopback.

Skipped when the project runtime is not installed (``make runtime``); CI installs it.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from adapters.pi_runtime import PiRuntime, pi_environment
from adapters.scripted_model import ScriptedModelServer, write_models_json
from adapters.scripted_model.policies import (
    ECHO_PREFIX,
    IMPATIENT_AFTER_MARKER,
    IMPATIENT_BASH_MARKER,
    VERDICT_PASS,
)
from tests.e2e.real_pi import scripted_rpc_argv

pytestmark = pytest.mark.realpi

SETTLE_TIMEOUT = 30.0

# A stand-in for the squad's child extension: a chunk reader whose results follow the contract's
# format (a JSON metadata line, then the chunk text), a guard that blocks every other tool until
# each chunk's tool result has been finalised (message_end), and a bootstrap line for the model.
FAKE_READER_EXTENSION = """
const N = 5;
const delivered = new Set();
const pending = new Map();
const REASON =
  "Read every canonical squad spec chunk with squad_spec_read before using other tools.";
export default function (pi) {
  pi.on("before_agent_start", async (event) => ({
    systemPrompt: event.systemPrompt + `\\n\\nsquad-spec-chunks: ${N}\\n`,
  }));
  pi.registerTool({
    name: "squad_spec_read",
    label: "Spec read",
    description: "Read one chunk of the squad spec by index.",
    parameters: { type: "object", additionalProperties: false, required: ["index"],
                  properties: { index: { type: "integer", minimum: 0 } } },
    async execute(toolCallId, params) {
      if (params.index >= N) throw new Error(`index ${params.index} out of range`);
      pending.set(toolCallId, params.index);
      const meta = JSON.stringify({ version: 1, index: params.index, chunkCount: N });
      const text = `chunk ${params.index}`;
      return { content: [{ type: "text", text: meta }, { type: "text", text }], details: {} };
    },
  });
  pi.on("message_end", async (event) => {
    const m = event.message;
    if (m.role === "toolResult" && !m.isError && pending.has(m.toolCallId)) {
      delivered.add(pending.get(m.toolCallId));
    }
  });
  pi.on("tool_call", async (event) => {
    if (event.toolName === "squad_spec_read" || delivered.size === N) return undefined;
    const missing = [...Array(N).keys()].filter((i) => !delivered.has(i));
    return { block: true, reason: `${REASON} Missing chunk indices: [${missing.join(", ")}]` };
  });
}
"""


class PiRpc:
    """One ``pi --mode rpc`` process: JSON lines in, records out (split on ``\\n`` only)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.records: queue.Queue[dict[str, Any] | None] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        buffer = b""
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                self.records.put(json.loads(line))
        self.records.put(None)

    def send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        self.process.stdin.flush()

    def until(self, record_type: str, timeout: float = SETTLE_TIMEOUT) -> list[dict[str, Any]]:
        """Every record up to and including the first of ``record_type``."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                record = self.records.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {record_type} within {timeout} s: {seen[-5:]}") from None
            if record is None:
                raise AssertionError(f"pi exited before {record_type}: {self.stderr()}")
            seen.append(record)
            if record.get("type") == record_type:
                return seen

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def stderr(self) -> str:
        assert self.process.stderr is not None
        if self.process.poll() is None:
            return "(still running)"
        return self.process.stderr.read().decode("utf-8", "replace")


StartPi = Callable[..., PiRpc]
"""(server, *extra pi arguments) -> a started PiRpc in an isolated agent dir."""


@pytest.fixture
def start_pi(runtime: PiRuntime, tmp_path: Path) -> Iterator[StartPi]:
    started: list[PiRpc] = []
    agent_dir = tmp_path / "agent"
    workdir = tmp_path / "work"
    workdir.mkdir()

    def start(server: ScriptedModelServer, *extra: str) -> PiRpc:
        write_models_json(agent_dir, server.base_url)
        argv = scripted_rpc_argv(runtime, *extra)
        pi = PiRpc(argv, pi_environment(os.environ, agent_dir, runtime), workdir)
        started.append(pi)
        return pi

    yield start
    for pi in started:
        if pi.process.poll() is None:
            pi.close()


def prompt(pi: PiRpc, message: str) -> list[dict[str, Any]]:
    pi.send({"type": "prompt", "id": "p1", "message": message})
    records = pi.until("agent_settled")
    responses = [r for r in records if r.get("type") == "response"]
    assert responses[0] == {"id": "p1", "type": "response", "command": "prompt", "success": True}
    return [r for r in records if r.get("type") not in ("response", "message_update")]


def prompted(
    start_pi: StartPi, policy: str, message: str, *extra: str
) -> tuple[list[dict[str, Any]], ScriptedModelServer]:
    """Pi (with ``extra`` arguments) on a fresh model server answering with ``policy``, prompted
    once with ``message`` and closed cleanly: its events and the server."""
    with ScriptedModelServer(policy) as server:
        pi = start_pi(server, *extra)
        events = prompt(pi, message)
        assert pi.close() == 0
    return events, server


def assistant_messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        e["message"]
        for e in events
        if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]


def texts(message: dict[str, Any]) -> str:
    return "".join(b["text"] for b in message["content"] if b["type"] == "text")


def test_echo_prompt_settles_with_the_scripted_text(start_pi: StartPi) -> None:
    events, server = prompted(start_pi, "echo", "hello from the test")
    kinds = [e["type"] for e in events]
    assert kinds[0] == "agent_start"
    assert kinds[-1] == "agent_settled"
    assert "agent_end" in kinds
    assert "extension_error" not in kinds
    (reply,) = assistant_messages(events)
    assert reply["stopReason"] == "stop"
    assert texts(reply) == ECHO_PREFIX + "hello from the test"
    (exchange,) = server.exchanges()
    assert exchange.policy == "echo"
    assert exchange.request["stream"] is True


def test_one_bash_call_runs_and_its_result_reaches_the_model(start_pi: StartPi) -> None:
    events, server = prompted(start_pi, "bash-once", "run something")
    kinds = [e["type"] for e in events]
    first, last = assistant_messages(events)
    assert first["stopReason"] == "toolUse"
    (call,) = [b for b in first["content"] if b["type"] == "toolCall"]
    assert call["name"] == "bash"
    assert call["arguments"] == {"command": "echo scripted-bash-ok"}
    end = next(e for e in events if e["type"] == "tool_execution_end")
    assert end["toolCallId"] == call["id"]
    assert end["isError"] is False
    assert end["result"]["content"][0]["text"] == "scripted-bash-ok\n"
    assert kinds.index("tool_execution_start") < kinds.index("tool_execution_end")
    assert texts(last) == "bash said: scripted-bash-ok\n"
    assert kinds[-1] == "agent_settled"
    # What the model received back: one role "tool" message for the call.
    second_request = server.exchanges()[1].request
    assert second_request["messages"][-1] == {
        "role": "tool",
        "content": "scripted-bash-ok\n",
        "tool_call_id": call["id"],
    }


def test_policy_chosen_by_appended_system_prompt_reads_every_chunk_under_a_guard(
    start_pi: StartPi, tmp_path: Path
) -> None:
    extension = tmp_path / "fake-reader.js"
    extension.write_text(FAKE_READER_EXTENSION)
    appended = tmp_path / "agent-prompt.md"
    appended.write_text("You are a careful agent.\nscripted-policy: diligent\n")
    events, server = prompted(
        start_pi,
        "echo",
        "do the task",
        "-e",
        str(extension),
        "--append-system-prompt",
        str(appended),
    )
    assert {e.policy for e in server.exchanges()} == {"diligent"}
    reads = [
        [b["arguments"]["index"] for b in m["content"] if b["type"] == "toolCall"]
        for m in assistant_messages(events)
    ]
    assert reads == [[4, 3, 2], [1, 0], []]
    assert texts(assistant_messages(events)[-1]).rstrip().endswith(VERDICT_PASS)
    assert not [e for e in events if e["type"] == "tool_execution_end" and e["isError"]]


def test_impatient_is_blocked_until_every_chunk_is_delivered(
    start_pi: StartPi, tmp_path: Path
) -> None:
    extension = tmp_path / "fake-reader.js"
    extension.write_text(FAKE_READER_EXTENSION)
    events, _ = prompted(start_pi, "impatient", "do the task", "-e", str(extension))
    ends = [e for e in events if e["type"] == "tool_execution_end"]
    blocked = [e["toolName"] for e in ends if e["isError"]]
    # Round one: bash, read and write; round two: the bash beside all five reads.
    assert blocked == ["bash", "read", "write", "bash"]
    assert all("Read every canonical squad spec chunk" in str(e["result"]) for e in ends[:3])
    workdir = tmp_path / "work"
    assert not (workdir / IMPATIENT_BASH_MARKER).exists()
    assert (workdir / IMPATIENT_AFTER_MARKER).read_text() == "attested\n"
    assert texts(assistant_messages(events)[-1]).rstrip().endswith(VERDICT_PASS)
