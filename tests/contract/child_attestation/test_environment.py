"""Contract §11 child rows: the environment a child starts with decides its role, and a
missing or misplaced piece fails closed."""

from __future__ import annotations

import os

import pytest

from application.child.role import SpecChildRole
from domain.child_environment import ChildEnvironment
from tests.contract.child_attestation.world import COUNT, SPEC, TABLE, ChildWorld, read_all
from tests.fakes.pi_harness import tool
from tests.squads import child_environment


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
