"""Shared fixtures of the scheduler, operation, review and mailbox tests.

``world`` is a published :data:`CHAIN_SPEC` squad, once on the in-memory store (``memory``: the
port fake over the in-memory file system) and once on the file store over the real file system
(``disk``); ``new_world`` publishes another world of the same kind (another spec, or a second
squad under the same root). A module that needs a different world defines its own ``world``.
``ops``, ``reviews`` and ``mail`` are the use cases wired over ``world`` as the CLI wires them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from application.squads.mailbox import Mailbox
from application.squads.operations import SquadOperations
from application.squads.review import ReviewRecorder
from tests.integration.ops_support import CHAIN_SPEC, mailbox, operations, recorder
from tests.runtime_world import RuntimeWorld, WorldKind, make_world

NewWorld = Callable[..., RuntimeWorld]


@pytest.fixture(params=["memory", "disk"])
def world_kind(request: pytest.FixtureRequest) -> WorldKind:
    kind: WorldKind = request.param
    return kind


@pytest.fixture
def new_world(world_kind: WorldKind, tmp_path: Path) -> NewWorld:
    def build(spec: bytes = CHAIN_SPEC, *, sibling_of: RuntimeWorld | None = None) -> RuntimeWorld:
        if sibling_of is not None:
            built = sibling_of.sibling(spec)
        else:
            built = make_world(world_kind, tmp_path, spec)
        built.publish()
        return built

    return build


@pytest.fixture
def world(new_world: NewWorld) -> RuntimeWorld:
    return new_world()


@pytest.fixture
def ops(world: RuntimeWorld) -> SquadOperations:
    return operations(world)


@pytest.fixture
def reviews(world: RuntimeWorld) -> ReviewRecorder:
    return recorder(world)


@pytest.fixture
def mail(world: RuntimeWorld) -> Mailbox:
    return mailbox(world)
