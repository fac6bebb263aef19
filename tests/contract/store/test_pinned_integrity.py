"""The ``Store`` contract: a pinned task whose record is lost, undecodable, another task's or
without its directory is an integrity failure, in a snapshot and in a transaction alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from domain.errors import SquadIntegrityError
from domain.squad.model import Task
from tests.contract.store.world import (
    StoreWorld,
    integrity_failure,
    make_squad,
    make_task,
    read_everything,
    use_in_a_transaction,
)


def test_a_pinned_task_whose_record_is_lost_is_an_integrity_failure(world: StoreWorld) -> None:
    world.lose_task("build")
    message = integrity_failure(world)
    assert "task 'build' is pinned but" in message
    assert "missing" in message


def test_a_pinned_task_whose_record_does_not_decode_is_an_integrity_failure(
    world: StoreWorld,
) -> None:
    world.corrupt_task("build")
    assert "task 'build': " in integrity_failure(world)


def test_a_record_naming_another_task_is_an_integrity_failure(world: StoreWorld) -> None:
    world.replace_record("build", make_task("other"))
    assert "the record of task 'build' names another task" in integrity_failure(world)


def test_a_pinned_task_without_its_ledger_directory_is_an_integrity_failure(
    world: StoreWorld,
) -> None:
    world.fs.remove_tree(world.layout.ledger_dir("build"))
    assert "task 'build' is pinned but its directory is missing" in integrity_failure(world)


def test_a_pinned_id_that_is_not_path_safe_is_an_integrity_failure(world: StoreWorld) -> None:
    world.seed(make_squad(task_ids=("design", "../escape")), [make_task("design")])
    assert "pinned task id '../escape' is not path-safe" in integrity_failure(world)


@pytest.mark.parametrize(
    "use",
    [
        lambda tasks: tasks["build"],
        lambda tasks: tasks.get("build"),
        lambda tasks: "build" in tasks,
        lambda tasks: list(tasks.values()),
        dict,
    ],
    ids=["index", "get", "in", "values", "dict"],
)
def test_every_use_of_a_task_that_does_not_load_is_an_integrity_failure(
    world: StoreWorld, use: Callable[[Mapping[str, Task]], object]
) -> None:
    read_everything(world)
    world.lose_task("build")
    with pytest.raises(SquadIntegrityError):
        use_in_a_transaction(world.store, use)
