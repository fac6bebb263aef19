"""The ``Store`` contract: what a transaction commits, when it shows, and what it leaves alone."""

from __future__ import annotations

import attrs
import pytest

from application.ports import SquadTransaction
from domain.squad.model import TaskStatus
from tests.contract.store.world import (
    SQUAD,
    StoreWorld,
    entry,
    fail_within,
    make_squad,
    make_task,
    message,
    pinned,
)


def test_quarantine_needs_only_the_squad_record(world: StoreWorld) -> None:
    world.lose_task("build")
    world.store.quarantine(SQUAD, "task set has a gap")
    world.store.quarantine(SQUAD, "task set has a gap")  # the same reason again: no change
    world.replace_record("build", make_task("build", depends=("design",)))  # restored
    assert world.store.snapshot(SQUAD).squad.quarantine == "task set has a gap"
    world.store.quarantine(SQUAD, "canonical spec changed")
    assert world.store.snapshot(SQUAD).squad.quarantine == "canonical spec changed"


def test_changes_are_visible_only_when_the_transaction_commits(world: StoreWorld) -> None:
    design = attrs.evolve(make_task("design"), status=TaskStatus.IN_PROGRESS)
    with world.store.transaction(SQUAD) as tx:
        tx.put_task(design)
        tx.put_squad(attrs.evolve(tx.squad, goal="Ship it today"))
        tx.put_mailbox("build", (entry(1),))
        tx.append_message("build", message(1))
        assert tx.tasks["design"] == design, "the transaction sees its own changes"
        assert tx.mailbox("build") == (entry(1),)
        inside = world.store.snapshot(SQUAD)
        assert inside.tasks["design"].status is TaskStatus.PENDING
        assert inside.squad == make_squad()
        assert world.store.mailbox(SQUAD, "build") == ()
        assert world.store.messages(SQUAD, "build") == []
    after = world.store.snapshot(SQUAD)
    assert after.tasks["design"] == design
    assert after.squad.goal == "Ship it today"
    assert world.store.mailbox(SQUAD, "build") == (entry(1),)
    assert world.store.messages(SQUAD, "build") == [message(1)]


def test_a_transaction_whose_body_raises_commits_nothing(world: StoreWorld) -> None:
    before = world.store.snapshot(SQUAD)

    def change(tx: SquadTransaction) -> None:
        tx.put_task(attrs.evolve(make_task("design"), status=TaskStatus.DONE))
        tx.put_task(make_task("extra"))
        tx.put_squad(attrs.evolve(tx.squad, goal="changed"))
        tx.put_mailbox("build", (entry(1),))
        tx.append_message("build", message(1))

    with pytest.raises(RuntimeError, match="boom"):
        fail_within(world.store, change)
    assert world.store.snapshot(SQUAD) == before
    assert world.store.mailbox(SQUAD, "build") == ()
    assert world.store.messages(SQUAD, "build") == []
    assert not world.fs.exists(world.layout.ledger_dir("extra"))
    with world.store.transaction(SQUAD) as tx:  # the squad's lock was released
        assert tx.squad == before.squad


def test_new_tasks_are_pinned_on_commit_in_the_order_they_were_put(world: StoreWorld) -> None:
    with world.store.transaction(SQUAD) as tx:
        tx.put_task(make_task("zeta"))
        tx.put_task(make_task("alpha", depends=("zeta",)))
        tx.put_task(attrs.evolve(make_task("design"), status=TaskStatus.IN_PROGRESS))
        assert tx.squad.task_ids == ("design", "build"), "pinned at commit, not before"
    assert pinned(world) == ("design", "build", "zeta", "alpha")
    snapshot = world.store.snapshot(SQUAD)
    assert snapshot.tasks["alpha"] == make_task("alpha", depends=("zeta",))
    assert world.fs.is_dir(world.store.task_dir(SQUAD, "zeta")), "its ledger directory exists"


def test_a_transaction_changes_only_its_own_squad(world: StoreWorld) -> None:
    other = make_squad("other", task_ids=())
    world.seed(other, [])
    with pytest.raises(ValueError, match="only its own squad"):
        fail_within(world.store, lambda tx: tx.put_squad(other))
    assert world.store.snapshot("other").squad == other
