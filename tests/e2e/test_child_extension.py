"""The pi-squad package (``entrypoints/pi``) loaded by real Pi 0.80.10 as a file-spec child.

Pi runs in RPC mode with the §6 environment of a really published squad, the shim spawns the
real ``pi-squad bridge`` (pinned to this interpreter through ``PI_SQUAD_BRIDGE``), and the
scripted model plays the agent. Skipped when the project runtime is not installed.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import attrs
import pytest

from adapters.pi_runtime import PiRuntime, pi_environment
from adapters.scripted_model import ScriptedModelServer, write_models_json
from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.policies import (
    IMPATIENT_AFTER_MARKER,
    IMPATIENT_BASH_MARKER,
    IMPATIENT_PARALLEL_MARKER,
    IMPATIENT_READ_MARKER,
    IMPATIENT_WRITE_MARKER,
    VERDICT_PASS,
    PolicyState,
    Reply,
    diligent,
)
from application.child.role import GUARD_REASON, READER_TOOL
from application.spec_reads import ATTESTATION_FILE, STATE_FILE
from application.squads.create_squad import PublishedSquad
from domain.attestation import validate_attestation_bytes
from domain.attestation.binding import SpecBinding
from domain.chunks import ChunkTable
from tests.e2e.pi_rpc_client import PiRpcClient, Record
from tests.e2e.real_pi import EXTENSION, scripted_rpc_argv
from tests.squads import child_environment, multi_chunk_spec, publish_on_disk

pytestmark = pytest.mark.realpi

BRIDGE_ARGV = [sys.executable, "-m", "entrypoints.cli", "bridge"]
SPEC = multi_chunk_spec(5)
TABLE = ChunkTable.of(SPEC)
COUNT = TABLE.chunk_count
TASK = "build"
SECRET = "the-read-marker-content-must-never-reach-the-model"


@attrs.frozen
class Squad:
    published: PublishedSquad
    workdir: Path

    @property
    def task_dir(self) -> Path:
        return Path(self.published.squad_dir, TASK)

    def attestation_bytes(self) -> bytes:
        return (self.task_dir / ATTESTATION_FILE).read_bytes()

    def attestation_valid(self) -> bool:
        binding = SpecBinding.of(TABLE, squad_id=self.published.squad.id, task_id=TASK)
        return validate_attestation_bytes(self.attestation_bytes(), binding, TABLE).valid

    def committed(self) -> set[int]:
        state = self.task_dir / STATE_FILE
        if not state.exists():
            return set()
        chunks = json.loads(state.read_bytes())["deliveries"]
        return {chunk["index"] for chunk in chunks}

    def environment(self) -> dict[str, str]:
        return dict(child_environment(self.published, TASK))


@pytest.fixture
def squad(tmp_path: Path) -> Squad:
    published = publish_on_disk(tmp_path, SPEC)
    project = tmp_path / "project"
    (project / IMPATIENT_READ_MARKER).write_text(SECRET)
    return Squad(published=published, workdir=project)


class PiRun(NamedTuple):
    """One prompt's records, the Pi that answered it and the model server it talked to."""

    records: list[Record]
    pi: PiRpcClient
    server: ScriptedModelServer


@attrs.define
class Launcher:
    runtime: PiRuntime
    base: Path
    started: list[PiRpcClient] = attrs.Factory(list)

    def start(
        self,
        server: ScriptedModelServer,
        policy: str,
        environment: Mapping[str, str],
        cwd: Path,
        *extra: str,
        session: Sequence[str] = ("--no-session",),
        bridge: Sequence[str] = BRIDGE_ARGV,
        prompt_lines: Sequence[str] = (),
    ) -> PiRpcClient:
        agent_dir = self.base / "agent"
        write_models_json(agent_dir, server.base_url)
        appended = self.base / f"prompt-{len(self.started)}.md"
        appended.write_text(
            "\n".join(["You are an agent.", *prompt_lines, f"scripted-policy: {policy}", ""])
        )
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("PI_SQUAD_")}
        env = pi_environment(inherited, agent_dir, self.runtime)
        env.update(environment)
        env["PI_SQUAD_BRIDGE"] = json.dumps(list(bridge))
        argv = scripted_rpc_argv(
            self.runtime,
            "--no-extensions",
            "-e",
            str(EXTENSION),
            "--append-system-prompt",
            str(appended),
            *extra,
            session=session,
        )
        client = PiRpcClient(argv, env, cwd)
        self.started.append(client)
        return client

    def run(
        self,
        policy: str,
        environment: Mapping[str, str],
        cwd: Path,
        *extra: str,
        message: str = "Work on your task.",
        bridge: Sequence[str] = BRIDGE_ARGV,
        prompt_lines: Sequence[str] = (),
    ) -> PiRun:
        """Pi on a fresh ``echo`` model server, prompted once with ``message``, closed cleanly."""
        with ScriptedModelServer("echo") as server:
            pi = self.start(
                server, policy, environment, cwd, *extra, bridge=bridge, prompt_lines=prompt_lines
            )
            records = pi.prompt(message)
            assert pi.close() == 0
        return PiRun(records, pi, server)


@pytest.fixture
def launcher(runtime: PiRuntime, tmp_path: Path) -> Iterator[Launcher]:
    launch = Launcher(runtime=runtime, base=tmp_path)
    yield launch
    for client in launch.started:
        if client.process.poll() is None:
            client.close()


def tool_ends(records: list[Record]) -> list[Record]:
    return [r for r in records if r.get("type") == "tool_execution_end"]


def assistant_calls(records: list[Record]) -> list[list[tuple[str, Any]]]:
    """Per assistant message: (tool name, arguments) of each tool call."""
    return [
        [(b["name"], b["arguments"]) for b in r["message"]["content"] if b["type"] == "toolCall"]
        for r in records
        if r.get("type") == "message_end" and r["message"]["role"] == "assistant"
    ]


def final_text(records: list[Record]) -> str:
    last = [
        r["message"]
        for r in records
        if r.get("type") == "message_end" and r["message"]["role"] == "assistant"
    ][-1]
    return "".join(b["text"] for b in last["content"] if b["type"] == "text")


def offered_tools(server: ScriptedModelServer) -> list[list[str]]:
    return [
        sorted(t["function"]["name"] for t in exchange.request.get("tools", []))
        for exchange in server.exchanges()
    ]


def no_extension_errors(records: list[Record], client: PiRpcClient) -> None:
    errors = [r for r in records if r.get("type") == "extension_error"]
    assert not errors, f"{errors}\n{client.stderr()}"


def test_impatient_child_is_blocked_until_every_chunk_is_delivered(
    launcher: Launcher, squad: Squad
) -> None:
    records, pi, server = launcher.run("impatient", squad.environment(), squad.workdir)
    no_extension_errors(records, pi)
    ends = tool_ends(records)
    blocked = [e["toolName"] for e in ends if e["isError"]]
    # Message one: bash, read and write; message two: the bash beside every read.
    assert blocked == ["bash", "read", "write", "bash"], pi.stderr()
    for end in ends:
        if end["isError"]:
            assert end["result"]["content"][0]["text"] == GUARD_REASON
    reads = [e for e in ends if e["toolName"] == READER_TOOL]
    assert sorted(e["result"]["details"]["index"] for e in reads) == list(range(COUNT))
    assert not any(e["isError"] for e in reads)
    for marker in (IMPATIENT_BASH_MARKER, IMPATIENT_WRITE_MARKER, IMPATIENT_PARALLEL_MARKER):
        assert not (squad.workdir / marker).exists(), marker
    assert all(SECRET not in json.dumps(x.request) for x in server.exchanges())
    assert squad.attestation_valid()
    assert (squad.workdir / IMPATIENT_AFTER_MARKER).read_text() == "attested\n"
    assert final_text(records).rstrip().endswith(VERDICT_PASS)
    # The bootstrap reached the model through before_agent_start.
    system = server.exchanges()[0].request["messages"][0]["content"]
    assert f"squad-spec-chunks: {COUNT}" in system
    assert f"Squad: {squad.published.squad.id}" in system


def test_an_allowlist_with_the_reader_keeps_the_guard_and_reads_everything(
    launcher: Launcher, squad: Squad
) -> None:
    records, pi, server = launcher.run(
        "diligent", squad.environment(), squad.workdir, "--tools", f"read,bash,{READER_TOOL}"
    )
    no_extension_errors(records, pi)
    assert {tuple(t) for t in offered_tools(server)} == {("bash", "read", READER_TOOL)}
    read_batches = [
        [args["index"] for name, args in calls if name == READER_TOOL]
        for calls in assistant_calls(records)
    ]
    assert sorted(i for batch in read_batches for i in batch) == list(range(COUNT))
    assert max(len(batch) for batch in read_batches) > 1, "reads went in parallel"
    assert not any(e["isError"] for e in tool_ends(records))
    assert squad.attestation_valid()
    assert final_text(records).rstrip().endswith(VERDICT_PASS)


def test_an_allowlist_without_the_reader_leaves_everything_blocked(
    launcher: Launcher, squad: Squad
) -> None:
    records, pi, server = launcher.run(
        "impatient", squad.environment(), squad.workdir, "--tools", "read,bash"
    )
    no_extension_errors(records, pi)
    assert {tuple(t) for t in offered_tools(server)} == {("bash", "read")}
    ends = tool_ends(records)
    assert [e["toolName"] for e in ends] == ["bash", "read", "bash"]
    assert all(e["isError"] for e in ends)
    assert {e["result"]["content"][0]["text"] for e in ends} == {GUARD_REASON}
    assert not (squad.workdir / IMPATIENT_BASH_MARKER).exists()
    assert not (squad.workdir / IMPATIENT_AFTER_MARKER).exists()


def test_a_legacy_child_gets_nothing_from_the_package(launcher: Launcher, squad: Squad) -> None:
    records, pi, server = launcher.run("impatient", {"PI_SQUAD_CHILD": "1"}, squad.workdir)
    no_extension_errors(records, pi)
    assert all(READER_TOOL not in tools for tools in offered_tools(server))
    assert all("bash" in tools for tools in offered_tools(server))
    system = server.exchanges()[0].request["messages"][0]["content"]
    assert "squad-spec" not in system
    assert "pi-squad" not in system
    # No guard: the impatient probes all ran.
    assert not any(e["isError"] for e in tool_ends(records) if e["toolName"] != "read")
    assert (squad.workdir / IMPATIENT_BASH_MARKER).exists()
    assert (squad.workdir / IMPATIENT_WRITE_MARKER).exists()
    assert not (squad.task_dir / STATE_FILE).exists()


class StallAfterFirstDelivery:
    """``diligent``, except that the request after the first delivered reads waits (holding the
    HTTP answer) until ``release``: the test kills Pi while it waits."""

    def __init__(self) -> None:
        self.waiting = threading.Event()
        self.release = threading.Event()

    def __call__(self, conversation: Conversation, state: PolicyState) -> Reply:
        if any(m.role == "tool" for m in conversation.messages) and not self.release.is_set():
            self.waiting.set()
            self.release.wait(timeout=30)
        return diligent(conversation, state)


def test_a_child_killed_mid_read_resumes_its_session_and_reads_only_missing_chunks(
    launcher: Launcher, squad: Squad, tmp_path: Path
) -> None:
    stall = StallAfterFirstDelivery()
    sessions = tmp_path / "sessions"
    with ScriptedModelServer("echo", policies={"diligent-stall": stall}) as server:
        first = launcher.start(
            server,
            "diligent-stall",
            squad.environment(),
            squad.workdir,
            session=("--session-dir", str(sessions)),
        )
        session_file = first.command({"type": "get_state"})["sessionFile"]
        first.skip()
        first.send({"type": "prompt", "message": "Work on your task."})
        assert stall.waiting.wait(timeout=30), first.stderr()
        committed = squad.committed()
        assert 0 < len(committed) < COUNT
        assert first.kill() != 0
        stall.release.set()
        assert not (squad.task_dir / ATTESTATION_FILE).exists()
        assert_no_bridge_left(squad)
        before_restart = len(server.exchanges())

        second = launcher.start(
            server,
            "diligent",
            squad.environment(),
            squad.workdir,
            session=("--session", session_file),
        )
        assert second.command({"type": "get_state"})["sessionFile"] == session_file
        records = second.prompt("Continue your task.")
        assert second.close() == 0
    no_extension_errors(records, second)
    reread = [
        args["index"]
        for calls in assistant_calls(records)
        for name, args in calls
        if name == READER_TOOL
    ]
    assert sorted(reread) == sorted(set(range(COUNT)) - committed)
    system = server.exchanges()[before_restart].request["messages"][0]["content"]
    missing = ",".join(str(i) for i in sorted(set(range(COUNT)) - committed))
    assert f"squad-spec-missing: {missing}" in system
    assert squad.attestation_valid()
    assert final_text(records).rstrip().endswith(VERDICT_PASS)


def assert_no_bridge_left(squad: Squad, timeout: float = 5.0) -> None:
    """No process still carries this squad's spec path in its environment (Linux only)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return
    needle = f"PI_SQUAD_SPEC_PATH={squad.published.squad.spec.path}".encode()  # type: ignore[union-attr]
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for entry in proc.iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if needle in (entry / "environ").read_bytes():
                        alive.append(entry.name)
                except OSError:
                    continue
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not alive, f"processes of the killed child still running: {alive}"


# -- the shim fails closed -------------------------------------------------------------------

FAKE_BRIDGE = r"""
import json, sys
mode = sys.argv[1]

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

def ok(request_id, result):
    send({"v": 1, "id": request_id, "ok": True, "result": result})

reader = {"name": "squad_spec_read", "label": "Read", "description": "Read a chunk.",
          "parameters": {"type": "object", "additionalProperties": False, "required": ["index"],
                         "properties": {"index": {"type": "integer", "minimum": 0}}}}
registrations = {"tools": [reader] if mode == "refuse-execute" else [], "guard": True,
                 "messageEnd": False, "bootstrap": False, "lifecycle": True}
for line in sys.stdin.buffer:
    request = json.loads(line)
    method, request_id = request["method"], request["id"]
    if method == "hello":
        ok(request_id, {"role": "child-spec", "registrations": registrations})
    elif method == "session_start":
        if mode == "notify":  # before the answer: the shim delivers it during session_start
            send({"v": 1, "event": "send_message", "data": {
                "message": {"customType": "pi-squad", "content": "squad-note: task 7 is done",
                            "display": True},
                "options": {"deliverAs": "nextTurn"}}})
        ok(request_id, None)
    elif method == "tool_call" and mode == "die":
        sys.exit(3)
    elif method == "tool_call" and mode == "hang":
        continue
    elif method == "tool_call" and mode == "garbage":
        sys.stdout.write("this is not a protocol line\n")
        sys.stdout.flush()
    elif method == "tool_call" and mode == "bad-reply":
        ok(request_id, {"blocked": False})
    elif method == "tool_call":
        ok(request_id, {"block": False})
    elif method == "execute_tool":
        send({"v": 1, "id": request_id, "ok": False,
              "error": {"code": "tool_failed", "message": "scripted refusal of chunk 0"}})
    else:
        ok(request_id, None)
"""
BASH_MARKER = "BRIDGE_FAILURE_MARKER"


def fake_bridge(tmp_path: Path, mode: str) -> list[str]:
    script = tmp_path / "fake_bridge.py"
    script.write_text(FAKE_BRIDGE)
    return [sys.executable, str(script), mode]


def bash_attempt(
    launcher: Launcher, squad: Squad, bridge: Sequence[str], environment: Mapping[str, str]
) -> tuple[Record, PiRpcClient]:
    """One scripted ``bash`` call that would create a marker; returns its execution end."""
    records, pi, _ = launcher.run(
        "bash-once",
        environment,
        squad.workdir,
        message="Run the command.",
        bridge=bridge,
        prompt_lines=[f"scripted-bash: touch {BASH_MARKER}"],
    )
    (end,) = tool_ends(records)
    assert end["toolName"] == "bash"
    assert not (squad.workdir / BASH_MARKER).exists()
    return end, pi


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("die", "bridge exited with status 3"),
        ("hang", "no answer to tool_call within 400 ms"),
        ("garbage", "malformed bridge output"),
        ("bad-reply", "malformed tool_call reply"),
    ],
)
def test_a_failing_bridge_blocks_the_tool_call(
    launcher: Launcher, squad: Squad, tmp_path: Path, mode: str, cause: str
) -> None:
    environment = {**squad.environment(), "PI_SQUAD_BRIDGE_TIMEOUT_MS": "400"}
    end, pi = bash_attempt(launcher, squad, fake_bridge(tmp_path, mode), environment)
    assert end["isError"], pi.stderr()
    text = end["result"]["content"][0]["text"]
    assert text.startswith("pi-squad bridge failure: ")
    assert cause in text


def test_a_bridge_that_cannot_start_blocks_everything(
    launcher: Launcher, squad: Squad, tmp_path: Path
) -> None:
    missing = [str(tmp_path / "no-such-bridge")]
    end, _ = bash_attempt(launcher, squad, missing, squad.environment())
    assert end["isError"]
    text = end["result"]["content"][0]["text"]
    assert text.startswith("pi-squad bridge failure: hello failed")


def test_a_partial_child_environment_fails_closed_through_the_real_bridge(
    launcher: Launcher, squad: Squad
) -> None:
    partial = {"PI_SQUAD_CHILD": "1", "PI_SQUAD_ID": squad.published.squad.id}
    end, _ = bash_attempt(launcher, squad, BRIDGE_ARGV, partial)
    assert end["isError"]
    assert "failed closed (missing environment variables" in end["result"]["content"][0]["text"]


def test_a_refused_execution_reaches_the_model_as_the_bridge_message(
    launcher: Launcher, squad: Squad, tmp_path: Path
) -> None:
    records, _, _ = launcher.run(
        "diligent",
        squad.environment(),
        squad.workdir,
        bridge=fake_bridge(tmp_path, "refuse-execute"),
    )
    ends = tool_ends(records)
    assert ends
    assert all(e["toolName"] == READER_TOOL and e["isError"] for e in ends)
    assert {e["result"]["content"][0]["text"] for e in ends} == {"scripted refusal of chunk 0"}


def test_bridge_events_are_delivered_into_the_session(
    launcher: Launcher, squad: Squad, tmp_path: Path
) -> None:
    run = launcher.run(
        "echo", {}, squad.workdir, message="hello", bridge=fake_bridge(tmp_path, "notify")
    )
    (exchange,) = run.server.exchanges()
    assert "squad-note: task 7 is done" in json.dumps(exchange.request["messages"])
