"""A squad root on the real file system with a fake child runtime, for scheduler tests."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from adapters.agent_files import FileAgentDirectory
from adapters.fs_posix import PosixFileSystem
from adapters.lock_fasteners import FastenersLockFactory
from adapters.store_files import FileStore
from application.attestation_check import AttestationAuditor
from application.child.environment import classify_environment
from application.child.role import child_role_for
from application.create_squad import PublishedSquad
from application.ports import PiEvents
from application.scheduler import Notice, Scheduler
from domain.squad.model import Task
from tests.fakes.child_runtime import FakeChildRuntime
from tests.fakes.clock import FakeClock, SequentialIds
from tests.fakes.pi_harness import FakePiChild, read
from tests.squads import child_environment, publish


@attrs.define
class RuntimeWorld:
    base: Path
    spec: bytes
    fs: PosixFileSystem = attrs.field(factory=PosixFileSystem)
    locks: FastenersLockFactory = attrs.field(factory=FastenersLockFactory)
    clock: FakeClock = attrs.field(factory=FakeClock)
    ids: SequentialIds = attrs.field(factory=SequentialIds)
    runtime: FakeChildRuntime = attrs.field(factory=FakeChildRuntime)
    notices: list[Notice] = attrs.field(factory=list)
    published: PublishedSquad | None = None

    @property
    def root(self) -> str:
        return str(self.base / "root")

    @property
    def cwd(self) -> str:
        return str(self.base / "project")

    def publish(self) -> PublishedSquad:
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
        return AttestationAuditor(fs=self.fs, locks=self.locks, clock=self.clock, store=self.store)

    def scheduler(self) -> Scheduler:
        return self.scheduler_for(self.squad_id)

    def scheduler_for(self, squad_id: str) -> Scheduler:
        return Scheduler(
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

    def attest(self, task_id: str) -> None:
        """Read every chunk as a real child would: through the child role and its guard."""
        assert self.published is not None
        environ = child_environment(self.published, task_id)

        def make_role() -> PiEvents:
            return child_role_for(
                classify_environment(environ, "posix"),
                fs=self.fs,
                locks=self.locks,
                clock=self.clock,
            )

        child = FakePiChild(make_role)
        spec = self.published.squad.spec
        assert spec is not None
        child.assistant_message([read(i, f"{task_id}-{i}") for i in range(spec.chunk_count)])

    def attestation_path(self, task_id: str) -> Path:
        return Path(self.root) / self.squad_id / task_id / "spec-read-attestation.json"
