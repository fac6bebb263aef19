"""Contract §6-§9 and §11 child-side rows, through the fake-Pi harness, on a fake and a real
file system."""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import pytest
from pyfakefs.fake_filesystem import FakeFilesystem

from adapters.catalogue.agent_files import BUNDLED_AGENTS_DIR
from adapters.store.lock import FastenersLockFactory
from application.canonical import CanonicalIntegrityError
from application.child.role import GUARD_REASON, SpecChildRole, child_role_for
from application.ports import FileSystem, LockFactory, PiEvents, ToolResult
from application.spec_reads import ATTESTATION_FILE, STATE_FILE
from application.squads.create_squad import PublishedSquad
from domain.attestation import validate_attestation_bytes
from domain.attestation.binding import SpecBinding
from domain.child_environment import ChildEnvironment
from domain.chunks import ChunkTable
from tests.contract import _fs_worlds
from tests.contract._fs_worlds import emulated_posix_file_system, refuse_kernel_calls
from tests.fakes.clock import FakeClock, SequentialIds
from tests.fakes.filesystem import RecordingFileSystem
from tests.fakes.locks import FakeLockFactory
from tests.fakes.pi_harness import ChildCrashed, FakePiChild, read, result_texts, tool
from tests.host_fs import host_file_system, posix_adapter
from tests.squads import child_environment, multi_chunk_spec, publish

SPEC = multi_chunk_spec(4)
TABLE = ChunkTable.of(SPEC)
COUNT = TABLE.chunk_count
SCHEMAS_DIR = str(Path(__file__).resolve().parents[2] / "domain" / "spec" / "schemas")


@attrs.define
class ChildWorld:
    fs: FileSystem
    locks: LockFactory
    clock: FakeClock
    published: PublishedSquad
    task_id: str = "build"
    ids: SequentialIds = attrs.field(factory=SequentialIds)
    # pyfakefs: its children run sibling executions one at a time (see ``FakePiChild``).
    emulated: bool = False

    @property
    def task_dir(self) -> str:
        return os.path.join(self.published.squad_dir, self.task_id)

    def path(self, name: str) -> str:
        return os.path.join(self.task_dir, name)

    def make_role(self, task_id: str | None = None, **overrides: str) -> PiEvents:
        environ = {**child_environment(self.published, task_id or self.task_id), **overrides}
        return self.role_for(environ)

    def role_for(self, environ: Mapping[str, str]) -> PiEvents:
        """The child role a Pi process with ``environ`` runs, on this world's adapters."""
        return child_role_for(
            ChildEnvironment.from_environ(environ, "posix"),
            fs=self.fs,
            locks=self.locks,
            clock=self.clock,
            ids=self.ids,
        )

    def child(self, task_id: str | None = None) -> FakePiChild:
        return self.pi(lambda: self.make_role(task_id))

    def pi(self, make_role: Callable[[], PiEvents]) -> FakePiChild:
        return FakePiChild(make_role, serialise_executions=self.emulated)

    def attestation(self) -> dict[str, Any]:
        with open(self.path(ATTESTATION_FILE), "rb") as handle:
            value: dict[str, Any] = json.loads(handle.read())
        return value

    def attestation_valid(self) -> bool:
        with open(self.path(ATTESTATION_FILE), "rb") as handle:
            data = handle.read()
        binding = SpecBinding.of(TABLE, squad_id=self.published.squad.id, task_id=self.task_id)
        return validate_attestation_bytes(data, binding, TABLE).valid

    def canonical_path(self) -> str:
        spec = self.published.squad.spec
        assert spec is not None
        return spec.path


@pytest.fixture(params=["fake", "real"])
def world(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> ChildWorld:
    if request.param == "fake":
        fake: FakeFilesystem = request.getfixturevalue("fs")
        fake.add_real_directory(BUNDLED_AGENTS_DIR)
        fake.add_real_directory(SCHEMAS_DIR)
        refuse_kernel_calls(monkeypatch)
        base = "/work-fake"
        locks: LockFactory = FakeLockFactory()
        fs: FileSystem = emulated_posix_file_system()
    else:
        base = str(tmp_path)
        locks = FastenersLockFactory()
        fs = host_file_system()
    os.makedirs(f"{base}/project", exist_ok=True)
    with open(f"{base}/project/squad-spec.json", "wb") as handle:
        handle.write(SPEC)
    clock = FakeClock()
    published = publish(fs, f"{base}/root", SPEC, cwd=f"{base}/project", locks=locks, clock=clock)
    return ChildWorld(
        fs=fs, locks=locks, clock=clock, published=published, emulated=request.param == "fake"
    )


def read_all(
    child: FakePiChild, order: list[int] | None = None, *, next_model_call: bool = True
) -> list[dict[str, Any]]:
    return child.assistant_message(
        [read(i) for i in (order or list(range(COUNT)))], next_model_call=next_model_call
    )


# --- reader result -------------------------------------------------------------------------


def test_reader_result_is_two_text_blocks_metadata_then_exact_chunk_text(world: ChildWorld) -> None:
    child = world.child()
    for message in read_all(child):
        metadata_text, chunk_text = result_texts(message)
        index = message["details"]["index"]
        ref = TABLE.chunk(index)
        expected = {
            "version": 1,
            "squadId": world.published.squad.id,
            "taskId": "build",
            "index": index,
            "chunkCount": COUNT,
            "startByte": ref.start_byte,
            "endByteExclusive": ref.end_byte_exclusive,
            "chunkBytes": 32768,
            "chunkSha256": ref.sha256,
            "specBytes": len(SPEC),
            "specSha256": TABLE.spec_sha256,
        }
        assert metadata_text == json.dumps(expected, separators=(",", ":"))
        assert list(json.loads(metadata_text)) == list(expected), "fixed key order"
        assert message["details"] == expected
        assert chunk_text.encode() == SPEC[ref.start_byte : ref.end_byte_exclusive]


def test_reader_results_carry_their_texts_exact_utf8_for_the_bridge(world: ChildWorld) -> None:
    # The bridge writes ``utf8`` instead of encoding the text: they must never disagree.
    child = world.child()
    role = child.role
    assert isinstance(role, SpecChildRole)
    for index in range(COUNT):
        result = role.execute_tool(f"utf8-{index}", "squad_spec_read", {"index": index})
        ref = TABLE.chunk(index)
        assert result.utf8 == (None, SPEC[ref.start_byte : ref.end_byte_exclusive])
        assert result.utf8[1] == result.texts[1].encode("utf-8")


def test_concatenated_chunk_texts_are_exactly_the_canonical_bytes(world: ChildWorld) -> None:
    messages = read_all(world.child())
    assert "".join(result_texts(m)[1] for m in messages).encode() == SPEC


def test_reader_schema_is_exactly_one_non_negative_integer_index(world: ChildWorld) -> None:
    child = world.child()
    (spec,) = child.registrations.tools
    assert spec.name == "squad_spec_read"
    assert spec.parameters == {
        "type": "object",
        "additionalProperties": False,
        "required": ["index"],
        "properties": {"index": {"type": "integer", "minimum": 0}},
    }


# --- coverage ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "order",
    [
        list(range(COUNT)),
        list(reversed(range(COUNT))),
        random.Random(7).sample(range(COUNT), COUNT),
    ],
    ids=["forward", "reverse", "random"],
)
def test_any_order_completes_with_a_sorted_attestation(world: ChildWorld, order: list[int]) -> None:
    child = world.child()
    for index in order:
        child.assistant_message([read(index)])
    attestation = world.attestation()
    assert [c["index"] for c in attestation["chunks"]] == list(range(COUNT))
    assert world.attestation_valid()
    assert attestation["chunks"][order[0]]["toolCallId"] == f"call-read-{order[0]}"


def test_concurrent_reads_in_one_message_complete_coverage(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(i) for i in random.Random(3).sample(range(COUNT), COUNT)])
    assert world.attestation_valid()
    child.assistant_message([tool("bash", command="true")])
    assert child.executed_names() == ["bash"]


def test_duplicate_identical_chunk_does_not_inflate_coverage(world: ChildWorld) -> None:
    child = world.child()
    for _ in range(3):
        child.assistant_message([read(0, call_id=f"dup-{_}")])
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    state = json.loads(Path(world.path(STATE_FILE)).read_bytes())
    assert [d["index"] for d in state["deliveries"]] == [0]
    assert state["deliveries"][0]["toolCallId"] == "dup-0", "the original record is kept"
    assert (
        "Missing chunk indices: [" + ", ".join(map(str, range(1, COUNT))) + "]"
        in child.system_prompt()
    )


def test_redundant_reads_after_completion_never_rewrite_the_attestation(world: ChildWorld) -> None:
    child = world.child()
    read_all(child)
    before = Path(world.path(ATTESTATION_FILE)).read_bytes()
    world.clock.advance(60)
    messages = child.assistant_message([read(1, call_id="again")])
    assert (
        result_texts(messages[0])[1].encode()
        == SPEC[TABLE.chunk(1).start_byte : TABLE.chunk(1).end_byte_exclusive]
    )
    assert Path(world.path(ATTESTATION_FILE)).read_bytes() == before


def test_missing_chunk_leaves_every_normal_tool_blocked(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(i) for i in range(COUNT - 1)])
    (message,) = child.assistant_message([tool("bash", command="cat spec")])
    assert message["isError"] is True
    assert result_texts(message) == [GUARD_REASON]
    assert child.executed == []
    assert f"Missing chunk indices: [{COUNT - 1}]" in child.system_prompt()


@pytest.mark.parametrize("index", [COUNT, COUNT + 10, 2**40])
def test_out_of_range_index_is_an_error_and_records_nothing(world: ChildWorld, index: int) -> None:
    child = world.child()
    (message,) = child.assistant_message([read(index)])
    assert message["isError"] is True
    assert "out of range" in result_texts(message)[0]
    assert not os.path.exists(world.path(STATE_FILE))


def test_negative_index_fails_validation_before_the_guard_sees_it(world: ChildWorld) -> None:
    child = world.child()
    (message,) = child.assistant_message([tool("squad_spec_read", call_id="neg", index=-1)])
    assert message["isError"] is True
    assert "Validation failed" in result_texts(message)[0]
    assert "neg" not in child.preflighted


def test_guard_blocks_a_reader_call_with_extra_properties(world: ChildWorld) -> None:
    role = world.make_role()
    decision = role.tool_call("x", "squad_spec_read", {"index": 0, "path": "/etc/passwd"})
    assert decision.block
    assert role.tool_call("x", "squad_spec_read", {"index": True}).block
    assert role.tool_call("x", "squad_spec_read", {"index": "0"}).block
    assert not role.tool_call("x", "squad_spec_read", {"index": 0}).block


# --- tampering -----------------------------------------------------------------------------


def _replace_text(position: int, text: str) -> Any:
    def tamper(message: dict[str, Any]) -> dict[str, Any]:
        content = [dict(block) for block in message["content"]]
        content[position]["text"] = text
        return {**message, "content": content}

    return tamper


TAMPERS = {
    "chunk text": _replace_text(1, "forged"),
    "metadata text": _replace_text(0, '{"version":1}'),
    "details": lambda m: {**m, "details": {**m["details"], "chunkSha256": "0" * 64}},
    "marked as error": lambda m: {**m, "isError": True},
    "extra block": lambda m: {**m, "content": [*m["content"], {"type": "text", "text": ""}]},
    "one block dropped": lambda m: {**m, "content": m["content"][:1]},
    "other tool name": lambda m: {**m, "toolName": "read"},
}


@pytest.mark.parametrize("tamper", TAMPERS.values(), ids=TAMPERS.keys())
def test_tampered_result_is_never_committed(world: ChildWorld, tamper: Any) -> None:
    child = world.child()
    child.assistant_message([read(i) for i in range(COUNT)], tamper={"call-read-0": tamper})
    state = json.loads(Path(world.path(STATE_FILE)).read_bytes())
    assert 0 not in [d["index"] for d in state["deliveries"]]
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    assert child.assistant_message([tool("bash")])[0]["isError"] is True


def test_a_result_for_an_unknown_tool_call_commits_nothing(world: ChildWorld) -> None:
    role = world.make_role()
    forged = {
        "role": "toolResult",
        "toolCallId": "never-executed",
        "toolName": "squad_spec_read",
        "content": [{"type": "text", "text": "{}"}, {"type": "text", "text": ""}],
        "details": {},
        "isError": False,
    }
    role.message_end(forged)
    assert not os.path.exists(world.path(STATE_FILE))


def test_conflicting_progress_record_invalidates_and_blocks(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(0)])
    state_path = Path(world.path(STATE_FILE))
    state = json.loads(state_path.read_bytes())
    state["deliveries"][0]["sha256"] = "f" * 64
    os.chmod(state_path, 0o600)
    state_path.write_text(json.dumps(state))
    read_all(child)
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    assert child.assistant_message([tool("bash")])[0]["isError"] is True
    assert "invalid" in child.system_prompt()


# --- the guard -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        tool("read", path="spec/spec.v1.json"),
        tool("bash", command="cat spec.v1.json"),
        tool("bash", command="grep -r goal ."),
        tool("grep", pattern="goal"),
        tool("write", path="x", content="y"),
        tool("edit", path="x"),
        tool("ls"),
        tool("find"),
    ],
    ids=lambda c: c.name,
)
def test_every_normal_tool_is_blocked_before_attestation(world: ChildWorld, call: Any) -> None:
    child = world.child()
    (message,) = child.assistant_message([call])
    assert result_texts(message) == [GUARD_REASON]
    assert child.executed == []


def test_custom_and_later_registered_tools_are_blocked(world: ChildWorld) -> None:
    child = world.child()
    child.register_tool_later("mcp_browser")
    child.register_tool_later("squad")
    messages = child.assistant_message([tool("mcp_browser", url="x"), tool("squad", goal="x")])
    assert [result_texts(m) for m in messages] == [[GUARD_REASON], [GUARD_REASON]]
    assert child.executed == []


def test_normal_sibling_of_reads_in_one_parallel_message_is_blocked(world: ChildWorld) -> None:
    child = world.child()
    messages = child.assistant_message([*(read(i) for i in range(COUNT)), tool("bash")])
    assert messages[-1]["isError"] is True
    assert result_texts(messages[-1]) == [GUARD_REASON]
    assert child.executed == []
    assert world.attestation_valid(), "the reads themselves executed and were delivered"
    (after,) = child.assistant_message([tool("bash", call_id="next-turn")])
    assert after["isError"] is False
    assert child.executed_names() == ["bash"]


def test_reads_pinned_at_once_all_count_on_a_real_file_system(world: ChildWorld) -> None:
    """Every read of one message holds its open, fstat-pinned descriptor on the canonical file
    while its siblings open theirs; on a real file system no such open disturbs another read."""
    if world.emulated:
        pytest.skip("pyfakefs moves a file's ctime on every open: its children read in turn")
    posix_adapter()  # skips on Windows, where the interleaving adapter does not exist
    pinned_together = threading.Barrier(COUNT, timeout=60)  # the timeout is a hang guard only
    waited = threading.local()
    met = threading.Event()

    def meet(block: int) -> None:
        # Before the first block of each execution's canonical read: its descriptor is pinned.
        # Reads after all have met (a delivery's fresh read at its commit) pass straight on.
        if (
            threading.current_thread() is threading.main_thread()
            or getattr(waited, "done", False)
            or met.is_set()
        ):
            return
        waited.done = True
        pinned_together.wait()
        met.set()

    fs = _fs_worlds.InterleavingPosix()
    fs.before_read = meet
    messages = read_all(attrs.evolve(world, fs=fs).child())
    assert [message["isError"] for message in messages] == [False] * COUNT
    assert world.attestation_valid()


def test_sibling_executions_overlap_except_over_pyfakefs(
    world: ChildWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Pi does, the harness runs one message's calls concurrently; over pyfakefs, which is
    not thread-safe, one at a time (overlapping reads there fail on its ctime bumps)."""
    in_flight, peak, guard = 0, 0, threading.Lock()
    all_in_flight = threading.Barrier(COUNT, timeout=60)  # the timeout is a hang guard only
    execute = SpecChildRole.execute_tool

    def observed(
        role: SpecChildRole, tool_call_id: str, tool_name: str, params: object
    ) -> ToolResult:
        nonlocal in_flight, peak
        with guard:
            in_flight += 1
            peak = max(peak, in_flight)
        try:
            if world.emulated:
                time.sleep(0.01)  # room for a sibling to start, were executions not in turn
            else:
                all_in_flight.wait()
            return execute(role, tool_call_id, tool_name, params)
        finally:
            with guard:
                in_flight -= 1

    monkeypatch.setattr(SpecChildRole, "execute_tool", observed)
    assert not any(message["isError"] for message in read_all(world.child()))
    assert peak == (1 if world.emulated else COUNT)


def test_guard_fails_closed_when_it_cannot_decide(world: ChildWorld) -> None:
    child = world.child()
    read_all(child)
    canonical = world.canonical_path()
    os.chmod(canonical, 0o600)
    with open(canonical, "r+b") as handle:
        handle.write(b" ")
    (message,) = child.assistant_message([tool("bash")])
    assert message["isError"] is True


# --- crashes and restarts ------------------------------------------------------------------


def test_execution_without_message_end_counts_nothing(world: ChildWorld) -> None:
    child = world.child()
    with pytest.raises(ChildCrashed):
        child.assistant_message([read(i) for i in range(COUNT)], crash_at="after_execution")
    child.restart()
    missing = ", ".join(str(i) for i in range(COUNT))
    assert f"Missing chunk indices: [{missing}]" in child.system_prompt()


def test_crash_between_message_ends_keeps_only_committed_chunks(world: ChildWorld) -> None:
    # Chunks 0 and 1 were committed at the next model call; chunk 2's message_end came, but
    # Pi died before its next model call: it was never committed and is read again.
    child = world.child()
    child.assistant_message([read(0), read(1)])
    with pytest.raises(ChildCrashed):
        child.assistant_message([read(i) for i in range(2, COUNT)], crash_at=1)
    child.restart()
    remaining = ", ".join(str(i) for i in range(2, COUNT))
    assert f"Missing chunk indices: [{remaining}]" in child.system_prompt()
    child.assistant_message([read(i) for i in range(2, COUNT)])
    assert world.attestation_valid()
    assert world.attestation()["chunks"][0]["toolCallId"] == "call-read-0"


def test_complete_session_resumed_in_a_new_process_needs_no_reread(world: ChildWorld) -> None:
    child = world.child()
    read_all(child)
    child.restart()
    (message,) = child.assistant_message([tool("bash", call_id="after-restart")])
    assert message["isError"] is False
    assert "all tools are available" in child.system_prompt()


def test_resumed_complete_session_is_blocked_if_the_canonical_file_changed(
    world: ChildWorld,
) -> None:
    child = world.child()
    read_all(child)
    canonical = world.canonical_path()
    os.chmod(canonical, 0o600)
    with open(canonical, "r+b") as handle:
        handle.seek(10)
        handle.write(b"X")
    child.restart()
    assert child.assistant_message([tool("bash")])[0]["isError"] is True
    assert "failed verification" in child.system_prompt()


def test_all_chunks_committed_but_no_attestation_is_finalised_on_restart(world: ChildWorld) -> None:
    child = world.child()
    read_all(child)
    os.remove(world.path(ATTESTATION_FILE))
    assert child.assistant_message([tool("bash")])[0]["isError"] is True
    child.restart()
    assert world.attestation_valid()
    assert child.assistant_message([tool("bash", call_id="b2")])[0]["isError"] is False


def test_corrupt_progress_is_moved_aside_and_reading_restarts(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(0)])
    Path(world.path(STATE_FILE)).write_bytes(b"{not json")
    child.restart()
    aside = [n for n in os.listdir(world.task_dir) if n.startswith(f"{STATE_FILE}.corrupt-")]
    assert len(aside) == 1
    assert Path(world.task_dir, aside[0]).read_bytes() == b"{not json"
    assert (
        f"Missing chunk indices: [{', '.join(str(i) for i in range(COUNT))}]"
        in child.system_prompt()
    )


def test_tampered_attestation_is_archived_and_the_task_must_read_again(world: ChildWorld) -> None:
    child = world.child()
    read_all(child)
    document = world.attestation()
    document["completedAt"] = "not a time"
    Path(world.path(ATTESTATION_FILE)).write_text(json.dumps(document))
    assert child.assistant_message([tool("bash")])[0]["isError"] is True
    child.restart()
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    assert any(n.startswith(f"{ATTESTATION_FILE}.invalid-") for n in os.listdir(world.task_dir))
    read_all(child)
    assert world.attestation_valid()


def test_each_task_has_independent_coverage(world: ChildWorld) -> None:
    read_all(world.child("build"))
    other = world.child("qa")
    assert other.assistant_message([tool("bash")])[0]["isError"] is True
    assert not os.path.exists(os.path.join(world.published.squad_dir, "qa", ATTESTATION_FILE))


# --- environment ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "removed",
    ["PI_SQUAD_SPEC_SHA256", "PI_SQUAD_SPEC_BYTES", "PI_SQUAD_SPEC_CHUNK_BYTES", "PI_SQUAD_CHILD"],
)
def test_partial_environment_fails_closed(world: ChildWorld, removed: str) -> None:
    environ = dict(child_environment(world.published, "build"))
    del environ[removed]
    role = world.role_for(environ)
    child = world.pi(lambda: role)
    assert child.registrations.tools == ()
    assert child.registrations.guard
    assert child.system_prompt().startswith("BASE\n\nFile-spec bootstrap failed closed:")
    assert removed in child.system_prompt()
    for call in (tool("bash"), tool("read")):
        assert child.assistant_message([call])[0]["isError"] is True
    assert child.executed == []


def test_spec_path_outside_the_named_squad_fails_closed(world: ChildWorld) -> None:
    role = world.make_role(PI_SQUAD_SPEC_PATH="/elsewhere/spec/spec.v1.json")
    assert not isinstance(role, SpecChildRole)
    assert role.registrations().tools == ()


def test_legacy_child_registers_nothing(world: ChildWorld) -> None:
    role = world.role_for(ChildEnvironment().to_environ())
    registrations = role.registrations()
    assert registrations.tools == ()
    assert not registrations.guard
    assert not registrations.message_end
    assert not registrations.bootstrap


def test_bootstrap_is_a_manifest_without_spec_fields(world: ChildWorld) -> None:
    prompt = world.child().system_prompt()
    assert world.published.squad.id in prompt
    assert TABLE.spec_sha256 in prompt
    assert str(len(SPEC)) in prompt
    assert f"squad-spec-chunks: {COUNT}" in prompt
    for forbidden in ("verify the spec", "Task build", "Ship"):
        assert forbidden not in prompt


# --- raw arguments: what the model sent, not what Pi coerced ---------------------------------


@pytest.mark.parametrize("raw", [{"index": "1"}, {"index": True}, {"index": None}, {"index": 1.5}])
def test_a_reader_call_whose_raw_arguments_pi_coerced_is_blocked_and_counts_nothing(
    world: ChildWorld, raw: object
) -> None:
    """Pi coerces ``"1"`` (and ``true``/``null``) to an integer before ``tool_call``; the
    assistant message shows what the model really sent, and only that is judged."""
    child = world.child()
    (message,) = child.assistant_message([read(1, "c1")], raw_arguments={"c1": raw})
    assert message["isError"] is True
    assert 'squad_spec_read takes exactly {"index": <integer >= 0>}' in result_texts(message)[0]
    assert not os.path.exists(world.path(STATE_FILE)), "no coverage recorded"


def test_a_strict_raw_call_beside_a_coerced_one_still_counts(world: ChildWorld) -> None:
    child = world.child()
    strict, coerced = child.assistant_message(
        [read(0, "ok"), read(1, "bad")], raw_arguments={"bad": {"index": "1"}}
    )
    assert strict["isError"] is False
    assert coerced["isError"] is True
    with open(world.path(STATE_FILE), "rb") as handle:
        state = json.loads(handle.read())
    assert [d["index"] for d in state["deliveries"]] == [0]


def test_a_spec_directory_swapped_for_a_symlink_blocks_the_child(world: ChildWorld) -> None:
    """Red-team issue 11, finding 5, child side: an identical copy reached through a linked
    ``spec/`` is not the squad's canonical file, so nothing verifies and every tool stays
    blocked."""
    child = world.child()
    read_all(child)
    spec_dir = os.path.dirname(world.canonical_path())
    elsewhere = os.path.join(os.path.dirname(world.published.squad_dir), "elsewhere")
    os.makedirs(elsewhere)
    os.rename(spec_dir, os.path.join(elsewhere, "spec"))
    os.symlink(os.path.join(elsewhere, "spec"), spec_dir, target_is_directory=True)
    child.restart()
    assert child.assistant_message([tool("bash")])[0]["isError"] is True
    assert "failed verification" in child.system_prompt()


# --- the ledger's remembered coverage (reused while the progress file keeps its identity) ----


def _recorded_indices(world: ChildWorld) -> list[int]:
    state = json.loads(Path(world.path(STATE_FILE)).read_bytes())
    return [d["index"] for d in state["deliveries"]]


def test_a_commit_by_another_process_is_seen_by_the_next_commit(world: ChildWorld) -> None:
    # Two children of one task (say a restarted process next to a lingering one): each ledger
    # remembers what it last wrote; the other's replacement must not be overwritten by it.
    first, second = world.child(), world.child()
    first.assistant_message([read(0)])
    second.assistant_message([read(1)])
    first.assistant_message([read(2)])
    assert _recorded_indices(world) == [0, 1, 2]


def test_a_progress_file_forged_by_replacement_is_judged_again(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(0)])
    state_path = Path(world.path(STATE_FILE))
    state = json.loads(state_path.read_bytes())
    state["deliveries"][0]["sha256"] = "f" * 64
    forged = Path(world.path("forged.json"))
    forged.write_text(json.dumps(state, separators=(",", ":")) + "\n")
    os.replace(forged, state_path)
    child.assistant_message([read(1)])
    assert "invalid" in child.system_prompt()
    read_all(child)
    assert not os.path.exists(world.path(ATTESTATION_FILE))


def test_a_same_size_rewrite_in_place_is_judged_again(world: ChildWorld) -> None:
    # The hardest foreign change to see: same inode, same size, mtime put back. Its ctime moves
    # (no user can set it), so the identity differs and the forged record is read and refused.
    child = world.child()
    child.assistant_message([read(0)])
    state_path = Path(world.path(STATE_FILE))
    before = os.stat(state_path)
    original = state_path.read_bytes()
    sha = json.loads(original)["deliveries"][0]["sha256"]
    forged = original.replace(sha.encode(), ("f" * 64).encode())
    assert len(forged) == len(original)
    assert forged != original
    with open(state_path, "r+b") as handle:
        handle.write(forged)
    os.utime(state_path, ns=(before.st_atime_ns, before.st_mtime_ns))
    child.assistant_message([read(1)])
    assert "invalid" in child.system_prompt()


def test_progress_moved_aside_by_the_parent_is_not_remembered(world: ChildWorld) -> None:
    child = world.child()
    child.assistant_message([read(0), read(1)])
    os.rename(world.path(STATE_FILE), world.path(f"{STATE_FILE}.superseded-test"))
    child.assistant_message([read(2)])
    assert _recorded_indices(world) == [2]


def test_every_read_of_a_chunk_returns_the_same_blocks(world: ChildWorld) -> None:
    child = world.child()
    first = child.assistant_message([read(2, call_id="a")])
    again = child.assistant_message([read(2, call_id="b")])
    assert result_texts(first[0]) == result_texts(again[0])
    assert first[0]["details"] == again[0]["details"]
    assert _recorded_indices(world) == [2]


def test_a_read_after_the_canonical_file_changed_fails_although_it_was_read_before(
    world: ChildWorld,
) -> None:
    # What is reused between reads is only the rendering of bytes verified again each time.
    child = world.child()
    child.assistant_message([read(0)])
    canonical = world.canonical_path()
    os.chmod(canonical, 0o600)
    with open(canonical, "r+b") as handle:
        handle.seek(10)
        handle.write(b"X")
    (message,) = child.assistant_message([read(0, call_id="again")])
    assert message["isError"] is True
    assert "integrity" in result_texts(message)[0]


def test_a_canonical_change_before_the_commit_commits_nothing_and_leaves_no_temp_file(
    world: ChildWorld,
) -> None:
    # The fresh canonical read of a delivery's commit fails: Pi's ``context`` answer says why
    # (the harness raises it),
    # the progress file is as it was and nothing is left beside it.
    child = world.child()
    child.assistant_message([read(0)])
    state_path = Path(world.path(STATE_FILE))
    before = state_path.read_bytes()
    with pytest.raises(CanonicalIntegrityError):
        child.assistant_message(
            [read(1)], tamper={"call-read-1": _changing_the_canonical_file(world)}
        )
    assert state_path.read_bytes() == before
    assert _temporaries(world) == []
    assert not os.path.exists(world.path(ATTESTATION_FILE))


def _role_with(world: ChildWorld, fs: FileSystem | None = None) -> PiEvents:
    return child_role_for(
        ChildEnvironment.from_environ(child_environment(world.published, world.task_id), "posix"),
        fs=fs or world.fs,
        locks=world.locks,
        clock=world.clock,
        ids=world.ids,
    )


def _child_with(world: ChildWorld, fs: FileSystem | None = None) -> FakePiChild:
    role = _role_with(world, fs)
    return world.pi(lambda: role)


def _temporaries(world: ChildWorld) -> list[str]:
    return [name for name in os.listdir(world.task_dir) if ".tmp." in name]


def _flip_canonical_byte(world: ChildWorld) -> None:
    canonical = world.canonical_path()
    os.chmod(canonical, 0o600)
    with open(canonical, "r+b") as handle:  # a second flip puts the pinned byte back
        handle.seek(10)
        original = handle.read(1)[0]
        handle.seek(10)
        handle.write(bytes([original ^ 1]))


def _changing_the_canonical_file(world: ChildWorld) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def tamper(message: dict[str, Any]) -> dict[str, Any]:
        _flip_canonical_byte(world)
        return message

    return tamper


def test_the_deliveries_of_one_message_commit_as_one_group(world: ChildWorld) -> None:
    # One fresh canonical read and one durable progress write for all of them.
    fs = RecordingFileSystem(world.fs)
    child = _child_with(world, fs=fs)
    fs.calls.clear()  # what the session start read
    read_all(child)
    canonical = world.canonical_path()
    reads = [
        call for call in fs.calls if call.operation == "read_stable" and call.path == canonical
    ]
    assert len(reads) == COUNT + 1  # each execution's own, then the group's fresh read
    assert [call.path for call in fs.calls if call.operation == "write_atomic"] == [
        world.path(STATE_FILE),
        world.path(ATTESTATION_FILE),
    ]
    assert world.attestation_valid()


def test_message_end_commits_nothing_until_the_deliveries_settle(world: ChildWorld) -> None:
    # Pi's ``context`` event before its next model call is when they count (the bridge's end
    # of input, the guard and the bootstrap settle them too).
    child = _child_with(world)
    child.assistant_message([read(0), read(1)], next_model_call=False)
    assert not os.path.exists(world.path(STATE_FILE))
    child.context()
    assert _recorded_indices(world) == [0, 1]


def test_a_chunk_s_delivered_at_is_when_its_result_was_delivered_not_when_it_was_committed(
    world: ChildWorld,
) -> None:
    child = _child_with(world)
    before = world.clock.now()
    child.assistant_message([read(0), read(1)], next_model_call=False)
    after = world.clock.now()
    world.clock.advance(7)  # the next model call comes 7 s later
    child.context()
    state = json.loads(Path(world.path(STATE_FILE)).read_bytes())
    stamps = [datetime.fromisoformat(d["deliveredAt"]) for d in state["deliveries"]]
    assert len(stamps) == 2
    assert all(before <= stamp <= after for stamp in stamps), (before, stamps, after)


def test_a_canonical_change_after_message_end_is_caught_by_the_commit_s_fresh_read(
    world: ChildWorld,
) -> None:
    # The fresh read that vouches for a delivery is made after it arrived, not at message_end.
    child = _child_with(world)
    child.assistant_message([read(0)], next_model_call=False)
    _flip_canonical_byte(world)
    with pytest.raises(CanonicalIntegrityError):
        child.context()
    assert not os.path.exists(world.path(STATE_FILE))
    assert _temporaries(world) == []


def test_deliveries_not_yet_committed_when_the_bridge_dies_count_as_not_read(
    world: ChildWorld,
) -> None:
    # Pi and its bridge killed together after the message_ends, before any settle: the
    # restarted child finds those chunks missing and reads them again (§8, crash before commit).
    child = _child_with(world)
    child.assistant_message([read(0), read(1)], next_model_call=False)
    child.make_role = lambda: _role_with(world)
    child.restart()
    assert not os.path.exists(world.path(STATE_FILE))
    assert f"Missing chunk indices: [{', '.join(map(str, range(COUNT)))}]" in (
        child.system_prompt()
    )


def test_the_guard_counts_only_deliveries_committed_before_this_turn(world: ChildWorld) -> None:
    child = _child_with(world)
    read_all(child, next_model_call=False)
    assert child.role.tool_call("call-bash", "bash", {"command": "true"}).block
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    child.context()  # Pi's next model call
    assert not child.role.tool_call("call-bash-2", "bash", {"command": "true"}).block
    assert world.attestation_valid()


def test_a_tool_beside_the_last_read_stays_blocked_when_pi_runs_the_calls_in_turn(
    world: ChildWorld,
) -> None:
    # Pi runs a message's calls one after another when one of its tools asks for that: the
    # bash call is preflighted after the last read's message_end, and still blocked (§8: normal
    # tools only in a later model turn, after the delivery commits).
    child = _child_with(world)
    child.assistant_message([read(i) for i in range(COUNT - 1)])
    messages = child.assistant_message_in_turn([read(COUNT - 1), tool("bash", command="true")])
    assert messages[1]["isError"] is True
    assert result_texts(messages[1]) == [GUARD_REASON]
    assert child.executed_names() == []
    assert world.attestation_valid()  # the read counted, at the next model call
    child.assistant_message([tool("bash", call_id="later", command="true")])
    assert child.executed_names() == ["bash"]


def test_the_bootstrap_lists_as_missing_only_what_the_deliveries_received_leave(
    world: ChildWorld,
) -> None:
    child = _child_with(world)
    child.assistant_message([read(i) for i in range(1, COUNT)], next_model_call=False)
    assert "Missing chunk indices: [0]" in child.system_prompt()
    assert _recorded_indices(world) == list(range(1, COUNT))


def test_a_foreign_progress_file_is_not_judged_before_the_fresh_read_verifies(
    world: ChildWorld,
) -> None:
    # Judging a file this ledger did not write may move it aside (corrupt): only once the
    # commit's fresh read has verified the canonical file.
    child = _child_with(world)
    child.assistant_message([read(0)])
    Path(world.path(STATE_FILE)).write_bytes(b"{not json")
    with pytest.raises(CanonicalIntegrityError):
        child.assistant_message(
            [read(1)], tamper={"call-read-1": _changing_the_canonical_file(world)}
        )
    assert Path(world.path(STATE_FILE)).read_bytes() == b"{not json"
    assert [n for n in os.listdir(world.task_dir) if ".corrupt-" in n] == []


def test_a_repeated_delivery_writes_no_attestation_without_a_fresh_read(
    world: ChildWorld,
) -> None:
    # A delivery that changes no coverage still needs its fresh read before the ledger acts
    # on it (here: finalising a complete coverage whose attestation went missing).
    child = _child_with(world)
    read_all(child)
    os.remove(world.path(ATTESTATION_FILE))
    with pytest.raises(CanonicalIntegrityError):
        child.assistant_message(
            [read(0, call_id="again")], tamper={"again": _changing_the_canonical_file(world)}
        )
    assert not os.path.exists(world.path(ATTESTATION_FILE))
    _flip_canonical_byte(world)  # back to the pinned bytes
    child.assistant_message([read(0, call_id="once-more")])
    assert world.attestation_valid()


def test_a_session_start_removes_the_temp_files_a_dead_writer_left(world: ChildWorld) -> None:
    # Killed between its temp file's fsync and the rename: the next session sweeps it (under
    # the task lock every ledger writer holds), and what was committed stays.
    child = world.child()
    child.assistant_message([read(0)])
    for name in (f".{STATE_FILE}.tmp.4242.0123456789abcdef", f".{ATTESTATION_FILE}.tmp.1.ab"):
        Path(world.path(name)).write_bytes(b"{}")
    child.restart()
    assert _temporaries(world) == []
    assert _recorded_indices(world) == [0]
