"""A squad root's store and files, reached through one ``FileSystem``: the half of
:class:`tests.runtime_world.RuntimeWorld` that reads and writes what a squad holds, so that one
test's checks serve the in-memory and the on-disk kinds alike."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Literal

import attrs

from adapters.store.files import FileStore
from adapters.store.lock import FastenersLockFactory
from adapters.store.records import encode_message
from application.ports import FileSystem, LockFactory, Store
from application.squads.create_squad import PublishedSquad
from domain.squad.layout import SquadLayout
from domain.squad.model import Task
from tests.fakes.clock import FakeClock, SequentialIds
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.store import InMemoryStore
from tests.host_fs import host_file_system


@attrs.define
class WorldFiles:
    """A squad root under ``base`` (``root``) beside its project (``cwd``), its store (the file
    store, or the in-memory one of a ``memory`` world) and the file helpers tests check with."""

    base: Path
    spec: bytes
    fs: FileSystem = attrs.field(factory=host_file_system)
    locks: LockFactory = attrs.field(factory=FastenersLockFactory)
    clock: FakeClock = attrs.field(factory=FakeClock)
    ids: SequentialIds = attrs.field(factory=SequentialIds)
    published: PublishedSquad | None = None
    store_kind: Literal["file", "memory"] = "file"
    _memory_store: InMemoryStore | None = attrs.field(default=None, init=False)

    @property
    def root(self) -> str:
        return str(self.base / "root")

    @property
    def cwd(self) -> str:
        return str(self.base / "project")

    @property
    def squad_id(self) -> str:
        assert self.published is not None
        return self.published.squad.id

    @property
    def memory_store(self) -> InMemoryStore:
        assert self.store_kind == "memory", "only a memory world has an in-memory store"
        if self._memory_store is None:
            self._memory_store = InMemoryStore(fs=self.fs, root=self.root, locks=self.locks)
        return self._memory_store

    @property
    def store(self) -> Store:
        if self.store_kind == "memory":
            return self.memory_store
        return FileStore(fs=self.fs, locks=self.locks, root=self.root)

    def layout(self, squad_id: str | None = None) -> SquadLayout:
        return SquadLayout(self.root, squad_id or self.squad_id, self.fs.flavour)

    def task(self, task_id: str) -> Task:
        return self.store.snapshot(self.squad_id).tasks[task_id]

    def session_of(self, task_id: str, name: str | None = None) -> str:
        """A session file of the task as Pi names it: directly in its session directory."""
        return f"{self.layout().session_dir(task_id)}/{name or task_id}.jsonl"

    def write_session(self, session_file: str) -> None:
        """What Pi leaves of a session a child reports: its file, in a plain directory of the
        squad root (anything else is the test's own attack, written by the test if at all)."""
        directory = os.path.dirname(session_file)
        plain = session_file.startswith(f"{self.root}/") and os.path.normpath(session_file)
        if plain != session_file or self.fs.exists(session_file):
            return
        if self.fs.is_dir(directory) or not self.fs.exists(directory):
            self.make_dirs(directory)
            self.write_file(session_file, b'{"type":"session"}\n')

    def ledger_file(self, task_id: str, name: str = "spec-read-attestation.json") -> str:
        return f"{self.layout().ledger_dir(task_id)}/{name}"

    def read_file(self, path: str) -> bytes:
        return self.fs.read_small(path, 1 << 24)

    def write_file(self, path: str, data: bytes) -> None:
        """Overwrite ``path`` in place as an outside writer would, read-only or not."""
        if isinstance(self.fs, InMemoryFileSystem):
            self.fs.add_file(path, data)
            return
        if os.path.exists(path):
            os.chmod(path, 0o600)
        Path(path).write_bytes(data)

    def remove_file(self, path: str) -> None:
        self.fs.remove_file(path)

    def make_dirs(self, path: str) -> None:
        if isinstance(self.fs, InMemoryFileSystem):
            self.fs.add_dir(path)
        else:
            os.makedirs(path, exist_ok=True)

    def exists(self, path: str) -> bool:
        return self.fs.exists(path)

    def list_dir(self, path: str, pattern: str = "*") -> list[str]:
        return sorted(n for n in self.fs.list_dir(path) if fnmatch.fnmatchcase(n, pattern))

    def link_dir_elsewhere(self, directory: str, elsewhere: str) -> None:
        """``directory`` moved into ``elsewhere`` and replaced by a symbolic link to it."""
        moved = f"{elsewhere}/{os.path.basename(directory)}"
        self.make_dirs(elsewhere)
        if isinstance(self.fs, InMemoryFileSystem):
            self.fs.rename_no_replace(directory, moved)
            self.fs.add_symlink(directory, moved)
        else:
            os.rename(directory, moved)
            os.symlink(moved, directory, target_is_directory=True)

    def squad_state(self, squad_id: str | None = None) -> dict[str, object]:
        """Every file of a squad (lock files aside) and, in a memory world, every record in the
        store: for "not one byte changed" comparisons."""
        layout = self.layout(squad_id)
        state: dict[str, object] = {}

        def walk(directory: str, prefix: str) -> None:
            for name in self.fs.list_dir(directory):
                path = f"{directory}/{name}"
                if self.fs.is_dir(path):
                    walk(path, f"{prefix}{name}/")
                elif not name.endswith(".lock"):
                    state[prefix + name] = self.read_file(path)

        walk(layout.squad_dir, "")
        if self.store_kind == "memory":
            state["<store>"] = self.memory_store.records(layout.squad_id)
        return state

    def history_lines(self, task_id: str) -> list[str]:
        """The task's durable message history, one JSON line per appended message."""
        if self.store_kind == "memory":
            history = self.memory_store.history(self.squad_id, task_id)
            return [encode_message(m).decode().rstrip("\n") for m in history]
        data = self.read_file(self.layout().messages_file(task_id))
        return [line for line in data.decode().splitlines() if line.strip()]

    def attestation_path(self, task_id: str) -> Path:
        return Path(self.root) / self.squad_id / task_id / "spec-read-attestation.json"

    def task_record(self, task_id: str) -> Path:
        return Path(self.root) / self.squad_id / ".records" / task_id / "task.json"
