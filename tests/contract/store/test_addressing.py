"""The ``Store`` contract: which ids name a squad or a task, and what reading a squad returns."""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from domain.errors import ErrorCode, NotFoundError, RecordError
from tests.contract.store.world import MOMENT, SQUAD, StoreWorld, make_squad, make_task


def test_paths_follow_the_squad_layout(world: StoreWorld) -> None:
    assert world.store.root == world.root
    assert world.store.squad_dir(SQUAD) == world.layout.squad_dir
    assert world.store.task_dir(SQUAD, "build") == world.layout.ledger_dir("build")


@pytest.mark.parametrize("bad", ["../x", "spec", "con", "a/b", ""])
def test_a_task_id_that_cannot_name_a_directory_is_refused(world: StoreWorld, bad: str) -> None:
    with pytest.raises(ValueError, match="cannot name a task directory"):
        world.store.task_dir(SQUAD, bad)


@pytest.mark.parametrize("bad", ["../x", "spec", "con", "a/b", ""])
def test_a_mailbox_of_a_task_id_that_cannot_name_a_directory_is_refused(
    world: StoreWorld, bad: str
) -> None:
    with pytest.raises(ValueError, match="cannot name a task directory"):
        world.store.mailbox(SQUAD, bad)


@pytest.mark.parametrize("bad", ["Upper", "../up", "", "a_b"])
def test_a_malformed_squad_id_is_not_found(world: StoreWorld, bad: str) -> None:
    with pytest.raises(NotFoundError) as caught:
        world.store.squad_dir(bad)
    assert caught.value.code is ErrorCode.SQUAD_NOT_FOUND


@pytest.mark.parametrize("reserved", ["con", "nul", "lpt1", "agents", "knowledge"])
def test_a_reserved_squad_id_is_not_a_squad_id(world: StoreWorld, reserved: str) -> None:
    """Names ``create`` never gives a squad: refused like a malformed id, on every path in."""
    for call in (
        lambda: world.store.squad_dir(reserved),
        lambda: world.store.layout(reserved),
        lambda: world.store.snapshot(reserved),
    ):
        with pytest.raises(NotFoundError) as caught:
            call()
        assert caught.value.code is ErrorCode.SQUAD_NOT_FOUND
        assert caught.value.message.startswith(f"not a squad id: '{reserved}' is reserved: ")


def test_a_snapshot_is_the_squad_and_exactly_its_pinned_tasks(world: StoreWorld) -> None:
    world.seed(make_squad(), [make_task("design"), make_task("build"), make_task("stray")])
    snapshot = world.store.snapshot(SQUAD)
    assert snapshot.squad == make_squad()
    assert sorted(snapshot.tasks) == ["build", "design"], "an unpinned record is ignored"
    assert snapshot.tasks["design"] == make_task("design")


def test_an_absent_squad_is_not_found(world: StoreWorld) -> None:
    for call in (
        lambda: world.store.snapshot("no-such-squad"),
        lambda: world.store.quarantine("no-such-squad", "why"),
    ):
        with pytest.raises(NotFoundError) as caught:
            call()
        assert caught.value.code is ErrorCode.SQUAD_NOT_FOUND
    with pytest.raises(NotFoundError), world.store.transaction("no-such-squad"):
        pass


def test_squads_are_listed_oldest_first(world: StoreWorld) -> None:
    world.seed(attrs.evolve(make_squad("older"), created=MOMENT - timedelta(days=1)), [])
    world.seed(attrs.evolve(make_squad("newer"), created=MOMENT + timedelta(days=1)), [])
    assert world.store.list_squad_ids() == ["older", SQUAD, "newer"]
    records = world.store.list_squads()
    assert [squad.id for squad in records] == ["older", SQUAD, "newer"]
    assert records[1] == world.store.snapshot(SQUAD).squad, "the committed record itself"


def test_a_squad_whose_own_record_is_corrupt_is_unreadable_not_absent(world: StoreWorld) -> None:
    world.seed(attrs.evolve(make_squad("older"), created=MOMENT - timedelta(days=1)), [])
    assert world.store.unreadable_squad_ids() == []
    world.corrupt_squad()
    assert world.store.list_squad_ids() == ["older"]
    assert world.store.unreadable_squad_ids() == [SQUAD]
    with pytest.raises(RecordError) as caught:
        world.store.snapshot(SQUAD)
    assert caught.value.code is ErrorCode.RECORD_CORRUPT
    assert caught.value.message.startswith(f"{world.layout.squad_file}: ")
