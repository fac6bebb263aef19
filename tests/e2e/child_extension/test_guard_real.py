"""The pi-squad package loaded by real Pi 0.80.10 as a file-spec child: the guard blocks every
other tool until the whole spec is read, an allowlist keeps or drops the reader, a legacy child
gets nothing, and a child killed mid-read resumes reading only what is missing."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from adapters.scripted_model import ScriptedModelServer
from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.policies import (
    IMPATIENT_AFTER_MARKER,
    IMPATIENT_BASH_MARKER,
    IMPATIENT_PARALLEL_MARKER,
    IMPATIENT_WRITE_MARKER,
    VERDICT_PASS,
    PolicyState,
    Reply,
    diligent,
)
from application.child.role import GUARD_REASON, READER_TOOL
from application.ledger_files import ATTESTATION_FILE, STATE_FILE
from tests.e2e.child_extension.support import (
    COUNT,
    SECRET,
    Launcher,
    Squad,
    assert_no_bridge_left,
    assistant_calls,
    final_text,
    no_extension_errors,
    offered_tools,
    tool_ends,
)

pytestmark = pytest.mark.realpi


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
