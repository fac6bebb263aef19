"""A squad root with a fake child runtime, for scheduler and operation tests.

Three kinds (:func:`make_world`): ``disk``, the file store on the real file system with real
locks; ``memory``, the in-memory store (:class:`tests.fakes.store.InMemoryStore`) with the ledger
directories and canonical spec in the in-memory file system and fake locks; ``memory-fs``, the
file store itself over the in-memory file system. Its file helpers
(:class:`tests.world_files.WorldFiles`) reach files through the world's ``FileSystem`` so that
one test runs on every kind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal

import attrs
from dependency_injector import providers

from adapters.store.files import FileStore
from adapters.store.json_records import JsonSquadCodec
from application.attestation_check import AttestationAuditor
from application.ports import IsolationSupport, PiEvents
from application.spec_reads import AttestationCheck
from application.squads.create_squad import PublishedSquad
from application.squads.scheduler import NO_ISOLATION, Notice, Scheduler
from domain.attestation import parse_rfc3339
from domain.attestation.grounding import DeliveryObserved, SpawnObserved
from domain.squad.advisor import AdvisorSettings
from domain.squad.model import SessionBinding, Squad, Task
from domain.squad.monitor import MonitorPolicy
from entrypoints.bridge_container import BridgeContainer
from entrypoints.container import CliContainer, UseCases
from tests.fakes.child_runtime import FakeChild, FakeChildRuntime
from tests.fakes.clock import FakeClock, SequentialIds
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.locks import FakeLockFactory
from tests.fakes.pi_harness import FakePiChild, read
from tests.fakes.temp_dirs import RecordingTempDirs
from tests.squads import child_environment, publish, reader_texts
from tests.support.containers import override_system
from tests.world_files import WorldFiles


@attrs.define
class RuntimeWorld(WorldFiles):
    """A published squad's root (:class:`tests.world_files.WorldFiles`) with a fake child
    runtime, the production container over the world's fakes, and children that read."""

    runtime: FakeChildRuntime = attrs.field(factory=FakeChildRuntime)
    temp_dirs: RecordingTempDirs = attrs.field(factory=RecordingTempDirs)
    notices: list[Notice] = attrs.field(factory=list)

    def __attrs_post_init__(self) -> None:
        if self.runtime.on_bind is None:
            self.runtime.on_bind = self.write_session

    def publish(self) -> PublishedSquad:
        if isinstance(self.fs, InMemoryFileSystem):
            self.fs.add_dir(self.root)
            self.fs.add_file(f"{self.cwd}/squad-spec.json", self.spec)
        else:
            os.makedirs(self.cwd, exist_ok=True)
            (Path(self.cwd) / "squad-spec.json").write_bytes(self.spec)
        self.published = publish(
            self.fs, self.root, self.spec, cwd=self.cwd, locks=self.locks, clock=self.clock
        )
        if self.store_kind == "memory":
            self._adopt(self.published.squad.id)
        return self.published

    def _adopt(self, squad_id: str) -> None:
        """Move a squad's parent-owned records, as published, into the in-memory store: from
        then on they live there alone (the ledger directories and spec stay in the fs)."""
        written = FileStore(fs=self.fs, locks=self.locks, root=self.root).snapshot(squad_id)
        layout = self.layout(squad_id)
        self.fs.remove_file(layout.squad_file)
        self.fs.remove_tree(layout.records_root)
        self.memory_store.seed(written.squad, written.tasks.values())

    def seed_squad(self, squad: Squad, tasks: Iterable[Task]) -> str:
        """A squad written straight into the store, as upstream lays an inline squad out."""
        if self.store_kind == "memory":
            self.memory_store.seed(squad, tasks)
            return squad.id
        codec = JsonSquadCodec()
        layout = self.layout(squad.id)
        self.make_dirs(layout.squad_dir)
        self.fs.write_atomic(layout.squad_file, codec.encode_squad(squad))
        for item in tasks:
            self.make_dirs(layout.ledger_dir(item.id))
            self.make_dirs(layout.records_dir(item.id))
            self.fs.write_atomic(layout.task_file(item.id), codec.encode_task(item))
        return squad.id

    def sibling(self, spec: bytes) -> RuntimeWorld:
        """An unpublished world for another squad under the same root, sharing this world's
        file system, locks, store, clock and ids (its own child runtime and notices)."""
        other = attrs.evolve(
            self,
            spec=spec,
            runtime=FakeChildRuntime(),
            temp_dirs=RecordingTempDirs(),
            notices=[],
            published=None,
        )
        other._memory_store = self._memory_store
        return other

    def container(self) -> CliContainer:
        """The production composition root with this world's fakes and paths in place of the
        real adapters: tests obtain use cases from it, never by wiring them by hand."""
        container = CliContainer()
        override_system(container, {"PI_SQUAD_ROOT": self.root}, self)
        container.temp_dirs.override(providers.Object(self.temp_dirs))
        container.store.override(providers.Object(self.store))
        return container

    def use_cases(self) -> UseCases:
        """The use cases of :meth:`container`, typed."""
        return self.container().use_cases()

    @property
    def auditor(self) -> AttestationAuditor:
        return self.use_cases().auditor()

    def attestation(self, task_id: str) -> AttestationCheck:
        """What the auditor finds of ``task_id``'s attestation in the squad as stored now."""
        snapshot = self.store.snapshot(self.squad_id)
        return self.auditor.validate_task_attestation(snapshot.squad, snapshot.tasks[task_id])

    def scheduler(self) -> Scheduler:
        return self.scheduler_for(self.squad_id)

    def scheduler_for(
        self,
        squad_id: str,
        *,
        isolation: IsolationSupport = NO_ISOLATION,
        require_isolation: bool = False,
        monitor_policy: MonitorPolicy | None = None,
        advisor: AdvisorSettings | None = None,
    ) -> Scheduler:
        policy: dict[str, object] = {}
        if monitor_policy is not None:
            policy["monitor_policy"] = monitor_policy
        if advisor is not None:  # else the environment's (none in these worlds)
            policy["advisor"] = advisor
        return self.use_cases().scheduler(
            squad_id=squad_id,
            runtime=self.runtime,
            notices=self.notices.append,
            backoff=(2.0, 10.0),
            isolation=isolation,
            require_isolation=require_isolation,
            **policy,
        )

    def child_role(self, task_id: str) -> PiEvents:
        """The role a child of ``task_id`` runs, from the environment the scheduler gives it:
        the child bridge's container over this world's adapters."""
        assert self.published is not None
        bridge = BridgeContainer()
        override_system(bridge, child_environment(self.published, task_id), self)
        return bridge.child_events(bridge.process_role())

    def attest(self, task_id: str, *, observed: bool = False) -> None:
        """Read every chunk as a real child would: through the child role and its guard.

        The parent observes the reads when the task has a live fake child (its stream carries
        them); ``observed=True`` instead records what a parent would have recorded watching a
        child of its own (for squads staged without a scheduler, as the operator views use)."""
        assert self.published is not None
        spawned_at = self.clock.now()
        spec = self.published.squad.spec
        assert spec is not None
        ids = self.child_reads(task_id, range(spec.chunk_count))
        # The parent sees the same reads on the live child's RPC stream (grounding).
        live = [c for c in self.runtime.for_task(task_id) if c.alive()]
        if live:
            self.stream_reads(live[-1], ids)
        elif observed:
            # Earlier partial reads of the same child count too: the spawn preceded them all.
            path = self.ledger_file(task_id)
            record = json.loads(self.fs.read_small(path, 1 << 24))
            first = min(parse_rfc3339(c["deliveredAt"]) for c in record["chunks"])
            self.record_parent_observations(task_id, ids, spawned_at=min(spawned_at, first))

    def child_reads(self, task_id: str, indices: Iterable[int]) -> list[str]:
        """Deliver chunks ``indices`` to the task through the real child role and its guard,
        as a child would (the parent sees nothing of it); the tool call ids, ``<task>-<i>``."""
        calls = [(i, f"{task_id}-{i}") for i in indices]
        FakePiChild(lambda: self.child_role(task_id)).assistant_message(
            [read(i, call_id) for i, call_id in calls]
        )
        return [call_id for _, call_id in calls]

    def record_parent_observations(
        self,
        task_id: str,
        tool_call_ids: Sequence[str],
        *,
        spawned_at: datetime,
        indices: Sequence[int] | None = None,
    ) -> None:
        """Exactly the records a scheduler makes watching a child read every chunk."""
        assert self.published is not None
        spec = self.published.squad.spec
        assert spec is not None
        with self.store.transaction(self.squad_id) as tx:
            task = tx.tasks[task_id]
            if task.session is None:
                session_file = f"{self.root}/{self.squad_id}/{task_id}/session/s.jsonl"
                self.write_session(session_file)
                tx.put_task(attrs.evolve(task, session=SessionBinding(session_file)))
                task = tx.tasks[task_id]
        assert task.session is not None
        table = self.published.validated.chunks if self.published.validated else None
        assert table is not None
        self.store.record_observation(
            self.squad_id, task_id, SpawnObserved(at=spawned_at, child_id="observed-child")
        )
        for index, call_id in zip(indices or range(len(tool_call_ids)), tool_call_ids, strict=True):
            self.store.record_observation(
                self.squad_id,
                task_id,
                DeliveryObserved(
                    at=self.clock.now(),
                    child_id="observed-child",
                    session_file=task.session.file,
                    tool_call_id=call_id,
                    index=index,
                    chunk_sha256=table.chunk(index).sha256,
                ),
            )

    def stream_reads(self, child: FakeChild, tool_call_ids: Sequence[str]) -> None:
        """The parent-visible side of a full read: session, calls and verified results."""
        assert self.published is not None
        if child.bound_session is None:
            # A resumed child reports the session it was resumed on; a new one a fresh file.
            bound = self.store.snapshot(self.squad_id).tasks[child.task_id].session
            default = f"{self.root}/{self.squad_id}/{child.task_id}/session/s.jsonl"
            child.bind(default if bound is None else bound.file)
        child.read_chunks(
            [
                (call_id, {"index": i}, reader_texts(self.published, child.task_id, i))
                for i, call_id in enumerate(tool_call_ids)
            ]
        )


WorldKind = Literal["memory", "memory-fs", "disk"]


def make_world(
    kind: WorldKind,
    base: Path,
    spec: bytes,
    *,
    clock: FakeClock | None = None,
    ids: SequentialIds | None = None,
) -> RuntimeWorld:
    """An unpublished world of ``kind`` under ``base`` (a real directory: agent files of the
    project are read from the real disk in every kind)."""
    world = RuntimeWorld(base=base, spec=spec)
    if kind != "disk":
        world.fs = InMemoryFileSystem()
        world.locks = FakeLockFactory()
        world.store_kind = "memory" if kind == "memory" else "file"
    world.clock = clock or world.clock
    world.ids = ids or world.ids
    return world
