"""The ``Store`` fake alone: what it records of the commits, rollbacks, observations and
quarantines a test makes through it."""

from __future__ import annotations

import pytest

from domain.attestation.grounding import SpawnObserved
from tests.contract.store.world import (
    MOMENT,
    SQUAD,
    entry,
    fail_within,
    make_squad,
    make_task,
    message,
)
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.store import InMemoryStore, RecordedObservation


@pytest.fixture
def memory() -> InMemoryStore:
    fs = InMemoryFileSystem()
    store = InMemoryStore(fs=fs, root=fs.add_dir("/squads"))
    store.seed(make_squad(), [make_task("design"), make_task("build", depends=("design",))])
    return store


def test_the_fake_records_each_commit_that_wrote_something(memory: InMemoryStore) -> None:
    with memory.transaction(SQUAD) as tx:
        tx.put_task(make_task("design"))  # unchanged: nothing to write
    assert memory.commits == []
    with memory.transaction(SQUAD) as tx:
        tx.put_task(make_task("extra"))
        tx.put_mailbox("build", (entry(1),))
        tx.append_message("build", message(1))
    (commit,) = memory.commits
    assert commit.squad_id == SQUAD
    assert commit.tasks == (make_task("extra"),)
    assert commit.pinned == ("extra",)
    assert commit.squad is not None
    assert commit.squad.task_ids == ("design", "build", "extra")
    assert commit.mailboxes == {"build": (entry(1),)}
    assert commit.messages == (("build", message(1)),)
    assert memory.history(SQUAD, "build") == (message(1),)


def test_the_fake_records_rollbacks_observations_and_quarantines(memory: InMemoryStore) -> None:
    with pytest.raises(RuntimeError):
        fail_within(memory, lambda tx: tx.put_task(make_task("extra")))
    assert memory.rolled_back == [SQUAD]
    assert memory.commits == []
    spawn = SpawnObserved(at=MOMENT, child_id="c1")
    memory.record_observation(SQUAD, "build", spawn)
    assert memory.recorded == [RecordedObservation(SQUAD, "build", spawn)]
    memory.quarantine(SQUAD, "why")
    memory.quarantine(SQUAD, "why")
    assert memory.quarantines == [(SQUAD, "why")]
    records = memory.records(SQUAD)
    assert records.squad.quarantine == "why"
    assert records.observations == {"build": (spawn,)}
