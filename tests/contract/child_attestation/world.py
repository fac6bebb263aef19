"""The child world the child-side contract rows run in: a published squad on a fake or a
real file system, the child roles its Pi processes run, and what a test reads back from the task
directory."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from application.child.role import child_role_for
from application.ledger_files import ATTESTATION_FILE, STATE_FILE
from application.ports import FileSystem, LockFactory, PiEvents
from application.squads.create_squad import PublishedSquad
from domain.attestation import validate_attestation_bytes
from domain.attestation.binding import SpecBinding
from domain.child_environment import ChildEnvironment
from domain.chunks import ChunkTable
from tests.fakes.clock import FakeClock, SequentialIds
from tests.fakes.pi_harness import FakePiChild, read
from tests.squads import child_environment, multi_chunk_spec

SPEC = multi_chunk_spec(4)
TABLE = ChunkTable.of(SPEC)
COUNT = TABLE.chunk_count
SCHEMAS_DIR = str(Path(__file__).resolve().parents[3] / "domain" / "spec" / "schemas")


@attrs.define
class ChildWorld:
    fs: FileSystem
    locks: LockFactory
    clock: FakeClock
    published: PublishedSquad
    task_id: str = "build"
    ids: SequentialIds = attrs.field(factory=SequentialIds)
    # pyfakefs: its children run sibling executions one at a time (see ``FakePiChild``).
    emulated: bool = False

    @property
    def task_dir(self) -> str:
        return os.path.join(self.published.squad_dir, self.task_id)

    def path(self, name: str) -> str:
        return os.path.join(self.task_dir, name)

    def make_role(self, task_id: str | None = None, **overrides: str) -> PiEvents:
        environ = {**child_environment(self.published, task_id or self.task_id), **overrides}
        return self.role_for(environ)

    def role_for(self, environ: Mapping[str, str]) -> PiEvents:
        """The child role a Pi process with ``environ`` runs, on this world's adapters."""
        return child_role_for(
            ChildEnvironment.from_environ(environ, "posix"),
            fs=self.fs,
            locks=self.locks,
            clock=self.clock,
            ids=self.ids,
        )

    def child(self, task_id: str | None = None) -> FakePiChild:
        return self.pi(lambda: self.make_role(task_id))

    def pi(self, make_role: Callable[[], PiEvents]) -> FakePiChild:
        return FakePiChild(make_role, serialise_executions=self.emulated)

    def attestation(self) -> dict[str, Any]:
        with open(self.path(ATTESTATION_FILE), "rb") as handle:
            value: dict[str, Any] = json.loads(handle.read())
        return value

    def attestation_valid(self) -> bool:
        with open(self.path(ATTESTATION_FILE), "rb") as handle:
            data = handle.read()
        binding = SpecBinding.of(TABLE, squad_id=self.published.squad.id, task_id=self.task_id)
        return validate_attestation_bytes(data, binding, TABLE).valid

    def canonical_path(self) -> str:
        spec = self.published.squad.spec
        assert spec is not None
        return spec.path

    # ---- what a test reads back or changes behind the child's back ---------------------------

    def recorded_indices(self) -> list[int]:
        state = json.loads(Path(self.path(STATE_FILE)).read_bytes())
        return [d["index"] for d in state["deliveries"]]

    def forged_progress(self) -> dict[str, Any]:
        """The task's progress record with its first delivery's hash forged."""
        state: dict[str, Any] = json.loads(Path(self.path(STATE_FILE)).read_bytes())
        state["deliveries"][0]["sha256"] = "f" * 64
        return state

    def temporaries(self) -> list[str]:
        return [name for name in os.listdir(self.task_dir) if ".tmp." in name]

    def flip_canonical_byte(self) -> None:
        canonical = self.canonical_path()
        os.chmod(canonical, 0o600)
        with open(canonical, "r+b") as handle:  # a second flip puts the pinned byte back
            handle.seek(10)
            original = handle.read(1)[0]
            handle.seek(10)
            handle.write(bytes([original ^ 1]))

    def changing_the_canonical_file(self) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """A tamper that changes no message but flips a canonical byte as it passes."""

        def tamper(message: dict[str, Any]) -> dict[str, Any]:
            self.flip_canonical_byte()
            return message

        return tamper

    # ---- one role for the task, kept across restarts -----------------------------------------

    def role_on(self, fs: FileSystem | None = None) -> PiEvents:
        """The task's child role on ``fs`` (this world's file system by default)."""
        return attrs.evolve(self, fs=fs or self.fs).make_role()

    def child_with_one_role(self, fs: FileSystem | None = None) -> FakePiChild:
        """A Pi child whose restarts keep the one role object (its ledger's memory included)."""
        role = self.role_on(fs)
        return self.pi(lambda: role)


def read_all(
    child: FakePiChild, order: list[int] | None = None, *, next_model_call: bool = True
) -> list[dict[str, Any]]:
    return child.assistant_message(
        [read(i) for i in (order or list(range(COUNT)))], next_model_call=next_model_call
    )
