"""``adapters.pi_rpc`` against a stand-in ``pi`` executable (tests/fakes/fake_pi_executable.py): a
confined child starts through the isolation with exactly its grants and a private agent
directory, or not at all."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from adapters.isolation.confinement import ConfinementRefused
from adapters.pi_rpc import PiRpcRuntime
from domain.errors import ErrorCode, IsolationUnavailable
from tests.fakes.isolation import FakeIsolation
from tests.integration.pi_rpc.support import FAKE, Recorder, World

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals and /proc")


def confined_runtime(world: World, isolation: FakeIsolation) -> PiRpcRuntime:
    return world.runtime(
        "settle",
        extra_env={"PI_CODING_AGENT_DIR": str(world.tmp / "agent")},
        isolation=isolation,
    )


def run_confined(world: World, isolation: FakeIsolation) -> Path:
    """A child confined to the world's cwd and a task ledger under ``squads/``, started through
    ``isolation`` and run until it exits; the ledger's path."""
    request, ledger = world.confined_request(world.tmp / "squads")
    _, recorder = world.spawn(confined_runtime(world, isolation), request)
    recorder.until_exit()
    return ledger


def test_a_confined_child_starts_through_the_isolation_with_exactly_its_grants(
    world: World,
) -> None:
    isolation = FakeIsolation()
    ledger = run_confined(world, isolation)
    (call,) = isolation.calls
    scratch = call.writable[2]
    # the user's agent directory is not among the grants: the child gets a private one
    assert call.writable == (str(ledger), str(world.cwd), scratch, "/dev/null")
    # the squad root is read-only in the child's namespace but for the ledger
    assert call.read_only == (os.path.realpath(world.tmp / "squads"),)
    assert Path(scratch).name.startswith("pi-squad-child-")
    assert Path(scratch).parent == world.prompts
    started = world.recorded()
    assert started["env"]["TMPDIR"] == scratch
    assert started["env"]["PI_CODING_AGENT_DIR"] == str(Path(scratch) / "agent")
    assert call.argv[:2] == (sys.executable, str(FAKE))
    assert not Path(scratch).exists(), "the private temporary directory goes with the child"


def test_a_confined_child_gets_a_private_agent_directory_without_code_from_the_users(
    world: World,
) -> None:
    user_agent = world.tmp / "agent"
    (user_agent / "extensions").mkdir(parents=True)
    (user_agent / "extensions" / "planted.ts").write_text("export default () => {}\n")
    (user_agent / "skills").mkdir()
    (user_agent / "bin").mkdir()
    (user_agent / "bin" / "rg").write_text("#!/bin/sh\n")
    (user_agent / "auth.json").write_text('{"anthropic": {"type": "api_key", "key": "k"}}')
    (user_agent / "models.json").write_text('{"providers": {}}')
    # The user trusts the child's project: a private copy would make the child's Pi honour the
    # project's .pi settings and code, which a sibling can write (issue 28, break 1).
    (user_agent / "trust.json").write_text(json.dumps({str(world.cwd): True}))
    elsewhere = world.tmp / "dotfiles-settings.json"
    elsewhere.write_text('{"defaultThinkingLevel": "low"}')
    (user_agent / "settings.json").symlink_to(elsewhere)
    seen: dict[str, object] = {}

    def look_inside(argv: tuple[str, ...], writable: tuple[str, ...]) -> None:
        private = Path(writable[2]) / "agent"
        seen["entries"] = sorted(path.name for path in private.iterdir())
        seen["auth"] = (private / "auth.json").read_text()
        seen["settings"] = (private / "settings.json").read_text()
        seen["settings_is_link"] = (private / "settings.json").is_symlink()
        seen["bin"] = os.readlink(private / "bin")

    run_confined(world, FakeIsolation(on_confine=look_inside))

    assert seen["entries"] == ["auth.json", "bin", "models.json", "settings.json"]
    assert seen["auth"] == (user_agent / "auth.json").read_text()
    assert seen["settings"] == elsewhere.read_text()
    assert seen["settings_is_link"] is False, "a copy, so the child cannot write through it"
    assert seen["bin"] == str((user_agent / "bin").resolve())
    assert sorted(p.name for p in user_agent.iterdir()) == [
        "auth.json", "bin", "extensions", "models.json", "settings.json", "skills", "trust.json",
    ], "the user's agent directory is read, never changed"  # fmt: skip


def test_a_confined_child_without_a_user_agent_directory_gets_an_empty_private_one(
    world: World,
) -> None:
    run_confined(world, FakeIsolation())
    assert not (world.tmp / "agent").exists(), "the user's agent directory is not created"
    assert world.recorded()["env"]["PI_CODING_AGENT_DIR"].endswith("/agent")


def test_a_confinement_whose_project_contains_the_squad_root_is_refused_before_start(
    world: World,
) -> None:
    isolation = FakeIsolation()
    # The project would grant the whole squad root.
    request, _ = world.confined_request(world.cwd / ".squads")
    with pytest.raises(ConfinementRefused) as refused:
        confined_runtime(world, isolation).spawn(request, Recorder())
    assert refused.value.code is ErrorCode.ISOLATION_UNSAFE
    assert "contains the squad root" in refused.value.message
    assert isolation.calls == []
    assert not world.record_path.exists(), "nothing was started"
    assert list(world.prompts.iterdir()) == [], "no prompt file or scratch directory left"


def test_a_confinement_without_isolation_is_refused(world: World) -> None:
    request, _ = world.confined_request(world.tmp / "squads")
    with pytest.raises(IsolationUnavailable):
        confined_runtime(world, FakeIsolation.none("fake kernel")).spawn(request, Recorder())
    assert not world.record_path.exists()
