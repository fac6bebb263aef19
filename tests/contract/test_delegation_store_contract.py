"""The ``DelegationStore`` port's contract, run against every implementation the tests rely on.

``memory`` is the port fake (:class:`tests.fakes.delegation.InMemoryDelegationStore`);
``file-memory`` is :class:`adapters.delegation.store.FileDelegationStore` over the in-memory
file system; ``file-disk`` is the file store on the real file system. What a host test proves
on the fake holds for the file store as far as this suite makes the two agree: what a
transaction sees and commits, a refused session name, snapshots kept once and re-hashed on
every read. Behaviour of the on-disk format alone (a corrupt ``state.json``, file modes) is
tested for the file store alone (tests/unit/adapters/delegation/test_policy_store.py,
tests/unit/application/delegation/test_capture.py).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import attrs
import pytest

from adapters.delegation.store import FileDelegationStore
from application.ports import DelegationStore, FileSystem
from domain.delegation.errors import DelegationError
from domain.delegation.session import SessionState
from domain.usage import Usage
from tests.contract.store_kinds import KINDS, store_file_system
from tests.fakes.delegation import InMemoryDelegationStore
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.locks import FakeLockFactory
from tests.unit.domain.delegation.states import SESSION, admitted_state, fresh_state

DATA = b"cache = {}\n"
SHA = hashlib.sha256(DATA).hexdigest()


@attrs.define
class StoreWorld:
    kind: str
    store: DelegationStore
    fs: FileSystem | None = None
    root: str = ""

    def tamper_source(self, sha256: str, data: bytes) -> None:
        """The snapshot's bytes replaced behind the store's back."""
        if isinstance(self.store, InMemoryDelegationStore):
            self.store.tamper_source(SESSION, sha256, data)
            return
        path = f"{self.root}/delegation/sessions/{SESSION}/sources/{sha256}"
        if isinstance(self.fs, InMemoryFileSystem):
            self.fs.add_file(path, data)
            return
        os.chmod(path, 0o600)
        Path(path).write_bytes(data)


@pytest.fixture(params=KINDS)
def store_world(request: pytest.FixtureRequest, tmp_path: Path) -> StoreWorld:
    if request.param == "memory":
        return StoreWorld("memory", InMemoryDelegationStore())
    fs, root = store_file_system(request.param, tmp_path / "root")
    store = FileDelegationStore(fs, FakeLockFactory(), root)
    return StoreWorld(request.param, store, fs, root)


def a_state(task_generation: int = 0) -> SessionState:
    return attrs.evolve(fresh_state(), task_generation=task_generation)


def test_a_session_never_written_has_no_state(store_world: StoreWorld) -> None:
    store = store_world.store
    assert store.snapshot(SESSION) is None
    with store.transaction(SESSION) as transaction:
        assert transaction.state is None


def test_a_saved_state_is_what_the_next_transaction_and_a_snapshot_see(
    store_world: StoreWorld,
) -> None:
    store = store_world.store
    saved = a_state(task_generation=3)
    with store.transaction(SESSION) as transaction:
        transaction.save(saved)
    assert store.snapshot(SESSION) == saved
    with store.transaction(SESSION) as transaction:
        assert transaction.state == saved


def test_nothing_is_saved_when_the_transaction_body_raises(store_world: StoreWorld) -> None:
    store = store_world.store
    with store.transaction(SESSION) as transaction:
        transaction.save(a_state())

    def decide_then_fail() -> None:
        with store.transaction(SESSION) as transaction:
            transaction.save(a_state(task_generation=7))
            raise RuntimeError("the decision failed after it saved")

    with pytest.raises(RuntimeError):
        decide_then_fail()
    assert store.snapshot(SESSION) == a_state()


def test_a_transaction_that_saves_nothing_leaves_the_state(store_world: StoreWorld) -> None:
    store = store_world.store
    with store.transaction(SESSION) as transaction:
        transaction.save(a_state(task_generation=1))
    with store.transaction(SESSION) as transaction:
        assert transaction.state is not None
    assert store.snapshot(SESSION) == a_state(task_generation=1)


def test_sessions_are_separate(store_world: StoreWorld) -> None:
    store = store_world.store
    with store.transaction(SESSION) as transaction:
        transaction.save(a_state())
    assert store.snapshot("s2") is None
    store.put_source(SESSION, SHA, DATA)
    with pytest.raises(ValueError, match=SHA):
        store.read_source("s2", SHA)


def test_a_usage_never_reported_stays_distinct_from_zero(store_world: StoreWorld) -> None:
    """The one ``Usage`` value survives the store: which categories were reported, the sums,
    the turns and whether the cost was estimated (a receipt's ``null`` is not a 0)."""
    store = store_world.store
    unreported = Usage()
    reported = Usage.turn(input_tokens=0, output_tokens=5, cost=0.25, cost_estimated=True)
    state = admitted_state()
    _, _, attempt = state.attempts()[0]
    attempt = attrs.evolve(
        attempt,
        usage=reported.plus(unreported),
        request_usage=(reported, unreported, Usage.turn(cache_read_tokens=3)),
    )
    saved = state.with_attempt(attempt)
    with store.transaction(SESSION) as transaction:
        transaction.save(saved)
    loaded = store.snapshot(SESSION)
    assert loaded == saved
    assert loaded is not None
    _, _, read = loaded.attempts()[0]
    assert read.usage.reported_value("input") == 0
    assert read.usage.reported_value("cache_read") is None
    assert [u.turns for u in read.request_usage] == [1, 0, 1]


@pytest.mark.parametrize("name", ["", ".hidden", "..", "a/b", "x" * 65])
def test_a_session_name_that_is_not_a_plain_directory_name_is_refused(
    store_world: StoreWorld, name: str
) -> None:
    store = store_world.store
    for use in (
        lambda: store.transaction(name).__enter__(),
        lambda: store.snapshot(name),
        lambda: store.put_source(name, SHA, DATA),
        lambda: store.read_source(name, SHA),
    ):
        with pytest.raises(DelegationError) as refused:
            use()
        assert refused.value.code == "DELEGATE_INVALID"


def test_a_snapshot_is_kept_once_and_read_back_intact(store_world: StoreWorld) -> None:
    store = store_world.store
    store.put_source(SESSION, SHA, DATA)
    store.put_source(SESSION, SHA, DATA)  # the same bytes again: kept as they are
    assert store.read_source(SESSION, SHA) == DATA


def test_a_snapshot_whose_bytes_changed_is_refused_on_read_and_on_capture(
    store_world: StoreWorld,
) -> None:
    store = store_world.store
    store.put_source(SESSION, SHA, DATA)
    store_world.tamper_source(SHA, b"forged\n")
    with pytest.raises(ValueError, match="no longer has its captured bytes"):
        store.read_source(SESSION, SHA)
    with pytest.raises(ValueError, match="no longer has its captured bytes"):
        store.put_source(SESSION, SHA, DATA)


def test_a_snapshot_never_stored_is_refused(store_world: StoreWorld) -> None:
    with pytest.raises(ValueError, match=SHA):
        store_world.store.read_source(SESSION, SHA)
