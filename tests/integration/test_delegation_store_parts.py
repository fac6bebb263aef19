"""The delegation file store keeps a session as a head and content-addressed parts
(``adapters/delegation/store.py``, ``store_parts.py``): a transaction writes what changed, not
the session's history; a crash at any step of a commit leaves the state before or after it; a
session written whole by the earlier layout reads the same and becomes parts at its next write.
Bytes are counted on the in-memory file system, never timed."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import attrs
import pytest

from adapters.delegation import store as store_module
from adapters.delegation.store import FileDelegationStore
from adapters.delegation.store_codec import encode_state
from application.delegation.broker import EvidenceBroker
from domain.delegation.errors import DelegationError
from domain.delegation.policy import BatchGrant, Grant, SessionGrant
from domain.delegation.session import SessionState
from domain.errors import ErrorCode, RecordError
from tests.fakes.delegation import PROJECT, ROOT, DelegationWorld, outcome, report
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.locks import FakeLockFactory
from tests.unit.application.delegation.support import job, run_request
from tests.unit.domain.delegation.states import SESSION, admitted_state

SESSION_DIR = f"{ROOT}/delegation/sessions/{SESSION}"
PARTS_DIR = f"{SESSION_DIR}/parts"
PART_NAME = re.compile(r"^[a-z]+-[0-9a-f]{32}\.json$")
MUTATIONS = ("create_file_exclusive", "fsync_dir", "write_atomic", "remove_file")


def limits_grant() -> Grant:
    """The session's limits as the benchmark fills them: 8 jobs a batch, 32 batches, 32
    running at once."""
    return Grant(
        source_roots=(PROJECT,),
        batch=BatchGrant(max_jobs=8, max_requests=32),
        session=SessionGrant(max_active_jobs=32, max_batches=32, allowance_requests=1024),
    )


def files_written(fs: InMemoryFileSystem, action: Callable[[], object]) -> int:
    """Bytes of the session's files that ``action`` created or changed."""
    before = fs.tree(SESSION_DIR)
    action()
    after = fs.tree(SESSION_DIR)
    return sum(len(data) for path, data in after.items() if data and before.get(path) != data)


def broker_call_bytes(sources: int, batches: int, tool_history: int) -> int:
    """The bytes one broker call (``admit_tool`` + ``read_source``) writes in a session of
    ``sources`` captured files and ``batches`` runs of 8 jobs (of 1 job when ``batches`` is
    1), after ``tool_history`` earlier calls of the same job."""
    w = DelegationWorld(limits_grant())
    for index in range(sources):
        w.fs.add_file(f"{PROJECT}/m{index:03d}.py", f"value_{index} = {index}\n".encode() * 200)
    host = w.host(session=SESSION)
    ids: list[str] = []
    names = [f"m{index:03d}.py" for index in range(sources)]
    for start in range(0, sources, 50):
        answer = host.handle({"version": 1, "op": "capture", "paths": names[start : start + 50]})
        ids += [source["sourceId"] for source in answer["sources"]]
    per_batch = 8 if batches > 1 else 1
    admitted = []
    for batch in range(batches):
        jobs = [
            job(
                f"b{batch}-{n}",
                sourceIds=list(dict.fromkeys(ids[(n * 4 + k) % sources] for k in range(4))),
            )
            for n in range(per_batch)
        ]
        admitted.append(host.handle(run_request(*jobs)))
    for done in admitted[:-1]:
        for row in done["jobs"]:
            host.report(w.runtime.lease(row["jobId"]), outcome(report()))
    lease = w.runtime.lease(admitted[-1]["jobs"][0]["jobId"])
    broker = EvidenceBroker(w.store, lease, w.clock)

    def call() -> None:
        broker.admit_tool("read_source")
        broker.read_source({"sourceId": ids[0], "lineStart": 1, "lineEnd": 40})

    for _ in range(tool_history):
        call()
    return files_written(w.fs, call)


def test_a_broker_call_writes_about_as_much_at_the_limits_as_in_a_small_session() -> None:
    """200 sources, 32 batches of 8 jobs and 95 tool outcomes on the job: the call writes
    the parts on the path to its job (not the session's history), within 2x of the same call
    with 1 source and 1 job."""
    small = broker_call_bytes(sources=1, batches=1, tool_history=4)
    full = broker_call_bytes(sources=200, batches=32, tool_history=94)
    assert full <= 2 * small, (small, full)


# -- crashes -----------------------------------------------------------------------------


def a_store(fs: InMemoryFileSystem) -> FileDelegationStore:
    return FileDelegationStore(fs, FakeLockFactory(), ROOT)


def saved(fs: InMemoryFileSystem, state: SessionState) -> None:
    with a_store(fs).transaction(SESSION) as transaction:
        transaction.save(state)


def two_states() -> tuple[SessionState, SessionState]:
    """A session with one job, and the same after a change to its job and its sources."""
    before = admitted_state()
    _, _, attempt = before.attempts()[0]
    outcomes = tuple({"tool": "read_source", "allowed": True, "reason": str(n)} for n in range(20))
    after = before.with_attempt(attrs.evolve(attempt, tool_calls=20, tool_outcomes=outcomes))
    return before, attrs.evolve(after, task_generation=before.task_generation + 1)


def written_whole(fs: InMemoryFileSystem, state: SessionState) -> None:
    """``state`` as the store kept a session before parts: one whole document."""
    fs.add_dir(SESSION_DIR)
    fs.add_file(f"{SESSION_DIR}/state.json", encode_state(state), 0o600)


LAYOUTS: dict[str, Callable[[InMemoryFileSystem, SessionState], None]] = {
    "parts": saved,
    "whole": written_whole,
}


def commit_steps(layout: str, before: SessionState, after: SessionState) -> list[tuple[str, int]]:
    """Each changing file-system call the commit from ``before`` (kept in ``layout``) to
    ``after`` makes, as (operation, its call number since the file system was made)."""
    fs = InMemoryFileSystem()
    LAYOUTS[layout](fs, before)
    start = len(fs.calls)
    saved(fs, after)
    steps: list[tuple[str, int]] = []
    counts = {op: sum(1 for c in fs.calls[:start] if c.operation == op) for op in MUTATIONS}
    for call in fs.calls[start:]:
        if call.operation in MUTATIONS:
            counts[call.operation] += 1
            steps.append((call.operation, counts[call.operation]))
    return steps


def reachable_parts(fs: InMemoryFileSystem) -> set[str]:
    """The part files the head names, and the parts they name, transitively."""
    found: set[str] = set()
    pending = [fs.read(f"{SESSION_DIR}/state.json")]
    while pending:
        for name in re.findall(r'"([a-z]+-[0-9a-f]{32}\.json)"', pending.pop().decode()):
            if name not in found:
                found.add(name)
                pending.append(fs.read(f"{PARTS_DIR}/{name}"))
    return found


def test_the_commit_makes_each_kind_of_change_the_tests_below_crash_in() -> None:
    steps = [operation for operation, _ in commit_steps("parts", *two_states())]
    assert "create_file_exclusive" in steps
    assert steps.index("fsync_dir") < steps.index("write_atomic") < steps.index("remove_file")


CRASHES = [
    (layout, step) for layout in LAYOUTS for step in range(len(commit_steps(layout, *two_states())))
]


@pytest.mark.parametrize(("layout", "step"), CRASHES)
def test_a_crash_at_any_step_of_a_commit_leaves_the_state_before_or_after_it(
    layout: str, step: int
) -> None:
    """From a session in parts, and from one written whole (its first write migrates it)."""
    before, after = two_states()
    operation, call = commit_steps(layout, before, after)[step]
    fs = InMemoryFileSystem()
    LAYOUTS[layout](fs, before)
    fs.fail(operation, call=call)
    with pytest.raises(OSError, match="injected fault"):
        saved(fs, after)
    survived = a_store(fs).snapshot(SESSION)  # a new process reads what the crash left
    assert survived in (before, after)
    assert survived == (after if operation == "remove_file" else before)
    # The next transaction commits and sweeps what the crash left: no part goes unnamed.
    saved(fs, after)
    assert a_store(fs).snapshot(SESSION) == after
    assert set(fs.children(PARTS_DIR)) == reachable_parts(fs)


def test_a_torn_part_a_crash_left_is_written_again_when_the_same_part_is_committed() -> None:
    before, after = two_states()
    fs = InMemoryFileSystem()
    saved(fs, before)
    store = a_store(fs)  # the same process retries: its first transaction's sweep is done
    with store.transaction(SESSION):
        pass
    fs.fail("fsync_dir", call=len(fs.calls_of("fsync_dir")) + 1)
    with pytest.raises(OSError, match="injected fault"), store.transaction(SESSION) as transaction:
        transaction.save(after)
    orphans = set(fs.children(PARTS_DIR)) - reachable_parts(fs)
    assert orphans
    for orphan in orphans:
        fs.add_file(f"{PARTS_DIR}/{orphan}", b'{"torn')
    with store.transaction(SESSION) as transaction:
        transaction.save(after)
    assert a_store(fs).snapshot(SESSION) == after


# -- layout ------------------------------------------------------------------------------


def test_a_session_written_whole_reads_the_same_and_becomes_parts_at_its_next_write() -> None:
    before, after = two_states()
    fs = InMemoryFileSystem()
    written_whole(fs, before)
    assert a_store(fs).snapshot(SESSION) == before
    with a_store(fs).transaction(SESSION) as transaction:
        assert transaction.state == before
        transaction.save(after)
    head = json.loads(fs.read(f"{SESSION_DIR}/state.json"))
    assert head["layout"] == 2
    assert "batches" not in head["state"]
    assert a_store(fs).snapshot(SESSION) == after
    assert all(PART_NAME.match(name) for name in fs.children(PARTS_DIR))


def test_a_transaction_that_saves_an_equal_state_writes_nothing() -> None:
    before, _ = two_states()
    fs = InMemoryFileSystem()
    saved(fs, before)
    start = len(fs.calls)
    saved(fs, attrs.evolve(before))  # equal, and (a new process) decoded afresh
    assert [c.operation for c in fs.calls[start:] if c.operation in MUTATIONS] == []


def test_a_cached_part_never_hides_what_another_process_committed() -> None:
    before, after = two_states()
    fs = InMemoryFileSystem()
    one, other = a_store(fs), a_store(fs)
    for state in (before, after, before):
        with other.transaction(SESSION) as transaction:
            transaction.save(state)
        assert one.snapshot(SESSION) == state
        with one.transaction(SESSION) as transaction:
            assert transaction.state == state


def test_a_snapshot_that_finds_a_part_removed_reads_the_new_head() -> None:
    """A read without the lock races a commit that removes the parts of the head it read."""
    before, after = two_states()
    fs = InMemoryFileSystem()
    saved(fs, before)
    reads = len(fs.calls_of("read_small"))
    fs.before("read_small", lambda: saved(fs, after), call=reads + 2)
    assert a_store(fs).snapshot(SESSION) == after


def with_a_large_result(state: SessionState) -> SessionState:
    """The state with a judged result of about 8 KB on its job."""
    _, _, attempt = state.attempts()[0]
    return state.with_attempt(attrs.evolve(attempt, result={"summary": "x" * 8000}))


@pytest.mark.parametrize(
    ("bound", "allowed", "named"),
    [
        ("MAX_PART_BYTES", 6000, r"job-[0-9a-f]{32}\.json"),
        ("MAX_STATE_BYTES", 8000, r"state\.json and its parts"),
    ],
)
def test_a_state_larger_than_allowed_is_refused_naming_the_file_its_size_and_the_limit(
    monkeypatch: pytest.MonkeyPatch, bound: str, allowed: int, named: str
) -> None:
    before, _ = two_states()
    fs = InMemoryFileSystem()
    saved(fs, before)
    monkeypatch.setattr(store_module, bound, allowed)
    with pytest.raises(DelegationError) as refused:
        saved(fs, with_a_large_result(before))
    assert refused.value.code == ErrorCode.DELEGATE_CAPACITY_EXHAUSTED
    message = refused.value.message
    assert re.search(rf"{named} would be \d+ bytes, more than the {allowed} allowed", message)
    assert f"pi-squad delegate status --session {SESSION}" in message
    assert a_store(fs).snapshot(SESSION) == before


def test_a_long_lived_store_commits_what_each_transaction_saved() -> None:
    """One store (its cache of parts kept, then pruned) against a fresh reader each time:
    outcomes appended run after run, and earlier states saved again."""
    before, _ = two_states()
    fs = InMemoryFileSystem()
    store = a_store(fs)
    states = [before]
    for n in range(60):
        state = states[-1] if n % 7 else before
        _, _, attempt = state.attempts()[0]
        outcome = {"tool": "read_source", "allowed": n % 2 == 0, "reason": f"call {n}"}
        attempt = attrs.evolve(
            attempt,
            tool_calls=attempt.tool_calls + 1,
            tool_outcomes=(*attempt.tool_outcomes, outcome),
        )
        states.append(state.with_attempt(attempt))
        with store.transaction(SESSION) as transaction:
            transaction.save(states[-1])
        assert a_store(fs).snapshot(SESSION) == states[-1]
        assert store.snapshot(SESSION) == states[-1]
        assert set(fs.children(PARTS_DIR)) == reachable_parts(fs)


@pytest.mark.parametrize(
    "head",
    [b'{"layout": 2, "state": {}}', b'{"layout": 2, "state": {}, "records": [], "batches": []}'],
)
def test_a_head_of_another_shape_is_a_corrupt_record_naming_no_content(head: bytes) -> None:
    fs = InMemoryFileSystem()
    fs.add_dir(SESSION_DIR)
    fs.add_file(f"{SESSION_DIR}/state.json", head, 0o600)
    with pytest.raises(RecordError) as refused:
        a_store(fs).snapshot(SESSION)
    assert refused.value.code == ErrorCode.RECORD_CORRUPT
    assert "layout" not in refused.value.message
