"""Shared setup for the operation, review, mailbox and runtime CLI tests: a real squad root, a
fake child runtime, and the use cases wired as the CLI wires them."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from adapters.agent_files import FileAgentDirectory
from adapters.store_json import JsonSquadCodec
from application.mailbox import Mailbox
from application.operations import SquadOperations
from application.review import ReviewRecorder
from application.scheduler import Scheduler
from application.status import SquadStatusReader
from domain.spec.model import SquadConfig
from domain.squad.model import Squad, SquadStatus, Task, TaskStatus
from tests.builders import encode, spec_document, task
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


def published(base: Path, spec: bytes = CHAIN_SPEC) -> RuntimeWorld:
    world = RuntimeWorld(base=base, spec=spec)
    world.publish()
    return world


def operations(world: RuntimeWorld) -> SquadOperations:
    return SquadOperations(
        store=world.store,
        auditor=world.auditor,
        agents=FileAgentDirectory(world.root),
        clock=world.clock,
        ids=world.ids,
    )


def recorder(world: RuntimeWorld) -> ReviewRecorder:
    return ReviewRecorder(
        store=world.store, auditor=world.auditor, clock=world.clock, ids=world.ids
    )


def mailbox(world: RuntimeWorld) -> Mailbox:
    return Mailbox(store=world.store, clock=world.clock, ids=world.ids)


def status_reader(world: RuntimeWorld) -> SquadStatusReader:
    return SquadStatusReader(store=world.store, auditor=world.auditor, clock=world.clock)


def finish(
    world: RuntimeWorld, scheduler: Scheduler, task_id: str, report: str = PASS_REPORT
) -> None:
    """The task's live child reads the whole spec, reports, settles; the parent handles it."""
    world.attest(task_id)
    child = world.runtime.latest(task_id)
    child.say(report)
    child.settle()
    scheduler.pump()


def run_to_review(world: RuntimeWorld, order: tuple[str, ...] | None = None) -> Scheduler:
    scheduler = world.scheduler()
    scheduler.reconcile()
    for task_id in order or ("design", "build", "docs", "qa"):
        finish(world, scheduler, task_id)
    assert world.store.snapshot(world.squad_id).squad.status is SquadStatus.REVIEW
    return scheduler


def squad_files(world: RuntimeWorld, squad_id: str | None = None) -> dict[str, bytes]:
    """Every file of a squad (lock files aside), for byte-for-byte before/after comparisons."""
    root = Path(world.root) / (squad_id or world.squad_id)
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.name.endswith(".lock")
    }


def squad_status(world: RuntimeWorld, squad_id: str | None = None) -> SquadStatus:
    return world.store.snapshot(squad_id or world.squad_id).squad.status


def statuses(world: RuntimeWorld) -> dict[str, TaskStatus]:
    return {k: t.status for k, t in world.store.snapshot(world.squad_id).tasks.items()}


def publish_legacy(world: RuntimeWorld, squad_id: str = "legacy-squad") -> str:
    """An inline (legacy) squad written as upstream lays it out: no spec, no attestation."""
    created = datetime(2026, 12, 2, 11, 0, tzinfo=UTC)
    os.makedirs(world.cwd, exist_ok=True)
    squad = Squad(
        id=squad_id,
        goal="Legacy inline goal",
        status=SquadStatus.RUNNING,
        created=created,
        cwd=world.cwd,
        config=SquadConfig(max_concurrency=2, auto_unblock=True, max_retries=2),
        task_ids=("api", "ui"),
    )
    tasks = [
        Task(
            id="api",
            title="Build the API",
            description="Do it and run the tests.",
            agent="backend",
            status=TaskStatus.PENDING,
            depends=(),
            created=created,
        ),
        Task(
            id="ui",
            title="Build the UI",
            description="Do it and run the tests.",
            agent="backend",
            status=TaskStatus.BLOCKED,
            depends=("api",),
            created=created,
        ),
    ]
    codec = JsonSquadCodec()
    squad_dir = Path(world.root) / squad_id
    squad_dir.mkdir(parents=True)
    (squad_dir / "squad.json").write_bytes(codec.encode_squad(squad))
    for item in tasks:
        (squad_dir / item.id).mkdir()
        (squad_dir / ".records" / item.id).mkdir(parents=True)
        (squad_dir / ".records" / item.id / "task.json").write_bytes(codec.encode_task(item))
    return squad_id


def fail_task(world: RuntimeWorld, scheduler: Scheduler, task_id: str) -> None:
    """Unexpected exits until the retry budget (two retries in ``RuntimeWorld``) is spent."""
    for delay in (2.5, 11.0, None):
        world.runtime.latest(task_id).exit(1, "segfault")
        scheduler.pump()
        if delay is not None:
            world.clock.advance(delay)
            scheduler.reconcile()
    assert world.task(task_id).status is TaskStatus.FAILED
