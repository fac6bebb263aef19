"""The scheduler confines children where the machine can, and says so on the squad."""

from __future__ import annotations

import pytest

from application.ports import IsolationSupport
from application.squads.scheduler import Scheduler
from domain.errors import ErrorCode, IsolationTooWeak, IsolationUnavailable
from domain.squad.model import TaskStatus
from tests.runtime_world import RuntimeWorld

LANDLOCK = IsolationSupport(mode="landlock", abi=7, reason=None)
NONE = IsolationSupport(mode="none", abi=None, reason="fake kernel without Landlock")
UNSCOPED = IsolationSupport(mode="landlock", abi=5, reason=None)
COVERED = IsolationSupport(mode="landlock", abi=5, reason=None, namespaces=True)


def make(world: RuntimeWorld, isolation: IsolationSupport, *, required: bool = False) -> Scheduler:
    return world.scheduler_for(world.squad_id, isolation=isolation, require_isolation=required)


def test_with_landlock_every_child_is_confined_to_its_ledger_and_the_project(
    world: RuntimeWorld,
) -> None:
    make(world, LANDLOCK).reconcile()
    (child,) = world.runtime.spawned
    confinement = child.request.confinement
    assert confinement is not None
    assert confinement.squad_root == world.root
    assert confinement.ledger_dir == f"{world.root}/{world.squad_id}/design"
    assert confinement.project_dir == world.cwd
    assert world.store.snapshot(world.squad_id).squad.isolation == "landlock"


def test_one_unconfined_child_marks_the_squad_none_for_good(world: RuntimeWorld) -> None:
    make(world, NONE).reconcile()
    (child,) = world.runtime.spawned
    assert child.request.confinement is None
    assert world.store.snapshot(world.squad_id).squad.isolation == "none"
    child.exit(1, "crash")
    confined = make(world, LANDLOCK)
    world.clock.advance(60)
    confined.reconcile()
    assert world.runtime.spawned[-1].request.confinement is not None
    assert world.store.snapshot(world.squad_id).squad.isolation == "none", "sticky"


@pytest.mark.parametrize(
    ("support", "refusal", "said"),
    [
        pytest.param(
            NONE,
            IsolationUnavailable,
            ("fake kernel without Landlock", "PI_SQUAD_REQUIRE_ISOLATION"),
            id="none-available",
        ),
        pytest.param(
            UNSCOPED,
            IsolationTooWeak,
            ("landlock(ABI 5, unscoped signals)", "apt-get install bubblewrap"),
            id="unscoped-landlock-without-namespaces",
        ),
    ],
)
def test_requiring_isolation_where_it_is_missing_or_too_weak_starts_no_child(
    world: RuntimeWorld,
    support: IsolationSupport,
    refusal: type[IsolationUnavailable | IsolationTooWeak],
    said: tuple[str, str],
) -> None:
    with pytest.raises(refusal) as refused:
        make(world, support, required=True).reconcile()
    assert refused.value.code is ErrorCode.ISOLATION_UNAVAILABLE
    for phrase in said:
        assert phrase in refused.value.message
    assert world.runtime.spawned == []
    assert world.task("design").status is TaskStatus.PENDING
    assert world.store.snapshot(world.squad_id).squad.isolation is None


def test_the_squad_records_the_layers_its_children_ran_under_and_keeps_the_weakest(
    world: RuntimeWorld,
) -> None:
    strongest = IsolationSupport(mode="landlock", abi=7, reason=None, namespaces=True)
    make(world, strongest).reconcile()
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.isolation_layers == "namespaces+landlock(ABI 7, scoped)"
    world.runtime.spawned[-1].exit(1, "crash")
    world.clock.advance(60)
    make(world, UNSCOPED).reconcile()
    assert len(world.runtime.spawned) == 2
    squad = world.store.snapshot(world.squad_id).squad
    assert (squad.isolation, squad.isolation_layers) == (
        "landlock",
        "landlock(ABI 5, unscoped signals)",
    )
    world.runtime.spawned[-1].exit(1, "crash")
    world.clock.advance(120)
    make(world, strongest).reconcile()
    assert len(world.runtime.spawned) == 3
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.isolation_layers == "landlock(ABI 5, unscoped signals)", "the weakest stays"


def test_requiring_isolation_accepts_unscoped_landlock_inside_namespaces(
    world: RuntimeWorld,
) -> None:
    make(world, COVERED, required=True).reconcile()
    (child,) = world.runtime.spawned
    assert child.request.confinement is not None
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.isolation_layers == "namespaces+landlock(ABI 5, unscoped signals)"
