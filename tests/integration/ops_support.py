"""Shared setup for the scheduler, operation, review, mailbox and runtime CLI tests: specs, a
squad root with a fake child runtime, the use cases wired as the CLI wires them, and the steps
and checks those tests share. Everything goes through the world's store and file system, so it
serves every world kind (tests/runtime_world.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import pytest

from application.squads.mailbox import Mailbox
from application.squads.operations import NewTask, SquadOperations
from application.squads.review import ReviewRecorder
from application.squads.scheduler import Scheduler
from application.squads.status import SquadStatusReader
from domain.errors import ErrorCode, PiSquadError
from domain.spec.model import SquadConfig
from domain.squad.model import SquadStatus, TaskStatus
from tests.builders import encode, spec_document, squad_record, task, task_record
from tests.fakes.child_runtime import FakeChild
from tests.runtime_world import RuntimeWorld

# design -> build, docs -> qa
CHAIN_SPEC = encode(
    spec_document(
        tasks=[
            task("design", agent="architect"),
            task("build", depends=["design"]),
            task("docs", agent="docs", depends=["design"]),
            task("qa", agent="qa", depends=["build", "docs"]),
        ],
        agents={
            name: {"model": None, "thinking": None}
            for name in ("architect", "backend", "docs", "qa")
        },
    )
)

# contract -> impl -> qa -> release (upstream behaviour 20)
LINE_SPEC = encode(
    spec_document(
        goal="Ship the release line.",
        tasks=[
            task("contract", agent="architect"),
            task("impl", depends=["contract"]),
            task("check", agent="backend", depends=["impl"]),
            task("release", agent="backend", depends=["check"]),
        ],
        agents={name: {"model": None, "thinking": None} for name in ("architect", "backend")},
        config={"maxConcurrency": 4, "autoUnblock": True, "maxRetries": 2},
    )
)

PASS_REPORT = "Done; tests pass. ## Verdict: PASS"

# Complete review evidence (squad_review).
EVIDENCE: dict[str, Any] = {
    "contract_checks": ["every task of the spec is implemented"],
    "diff_review": "read the whole diff",
    "verification_evidence": ["pytest: 12 passed"],
    "integration_evidence": "ran the CLI end to end",
}


class NewWorld(Protocol):
    """The ``new_world`` fixture (tests/integration/conftest.py): publish a world of the test's
    kind, or a second squad sharing ``sibling_of``'s root, store and clock."""

    def __call__(
        self, spec: bytes = CHAIN_SPEC, *, sibling_of: RuntimeWorld | None = None
    ) -> RuntimeWorld: ...


def published(base: Path, spec: bytes = CHAIN_SPEC) -> RuntimeWorld:
    world = RuntimeWorld(base=base, spec=spec)
    world.publish()
    return world


def operations(world: RuntimeWorld) -> SquadOperations:
    return world.use_cases().operations()


def recorder(world: RuntimeWorld) -> ReviewRecorder:
    return world.use_cases().review_recorder()


def mailbox(world: RuntimeWorld) -> Mailbox:
    return world.use_cases().mailbox()


def status_reader(world: RuntimeWorld) -> SquadStatusReader:
    return world.use_cases().status_reader()


def settle(
    world: RuntimeWorld, scheduler: Scheduler, task_id: str, report: str = PASS_REPORT
) -> None:
    """The task's live child reports and settles (whatever it read); the parent handles it."""
    child = world.runtime.latest(task_id)
    child.say(report)
    child.settle()
    scheduler.pump()


def finish(
    world: RuntimeWorld, scheduler: Scheduler, task_id: str, report: str = PASS_REPORT
) -> None:
    """The task's live child reads the whole spec, reports, settles; the parent handles it."""
    world.attest(task_id)
    settle(world, scheduler, task_id, report)


def run_to_review(world: RuntimeWorld, order: tuple[str, ...] | None = None) -> Scheduler:
    scheduler = world.scheduler()
    scheduler.reconcile()
    for task_id in order or ("design", "build", "docs", "qa"):
        finish(world, scheduler, task_id)
    assert world.store.snapshot(world.squad_id).squad.status is SquadStatus.REVIEW
    return scheduler


def squad_files(world: RuntimeWorld, squad_id: str | None = None) -> dict[str, object]:
    """Every file of a squad (lock files aside) and its store records, for byte-for-byte
    before/after comparisons."""
    return world.squad_state(squad_id)


def refused(code: ErrorCode, call: Callable[[], Any]) -> str:
    """The operation is refused with ``code``; its message."""
    with pytest.raises(PiSquadError) as caught:
        call()
    assert caught.value.code is code, caught.value.message
    return caught.value.message


def unchanged(world: RuntimeWorld, code: ErrorCode, call: Callable[[], Any]) -> str:
    """Refused with ``code`` and not one byte of the squad changed."""
    before = squad_files(world)
    message = refused(code, call)
    assert squad_files(world) == before
    return message


def tamper(world: RuntimeWorld, task_id: str) -> None:
    """The task's attestation claims a chunk digest it never read."""
    path = world.ledger_file(task_id)
    document = json.loads(world.read_file(path))
    document["chunks"][0]["sha256"] = "0" * 64
    world.write_file(path, json.dumps(document).encode())


def touch_canonical(world: RuntimeWorld) -> None:
    """One byte of the squad's canonical spec changes in place."""
    spec = world.store.snapshot(world.squad_id).squad.spec
    assert spec is not None
    data = world.read_file(spec.path)
    world.write_file(spec.path, b" " + data[1:])


def squad_status(world: RuntimeWorld, squad_id: str | None = None) -> SquadStatus:
    return world.store.snapshot(squad_id or world.squad_id).squad.status


def statuses(world: RuntimeWorld) -> dict[str, TaskStatus]:
    return {k: t.status for k, t in world.store.snapshot(world.squad_id).tasks.items()}


def publish_legacy(world: RuntimeWorld, squad_id: str = "legacy-squad") -> str:
    """An inline (legacy) squad written as upstream lays it out: no spec, no attestation."""
    created = datetime(2026, 12, 2, 11, 0, tzinfo=UTC)
    os.makedirs(world.cwd, exist_ok=True)
    squad = squad_record(
        squad_id,
        goal="Legacy inline goal",
        created=created,
        cwd=world.cwd,
        config=SquadConfig(max_concurrency=2, auto_unblock=True, max_retries=2),
        task_ids=("api", "ui"),
    )
    common: dict[str, Any] = {"description": "Do it and run the tests.", "created": created}
    tasks = [
        task_record("api", title="Build the API", **common),
        task_record(
            "ui", title="Build the UI", status=TaskStatus.BLOCKED, depends=("api",), **common
        ),
    ]
    return world.seed_squad(squad, tasks)


def fail_task(world: RuntimeWorld, scheduler: Scheduler, task_id: str) -> None:
    """Unexpected exits until the retry budget (two retries in ``RuntimeWorld``) is spent."""
    for delay in (2.5, 11.0, None):
        world.runtime.latest(task_id).exit(1, "segfault")
        scheduler.pump()
        if delay is not None:
            world.clock.advance(delay)
            scheduler.reconcile()
    assert world.task(task_id).status is TaskStatus.FAILED


def refused_add_task(
    world: RuntimeWorld, ops: SquadOperations, code: ErrorCode, task_id: str, agent: str = "backend"
) -> str:
    """The message of an ``add_task`` of ``task_id`` refused with ``code``, the squad unchanged."""
    new = NewTask(id=task_id, title="t", agent=agent)
    return unchanged(world, code, lambda: ops.add_task(world.squad_id, new))


def assert_still_paused(world: RuntimeWorld) -> None:
    """The squad is still paused, and the scheduler's next pass spawns nothing."""
    assert squad_status(world) is SquadStatus.PAUSED
    world.scheduler().reconcile()
    assert world.runtime.spawned == []


def assert_running_again(world: RuntimeWorld, scheduler: Scheduler, live: list[str]) -> None:
    """The squad runs again, and the scheduler's next pass leaves exactly ``live`` running."""
    assert squad_status(world) is SquadStatus.RUNNING
    scheduler.reconcile()
    assert world.runtime.live_task_ids() == live


def send_late_events(world: RuntimeWorld, scheduler: Scheduler, child: FakeChild) -> None:
    """What a stopped child's process may still send: an attestation, a report, its settlement
    and a crash."""
    world.attest(child.task_id)
    child.say("late report")
    child.settle()
    child.exit(1, "late crash")
    scheduler.pump()
