"""Scheduler steps that the scheduler, operation, mailbox and runtime CLI tests open with (the
first pass that spawns the runnable tasks' children, a child reporting its session file, a failed
squad), and the session a respawned child continues."""

from __future__ import annotations

from application.ports import ResumeSession
from application.squads.scheduler import Scheduler
from domain.squad.model import SquadStatus
from tests.fakes.child_runtime import FakeChild
from tests.integration.ops_support import fail_task, squad_status
from tests.runtime_world import RuntimeWorld


def started(world: RuntimeWorld) -> Scheduler:
    """The world's scheduler after its first pass: every runnable task has a live child."""
    scheduler = world.scheduler()
    scheduler.reconcile()
    return scheduler


def bound_child(world: RuntimeWorld, scheduler: Scheduler, task_id: str) -> FakeChild:
    """The task's latest child once it reported ``<task_id>.jsonl`` in the task's own session
    directory as its session file and the scheduler stored that binding."""
    child = world.runtime.latest(task_id)
    child.bind(world.session_of(task_id))
    scheduler.pump()
    return child


def failed_squad(world: RuntimeWorld) -> Scheduler:
    """The world's scheduler once the first task, design, failed past its retries: the squad is
    failed."""
    scheduler = started(world)
    fail_task(world, scheduler, "design")
    assert squad_status(world) is SquadStatus.FAILED
    return scheduler


def resumed_session_file(child: FakeChild) -> str:
    """The session file ``child`` continues; it must not have been given a new session."""
    session = child.request.session
    assert isinstance(session, ResumeSession)
    return session.session_file
