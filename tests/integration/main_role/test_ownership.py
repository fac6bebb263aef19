"""Issue 13 item 3 on fakes: which main Pi session owns a squad (``Squad.session_file``, the
session that last started a driver for it), and what a new session does with the lost work of
its project: it drives again what it owns or what no session owns (made headless), lists what
another session owns with the command that takes it over, and leaves an attested flow's squad
(``flowId``) to its flow."""

from __future__ import annotations

import hashlib
from typing import Any

import attrs
import pytest

from application.main_role import MainRole
from application.ports import SessionIdentity, SessionNotification
from domain.squad.model import TaskStatus
from tests.integration.main_role.support import RecordingDrive, notices
from tests.integration.scheduler_steps import started
from tests.runtime_world import RuntimeWorld

MINE = "/home/u/.pi/agent/sessions/--project--/mine.jsonl"
THEIRS = "/home/u/.pi/agent/sessions/--project--/theirs.jsonl"


def owned_by(world: RuntimeWorld, owner: str | None, **changes: Any) -> None:
    """The world's squad as a session ``owner`` left it (``None``: made headless)."""
    with world.store.transaction(world.squad_id) as tx:
        tx.put_squad(attrs.evolve(tx.squad, session_file=owner, **changes))


def lost_its_driver(world: RuntimeWorld, left_by: str | None, flow_id: str | None = None) -> None:
    """The world's squad as session ``left_by`` left it (``None``: no session owns it): a driver
    spawned design, then died, and nobody holds the driver lock now."""
    owned_by(world, left_by, flow_id=flow_id)
    started(world)
    assert world.task("design").status is TaskStatus.IN_PROGRESS


def greet(role: MainRole, session_file: str | None = MINE) -> list[dict[str, Any]]:
    """A session named ``session_file`` starts; the notices it showed."""
    role.identify(SessionIdentity(session_file=session_file, session_id="sid"))
    emitted: list[SessionNotification] = []
    role.attach(emitted.append)
    return notices(emitted)


def owner(world: RuntimeWorld, squad_id: str | None = None) -> str | None:
    return world.store.snapshot(squad_id or world.squad_id).squad.session_file


def test_the_session_that_creates_a_squad_owns_it(
    role: MainRole, world: RuntimeWorld, drive: RecordingDrive
) -> None:
    greet(role)
    digest = hashlib.sha256(world.spec).hexdigest()
    role.execute_tool("call-1", "squad", {"specFile": "squad-spec.json", "specSha256": digest})
    (created,) = drive.driven
    assert created != world.squad_id
    assert owner(world, created) == MINE


def test_a_session_drives_again_the_lost_work_it_owns(
    role: MainRole, world: RuntimeWorld, drive: RecordingDrive
) -> None:
    lost_its_driver(world, left_by=MINE)
    (notice,) = greet(role)
    assert drive.driven == [world.squad_id]
    assert (
        f"{world.squad_id}: its driver died mid-run; this session drives it again"
        in (notice["text"])
    )


def test_a_headless_squad_is_driven_again_by_any_session_which_then_owns_it(
    role: MainRole, world: RuntimeWorld, drive: RecordingDrive
) -> None:
    assert owner(world) is None, "pi-squad create records no owner"
    lost_its_driver(world, left_by=None)
    greet(role)
    assert drive.driven == [world.squad_id]
    assert owner(world) == MINE


def test_another_sessions_lost_work_is_listed_with_the_take_over_command_not_driven(
    role: MainRole, world: RuntimeWorld, drive: RecordingDrive
) -> None:
    lost_its_driver(world, left_by=THEIRS)
    (notice,) = greet(role)
    assert drive.driven == [], "never taken from its session without being asked"
    squad_id = world.squad_id
    assert (
        f"- {squad_id}: its driver died mid-run in another Pi session (0/4 done); to take it "
        f"over: /squad resume {squad_id} (or from a terminal: pi-squad run --squad {squad_id})"
    ) in notice["text"]
    assert owner(world) == THEIRS

    role.command("squad", f"resume {squad_id}")
    assert drive.driven == [squad_id]
    assert owner(world) == MINE, "taken over: this session owns it now"


def test_a_session_without_a_session_file_claims_nothing_and_revives_only_headless_squads(
    role: MainRole, world: RuntimeWorld, drive: RecordingDrive
) -> None:
    lost_its_driver(world, left_by=THEIRS)
    (notice,) = greet(role, session_file=None)
    assert drive.driven == []
    assert "in another Pi session" in notice["text"]
    role.ensure_driver(world.squad_id)
    assert owner(world) == THEIRS, "pi --no-session has no file to record"


@pytest.mark.parametrize("recorded", [None, MINE, THEIRS])
def test_an_attested_flows_squad_is_never_revived_listed_or_claimed(
    role: MainRole, world: RuntimeWorld, drive: RecordingDrive, recorded: str | None
) -> None:
    lost_its_driver(world, left_by=recorded, flow_id="flow-7")
    assert greet(role) == []
    assert drive.driven == []
    assert owner(world) == recorded


def test_a_squad_another_process_drives_keeps_its_owner(
    role: MainRole, world: RuntimeWorld, drive: RecordingDrive
) -> None:
    owned_by(world, THEIRS)
    greet(role)
    with world.locks.try_lock(world.store.layout(world.squad_id).driver_lock) as taken:
        assert taken, "another driver holds the squad"
        role.ensure_driver(world.squad_id)  # e.g. squad_message: this driver will be SQUAD_BUSY
        assert owner(world) == THEIRS
    role.stop_driver(world.squad_id)
    role.ensure_driver(world.squad_id)
    assert owner(world) == MINE, "nobody drives it now: this session does, and owns it"
