"""``create_squad``: the squad id a goal gives, and the suffix an existing id gets."""

from __future__ import annotations

import pytest

from application.list_squads import list_squads
from domain.squad.ids import base36
from tests.builders import sha, spec_document
from tests.fakes.publication import SQUAD_ROOT, MemoryPublication
from tests.unit.application.squads.create_squad.staging_calls import (
    CLOCK_START,
    STAGING_SHAPE,
    staging_dirs_made,
)


def occupy(world: MemoryPublication, squad_id: str) -> dict[str, bytes | None]:
    """Put a published squad of someone else at ``squad_id``; return its tree."""
    world.fs.add_file(f"{SQUAD_ROOT}/{squad_id}/squad.json", b'{"someone": "else"}\n', 0o600)
    world.fs.add_file(f"{SQUAD_ROOT}/{squad_id}/spec/spec.v1.json", b"their spec\n", 0o400)
    return world.fs.tree(f"{SQUAD_ROOT}/{squad_id}")


def test_the_squad_id_is_make_task_id_of_the_goal(world: MemoryPublication) -> None:
    published = world.publish(spec_document(goal="Ship the Café  feature, v2!"))
    assert published.squad.id == "ship-the-caf-feature-v2"
    assert published.squad_dir == f"{SQUAD_ROOT}/ship-the-caf-feature-v2"


def test_a_long_goal_gives_an_id_of_at_most_forty_characters(world: MemoryPublication) -> None:
    published = world.publish(spec_document(goal="word " * 30))
    assert published.squad.id == ("word-" * 8).rstrip("-")
    assert len(published.squad.id) <= 40


@pytest.mark.parametrize(
    "goal",
    [
        "東京",
        "!!!",
        "🙂 🙂",
        "---",
        # Red-team issue 11, finding 6: a goal naming a Windows device never becomes the id.
        "con",
        "NUL",
        "Lpt1",
        "com9",
    ],
)
def test_a_goal_without_a_path_safe_slug_gives_squad_and_twelve_hex_of_the_spec_hash(
    world: MemoryPublication, goal: str
) -> None:
    _, data = world.write_spec(spec_document(goal=goal))
    published = world.create(data)
    assert published.squad.id == f"squad-{sha(data)[:12]}"
    assert f"{SQUAD_ROOT}/{goal.lower()}" not in world.fs.nodes


def test_an_existing_id_gets_a_unique_suffix_chosen_before_staging(
    world: MemoryPublication,
) -> None:
    theirs = occupy(world, "ship-a-tested-feature")
    published = world.publish(spec_document())
    suffix = base36(int(CLOCK_START.timestamp() * 1000))
    assert published.squad.id == f"ship-a-tested-feature-{suffix}"
    # the staging directory already carried the final id, and the rename met no collision
    [staging] = staging_dirs_made(world)
    shape = STAGING_SHAPE.match(staging.path.rsplit("/", 1)[-1])
    assert shape is not None
    assert shape["id"] == published.squad.id
    assert len(world.fs.calls_of("rename_no_replace")) == 1
    assert world.fs.tree(f"{SQUAD_ROOT}/ship-a-tested-feature") == theirs


@pytest.mark.parametrize("reserved", ["agents", "knowledge"])
def test_a_goal_naming_a_reserved_root_entry_never_becomes_that_squad_id(
    world: MemoryPublication, reserved: str
) -> None:
    published = world.publish(spec_document(goal=reserved))
    assert published.squad.id != reserved
    assert published.squad.id.startswith(f"{reserved}-")
    assert f"{SQUAD_ROOT}/{reserved}" not in world.fs.nodes


def test_a_second_create_of_the_same_spec_gets_a_second_squad(world: MemoryPublication) -> None:
    first = world.publish(spec_document())
    second = world.create(world.fs.read(f"{world.cwd}/spec.json"))
    assert first.squad.id != second.squad.id
    assert [s.id for s in list_squads(world.fs, SQUAD_ROOT, world.codec)] == sorted(
        [first.squad.id, second.squad.id]
    )
