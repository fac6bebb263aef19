"""``pi-squad bridge`` as a subprocess, spoken to exactly as the shim does (docs/bridge.md).

The squads are really published in ``tmp_path`` (POSIX file system, fasteners locks); the
bridge builds its role from the §6 environment alone.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Protocol

import pytest

from application.child.role import GUARD_REASON, READER_TOOL, reader_tool_spec
from application.spec_reads import ATTESTATION_FILE, STATE_FILE
from application.squads.create_squad import PublishedSquad
from domain.attestation import validate_attestation_bytes
from domain.attestation.binding import SpecBinding
from domain.chunks import ChunkTable
from domain.spec.documents import tool_parameters
from tests.squads import BAD_NEW_TASKS, child_environment, multi_chunk_spec, publish_on_disk

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


@pytest.fixture
def published(tmp_path: Path) -> PublishedSquad:
    return publish_on_disk(tmp_path, SPEC)


class StartBridge(Protocol):
    def __call__(self, environment: Mapping[str, str], role: str = "child") -> BridgeProcess: ...


@pytest.fixture
def start_bridge() -> Iterator[StartBridge]:
    """Starts bridge subprocesses; those still running when the test ends are killed."""
    started: list[BridgeProcess] = []

    def start(environment: Mapping[str, str], role: str = "child") -> BridgeProcess:
        bridge = BridgeProcess(environment, role)
        started.append(bridge)
        return bridge

    yield start
    for bridge in started:
        if bridge.process.poll() is None:
            bridge.process.kill()
            bridge.process.wait()


@pytest.fixture
def child(published: PublishedSquad, start_bridge: StartBridge) -> BridgeProcess:
    return start_bridge(child_environment(published, TASK))


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


def test_hello_describes_a_spec_child(child: BridgeProcess) -> None:
    hello = child.result("hello", {"role": "child"})
    assert hello == {
        "role": "child-spec",
        "protocol": 1,
        "registrations": {
            "tools": [
                {
                    "name": READER_TOOL,
                    "label": reader_tool_spec().label,
                    "description": reader_tool_spec().description,
                    "parameters": dict(reader_tool_spec().parameters),
                }
            ],
            "commands": [],
            "guard": True,
            "messageEnd": True,
            "context": True,
            "bootstrap": True,
            "lifecycle": True,
        },
    }
    assert hello["registrations"]["tools"][0]["parameters"]["additionalProperties"] is False
    assert child.close() == 0


def test_a_full_read_over_concurrent_executions_opens_the_guard(
    child: BridgeProcess, published: PublishedSquad
) -> None:
    child.result("hello")
    assert child.result("session_start") is None
    append = child.result("before_agent_start")["append"]
    assert f"squad-spec-chunks: {COUNT}" in append
    assert child.result("tool_call", {"toolCallId": "c0", "toolName": "bash", "input": {}}) == {
        "block": True,
        "reason": GUARD_REASON,
    }
    # Every read in flight at once, in reverse order, as Pi runs sibling executions.
    ids = {
        child.request(
            "execute_tool",
            {"toolCallId": f"read-{i}", "toolName": READER_TOOL, "params": {"index": i}},
        ): i
        for i in reversed(range(COUNT))
    }
    results: dict[int, dict[str, Any]] = {}
    for _ in ids:
        response = child.next_message()
        assert response["ok"] is True, response
        index = ids[response["id"]]
        assert response["result"]["details"]["index"] == index, "matched by id"
        results[index] = response["result"]
    text = "".join(results[i]["texts"][1] for i in range(COUNT))
    assert text.encode() == SPEC
    for i in range(COUNT):
        metadata = json.loads(results[i]["texts"][0])
        assert metadata == results[i]["details"]
        assert metadata["chunkSha256"] == TABLE.chunk(i).sha256
    # Nothing counts before the finalised message_end of each call.
    assert child.result("tool_call", {"toolCallId": "c1", "toolName": "read", "input": {}})["block"]
    for i in range(COUNT):
        message = tool_result_message(f"read-{i}", results[i])
        assert child.result("message_end", {"message": message}) is None
    # They count from Pi's next model call on (its context event), not in this turn.
    assert child.result("tool_call", {"toolCallId": "c2", "toolName": "bash", "input": {}})["block"]
    assert not Path(published.squad_dir, TASK, STATE_FILE).exists()
    assert child.result("context") is None
    assert child.result("tool_call", {"toolCallId": "c3", "toolName": "bash", "input": {}}) == {
        "block": False
    }
    assert child.result("session_shutdown") is None
    assert child.close() == 0
    _assert_attested(published)


def test_deliveries_not_settled_when_the_input_ends_are_not_committed(
    child: BridgeProcess, published: PublishedSquad
) -> None:
    # Pi went away after the last message_end, before its next model call: it may not have
    # saved those results to its session, so they do not count and are read again (§8).
    _start_and_deliver_every_chunk(child)
    assert child.close() == 0
    assert not Path(published.squad_dir, TASK, STATE_FILE).exists()
    assert not Path(published.squad_dir, TASK, ATTESTATION_FILE).exists()


def _assert_attested(published: PublishedSquad) -> None:
    attestation = Path(published.squad_dir, TASK, ATTESTATION_FILE).read_bytes()
    binding = SpecBinding.of(TABLE, squad_id=published.squad.id, task_id=TASK)
    assert validate_attestation_bytes(attestation, binding, TABLE).valid


def _start_and_deliver_every_chunk(child: BridgeProcess) -> None:
    child.result("hello")
    assert child.result("session_start") is None
    _deliver(child, range(COUNT))


def _deliver(child: BridgeProcess, indices: range) -> None:
    for i in indices:
        result = child.result(
            "execute_tool",
            {"toolCallId": f"read-{i}", "toolName": READER_TOOL, "params": {"index": i}},
        )
        message = tool_result_message(f"read-{i}", result)
        assert child.result("message_end", {"message": message}) is None


def test_context_answers_once_every_delivery_received_is_committed(
    child: BridgeProcess, published: PublishedSquad
) -> None:
    _start_and_deliver_every_chunk(child)
    assert not Path(published.squad_dir, TASK, STATE_FILE).exists()
    assert child.result("context") is None
    _assert_attested(published)
    assert child.close() == 0


def test_session_shutdown_commits_the_deliveries_received(
    child: BridgeProcess, published: PublishedSquad
) -> None:
    _start_and_deliver_every_chunk(child)
    assert child.result("session_shutdown") is None
    _assert_attested(published)  # before the bridge's input ends
    assert child.close() == 0


def test_context_says_why_a_commit_failed_and_the_chunk_stays_missing(
    child: BridgeProcess, published: PublishedSquad
) -> None:
    child.result("hello")
    assert child.result("session_start") is None
    spec = published.squad.spec
    assert spec is not None
    _deliver(child, range(1))
    assert child.result("context") is None
    result = child.result(
        "execute_tool", {"toolCallId": "read-1", "toolName": READER_TOOL, "params": {"index": 1}}
    )
    os.chmod(spec.path, 0o600)
    with open(spec.path, "r+b") as handle:  # the canonical file changes after the read
        handle.seek(3)
        original = handle.read(1)
        handle.seek(3)
        handle.write(bytes([original[0] ^ 1]))
    message = tool_result_message("read-1", result)
    assert child.result("message_end", {"message": message}) is None
    request_id = child.request("context")
    answer = child.next_message()
    assert answer["id"] == request_id
    assert answer["ok"] is False
    assert answer["error"]["code"] == "internal"
    assert "CanonicalIntegrityError" in answer["error"]["message"]
    assert child.result("context") is None  # reported once
    state = json.loads(Path(published.squad_dir, TASK, "spec-read-state.json").read_bytes())
    assert [d["index"] for d in state["deliveries"]] == [0]
    assert child.close() == 0


def test_malformed_input_is_answered_when_it_has_an_id_and_never_stops_the_bridge(
    child: BridgeProcess,
) -> None:
    child.result("hello")
    child.send_raw(b"not json at all\n")
    child.send_raw(b"\xff\xfe invalid utf-8\n")
    child.send_raw(b"[1, 2, 3]\n")
    child.send_raw(b'{"v": 1, "method": "hello"}\n')  # no id
    child.send_raw(b"\n   \n")  # blank lines are skipped
    child.wait_stderr("ignored a malformed input line", 4)
    assert child.silent()

    child.send({"v": 1, "id": 7})
    assert child.next_message()["error"]["code"] == "bad_request"
    child.send({"v": 1, "id": 8, "method": "tool_call", "params": ["bash"]})
    assert child.next_message()["error"]["code"] == "bad_request"
    child.send({"v": 1, "id": "nine", "method": "hello"})
    assert child.next_message() == {
        "v": 1,
        "id": "nine",
        "ok": False,
        "error": {"code": "bad_request", "message": "id must be an integer"},
    }
    response = child.call("tool_call", {"toolCallId": "c", "input": {}})
    assert response["ok"] is False
    assert response["error"] == {
        "code": "invalid_params",
        "message": "params.toolName must be a string",
    }
    response = child.call("execute_tool", {"toolCallId": "c", "toolName": READER_TOOL})
    assert response["error"]["code"] == "invalid_params"
    # A CRLF line and a tool name holding U+2028 (JSON-legal raw) are still one request each.
    child.send_raw(b'{"v":1,"id":20,"method":"hello"}\r\n')
    assert child.next_message()["id"] == 20
    weird = child.result("tool_call", {"toolCallId": "c", "toolName": "bash\u2028x", "input": 1})
    assert weird == {"block": True, "reason": GUARD_REASON}
    assert child.close() == 0


def test_an_unknown_method_is_refused(child: BridgeProcess) -> None:
    response = child.call("squad", {"goal": "recursion"})
    assert response["ok"] is False
    assert response["error"]["code"] == "unknown_method"
    assert child.result("hello")["role"] == "child-spec"


def test_lines_longer_than_the_input_buffer_are_each_read_whole(
    child: BridgeProcess,
) -> None:
    # One write holding three requests, the middle one 200 KiB long (several input buffers):
    # each is answered as one line (in completion order, so matched by id).
    long_text = "é" * (100 * 1024)
    lines = [
        {"v": 1, "id": 1, "method": "hello", "params": {}},
        {"v": 1, "id": 2, "method": "squad", "params": {"goal": long_text}},
        {"v": 1, "id": 3, "method": "hello", "params": {}},
    ]
    child.send_raw(b"".join(json.dumps(m, ensure_ascii=False).encode() + b"\n" for m in lines))
    answers = sorted((child.next_message() for _ in lines), key=lambda a: int(a["id"]))
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert [a["ok"] for a in answers] == [True, False, True]
    assert answers[1]["error"]["code"] == "unknown_method"


@pytest.mark.parametrize("version", [2, 0, "1", None])
def test_another_protocol_version_is_refused(child: BridgeProcess, version: object) -> None:
    message: dict[str, Any] = {"id": 3, "method": "hello"}
    if version is not None:
        message["v"] = version
    child.send(message)
    response = child.next_message()
    assert response["id"] == 3
    assert response["ok"] is False
    assert response["error"]["code"] == "unsupported_version"
    assert response["v"] == 1


def test_end_of_input_exits_cleanly_after_answering_what_is_in_flight(
    child: BridgeProcess,
) -> None:
    child.result("hello")
    request_id = child.request(
        "execute_tool", {"toolCallId": "r", "toolName": READER_TOOL, "params": {"index": 0}}
    )
    started = time.monotonic()
    assert child.close() == 0
    assert time.monotonic() - started < 5
    response = child.next_message()
    assert response["id"] == request_id
    assert response["ok"] is True
    assert child.messages.get(timeout=1) is None  # stdout closed
    assert "Traceback" not in child.stderr()


def test_a_legacy_child_registers_nothing(start_bridge: StartBridge) -> None:
    legacy = start_bridge({"PI_SQUAD_CHILD": "1"})
    assert legacy.result("hello") == {
        "role": "child-legacy",
        "protocol": 1,
        "registrations": {
            "tools": [],
            "commands": [],
            "guard": False,
            "messageEnd": False,
            "bootstrap": False,
            "lifecycle": False,
        },
    }
    assert legacy.close() == 0


def test_a_partial_environment_fails_closed(
    published: PublishedSquad, start_bridge: StartBridge
) -> None:
    environment = dict(child_environment(published, TASK))
    del environment["PI_SQUAD_SPEC_SHA256"]
    partial = start_bridge(environment)
    hello = partial.result("hello")
    assert hello["role"] == "child-failed-closed"
    assert hello["registrations"]["tools"] == []
    assert hello["registrations"]["guard"] is True
    for tool in ("bash", READER_TOOL, "read"):
        decision = partial.result("tool_call", {"toolCallId": "c", "toolName": tool, "input": {}})
        assert decision["block"] is True
        assert "PI_SQUAD_SPEC_SHA256" in decision["reason"]
    response = partial.call(
        "execute_tool", {"toolCallId": "c", "toolName": READER_TOOL, "params": {"index": 0}}
    )
    assert response["error"]["code"] == "tool_failed"
    assert "failed closed" in partial.result("before_agent_start")["append"]
    assert partial.close() == 0


def test_the_main_role_registers_the_squad_tools_and_no_guard(
    start_bridge: StartBridge,
) -> None:
    main = start_bridge({}, role="main")
    hello = main.result("hello")
    assert hello["role"] == "main"
    names = [tool["name"] for tool in hello["registrations"]["tools"]]
    assert names == [
        "squad",
        "squad_status",
        "squad_modify",
        "squad_review",
        "squad_message",
        "flow",
    ]
    assert "squad_spec_read" not in names
    assert hello["registrations"]["guard"] is False
    assert hello["registrations"]["lifecycle"] is True
    # The flow faces: /flows beside /squad, the card's renderer, the session controls.
    assert [c["name"] for c in hello["registrations"]["commands"]] == ["squad", "flows"]
    assert hello["registrations"]["entryRenderers"] == ["pi-squad-flow-card"]
    assert main.result("session_start", {"hasUI": True}) is None
    assert main.result("cancel_tool", {"toolCallId": "not-running"}) is None
    assert main.result("ui_answer", {"requestId": "unknown", "confirmed": False}) is None
    assert main.result("session_shutdown") is None
    assert main.close() == 0


def test_each_squad_tool_registers_its_schema_file_as_parameters(
    start_bridge: StartBridge,
) -> None:
    main = start_bridge({}, role="main")
    tools = {tool["name"]: tool for tool in main.result("hello")["registrations"]["tools"]}
    for name in ("status", "modify", "review", "message"):
        assert tools[f"squad_{name}"]["parameters"] == tool_parameters(f"squad-{name}-call")
    assert tools["squad"]["parameters"] == tool_parameters("squad-call")
    # Self-contained: squad_modify's task is the new-task schema, inlined.
    task = tools["squad_modify"]["parameters"]["properties"]["task"]
    assert task["required"] == ["id", "title", "agent"]
    assert "$ref" not in json.dumps(tools)
    assert main.close() == 0


def test_the_main_role_refuses_the_new_tasks_the_cli_refuses(
    tmp_path: Path, published: PublishedSquad, start_bridge: StartBridge
) -> None:
    """``squad_modify`` add_task checks its task as ``--task-json`` does, before any change."""
    root = tmp_path / "root"
    main = start_bridge({"PI_SQUAD_ROOT": str(root)}, role="main")
    main.result("hello")
    squad_id = published.squad.id
    before = sorted(p.name for p in (root / squad_id).iterdir())
    for number, (task, complaint) in enumerate(BAD_NEW_TASKS):
        params = {"action": "add_task", "squadId": squad_id, "task": task}
        response = main.call(
            "execute_tool",
            {"toolCallId": f"m{number}", "toolName": "squad_modify", "params": params},
        )
        assert response["ok"] is False, task
        assert response["error"]["code"] == "tool_failed"
        message = response["error"]["message"]
        assert message.startswith("TASK_INPUT_INVALID: squad_modify: "), message
        assert complaint in message, message
    assert sorted(p.name for p in (root / squad_id).iterdir()) == before
    others: tuple[tuple[str, dict[str, object], str], ...] = (
        ("squad_modify", {"action": "teleport"}, "TASK_INPUT_INVALID: squad_modify: 'action'"),
        ("squad_review", {"verdict": "pass"}, "REVIEW_INVALID: Review rejected: missing"),
        ("squad_message", {"message": 5}, "MESSAGE_INVALID: squad_message: 'message' must be"),
        ("squad_status", {"squadId": 5}, "USAGE: squad_status: 'squadId' must be a string"),
    )
    for tool, arguments, complaint in others:
        response = main.call(
            "execute_tool", {"toolCallId": "o", "toolName": tool, "params": arguments}
        )
        assert response["error"]["message"].startswith(complaint), response
    assert main.close() == 0


def test_a_role_that_disagrees_with_the_environment_fails_closed(
    published: PublishedSquad, start_bridge: StartBridge
) -> None:
    as_main = start_bridge(child_environment(published, TASK), role="main")
    as_child = start_bridge({}, role="child")
    for bridge in (as_main, as_child):
        assert bridge.result("hello")["role"] == "child-failed-closed"
        decision = bridge.result("tool_call", {"toolCallId": "c", "toolName": "bash", "input": 0})
        assert decision["block"] is True


def test_stdout_carries_only_protocol_lines(child: BridgeProcess) -> None:
    child.result("hello")
    child.send_raw(b"garbage\n")
    child.result("tool_call", {"toolCallId": "c", "toolName": "bash", "input": {}})
    assert child.close() == 0
    for line in child.raw_lines:
        assert line.endswith(b"\n")
        assert json.loads(line)["v"] == 1
