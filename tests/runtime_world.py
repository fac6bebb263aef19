"""A squad root on the real file system with a fake child runtime, for scheduler tests."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import attrs

from adapters.agent_files import FileAgentDirectory
from adapters.lock_fasteners import FastenersLockFactory
from adapters.store_files import FileStore
from application.attestation_check import AttestationAuditor
from application.child.role import child_role_for
from application.create_squad import PublishedSquad
from application.ports import FileSystem, IsolationSupport, LockFactory, PiEvents
from application.scheduler import NO_ISOLATION, Notice, Scheduler
from domain.attestation import parse_rfc3339
from domain.attestation.grounding import DeliveryObserved, SpawnObserved
from domain.child_environment import ChildEnvironment
from domain.squad.model import SessionBinding, Task
from tests.fakes.child_runtime import FakeChild, FakeChildRuntime
from tests.fakes.clock import FakeClock, SequentialIds
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.pi_harness import FakePiChild, read
from tests.fakes.temp_dirs import RecordingTempDirs
from tests.host_fs import host_file_system
from tests.squads import child_environment, publish, reader_texts


@attrs.define
class RuntimeWorld:
    base: Path
    spec: bytes
    fs: FileSystem = attrs.field(factory=host_file_system)
    locks: LockFactory = attrs.field(factory=FastenersLockFactory)
    clock: FakeClock = attrs.field(factory=FakeClock)
    ids: SequentialIds = attrs.field(factory=SequentialIds)
    runtime: FakeChildRuntime = attrs.field(factory=FakeChildRuntime)
    temp_dirs: RecordingTempDirs = attrs.field(factory=RecordingTempDirs)
    notices: list[Notice] = attrs.field(factory=list)
    published: PublishedSquad | None = None

    @property
    def root(self) -> str:
        return str(self.base / "root")

    @property
    def cwd(self) -> str:
        return str(self.base / "project")

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
        return self.published

    @property
    def squad_id(self) -> str:
        assert self.published is not None
        return self.published.squad.id

    @property
    def store(self) -> FileStore:
        return FileStore(fs=self.fs, locks=self.locks, root=self.root)

    @property
    def auditor(self) -> AttestationAuditor:
        return AttestationAuditor(
            fs=self.fs, locks=self.locks, clock=self.clock, ids=self.ids, store=self.store
        )

    def scheduler(self) -> Scheduler:
        return self.scheduler_for(self.squad_id)

    def scheduler_for(
        self,
        squad_id: str,
        *,
        isolation: IsolationSupport = NO_ISOLATION,
        require_isolation: bool = False,
    ) -> Scheduler:
        return Scheduler(
            isolation=isolation,
            require_isolation=require_isolation,
            squad_id=squad_id,
            store=self.store,
            auditor=self.auditor,
            runtime=self.runtime,
            agents=FileAgentDirectory(self.root),
            clock=self.clock,
            ids=self.ids,
            notices=self.notices.append,
            backoff=(2.0, 10.0),
        )

    def task(self, task_id: str) -> Task:
        return self.store.snapshot(self.squad_id).tasks[task_id]

    def child_role(self, task_id: str) -> PiEvents:
        """The role a child of ``task_id`` runs, from the environment the scheduler gives it."""
        assert self.published is not None
        return child_role_for(
            ChildEnvironment.from_environ(child_environment(self.published, task_id), "posix"),
            fs=self.fs,
            locks=self.locks,
            clock=self.clock,
            ids=self.ids,
        )

    def attest(self, task_id: str, *, observed: bool = False) -> None:
        """Read every chunk as a real child would: through the child role and its guard.

        The parent observes the reads when the task has a live fake child (its stream carries
        them); ``observed=True`` instead records what a parent would have recorded watching a
        child of its own (for squads staged without a scheduler, as the operator views use)."""
        assert self.published is not None
        spawned_at = self.clock.now()
        child = FakePiChild(lambda: self.child_role(task_id))
        spec = self.published.squad.spec
        assert spec is not None
        ids = [f"{task_id}-{i}" for i in range(spec.chunk_count)]
        child.assistant_message([read(i, ids[i]) for i in range(spec.chunk_count)])
        # The parent sees the same reads on the live child's RPC stream (grounding).
        live = [c for c in self.runtime.for_task(task_id) if c.alive()]
        if live:
            self.stream_reads(live[-1], ids)
        elif observed:
            # Earlier partial reads of the same child count too: the spawn preceded them all.
            path = str(self.attestation_path(task_id))
            record = json.loads(self.fs.read_small(path, 1 << 24))
            first = min(parse_rfc3339(c["deliveredAt"]) for c in record["chunks"])
            self.record_parent_observations(task_id, ids, spawned_at=min(spawned_at, first))

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

    def attestation_path(self, task_id: str) -> Path:
        return Path(self.root) / self.squad_id / task_id / "spec-read-attestation.json"

    def task_record(self, task_id: str) -> Path:
        return Path(self.root) / self.squad_id / ".records" / task_id / "task.json"
