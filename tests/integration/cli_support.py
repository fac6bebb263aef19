"""Running the real ``pi-squad`` command line in a subprocess, isolated in a temporary directory,
and looking at what it left in the squad root."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from adapters.fs.platform import native_file_system
from adapters.store.json_records import JsonSquadCodec
from application.list_squads import SquadListing, list_squads
from application.ports import FileSystem
from application.squads.create_squad import STAGING_LOCKS_DIR, create_squad
from entrypoints.container import CliContainer
from tests.builders import encode, sha

CLI = (sys.executable, "-m", "entrypoints.cli")
# The same command line with one injected file-system fault (its first argument).
FAULT_CLI = (sys.executable, "-m", "tests.support.fault_cli")
# Generous: a CLI run takes well under a second; the bound only turns a hang into a failure.
CLI_TIMEOUT_SECONDS = 60.0
_INHERITED_BLOCKLIST = ("PI_SQUAD_ROOT", "PI_CODING_AGENT_DIR")


@attrs.frozen
class Sandbox:
    """A temporary home, squad root and working directory for one CLI process."""

    base: Path

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def root(self) -> Path:
        return self.base / "squads"

    @property
    def cwd(self) -> Path:
        return self.base / "work"

    @classmethod
    def create(cls, base: Path) -> Sandbox:
        sandbox = cls(base)
        sandbox.home.mkdir(parents=True, exist_ok=True)
        sandbox.cwd.mkdir(parents=True, exist_ok=True)
        return sandbox

    def environment(self, *, root: str | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _INHERITED_BLOCKLIST}
        env.update(
            HOME=str(self.home),
            USERPROFILE=str(self.home),
            PI_SQUAD_ROOT=root if root is not None else str(self.root),
            PI_CODING_AGENT_DIR=str(self.home / ".pi" / "agent"),
            PYTHONDONTWRITEBYTECODE="1",
        )
        return env

    def write_spec(self, document: Any, name: str = "spec.json") -> SpecFile:
        return self.write_spec_bytes(encode(document), name)

    def write_spec_bytes(self, data: bytes, name: str = "spec.json") -> SpecFile:
        path = self.cwd / name
        path.write_bytes(data)
        return SpecFile(path=path, data=data, sha256=sha(data))


@attrs.frozen
class SpecFile:
    path: Path
    data: bytes
    sha256: str


@attrs.frozen
class CliRun:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        """The one JSON object stdout must consist of (one line, nothing else)."""
        lines = self.stdout.splitlines()
        assert len(lines) == 1, f"stdout is not one line: {self.stdout!r}"
        document = json.loads(lines[0])
        assert isinstance(document, dict), document
        return document

    def error_code(self) -> str:
        document = self.json()
        assert set(document) == {"error"}, document
        assert set(document["error"]) == {"code", "message"}, document
        code: str = document["error"]["code"]
        return code


def run_cli(
    sandbox: Sandbox,
    arguments: Sequence[str],
    *,
    fault: str | None = None,
    root: str | None = None,
    timeout: float = CLI_TIMEOUT_SECONDS,
) -> CliRun:
    """``pi-squad arguments``; with ``fault`` (``<operation>:<n>:<action>``), through the
    test-only entry that injects it (``tests.support.fault_cli``)."""
    command = [*CLI, *arguments] if fault is None else [*FAULT_CLI, fault, *arguments]
    environment = sandbox.environment(root=root)
    return run_command(command, cwd=sandbox.cwd, env=environment, timeout=timeout)


def run_command(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = CLI_TIMEOUT_SECONDS,
) -> CliRun:
    """``command`` run to its end, its exit status and UTF-8 output captured; without ``env``,
    in this process's environment."""
    completed = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )
    return CliRun(completed.returncode, completed.stdout, completed.stderr)


def create_arguments(spec: SpecFile, *extra: str) -> list[str]:
    return ["create", "--spec-file", str(spec.path), "--spec-sha256", spec.sha256, "--json", *extra]


def create_in_process(sandbox: Sandbox, spec: SpecFile, fs: FileSystem | None = None) -> str:
    """``pi-squad create`` wired exactly as the CLI wires it, in this process; the squad ID.

    ``fs`` replaces the file-system adapter (a recording wrapper, say).
    """
    container = CliContainer()
    container.environ.override({"PI_SQUAD_ROOT": str(sandbox.root)})
    if fs is not None:
        container.fs.override(fs)
    published = create_squad(
        container.publisher(),
        container.agent_catalog(cwd=str(sandbox.cwd)),
        spec_file=str(spec.path),
        spec_sha256=spec.sha256,
        cwd=str(sandbox.cwd),
    )
    return published.squad.id


def listed_squads(root: Path) -> list[SquadListing]:
    return list_squads(native_file_system(), str(root), JsonSquadCodec())


def staging_residue(root: Path) -> list[str]:
    """Root entries that are staging directories (``<id>.creating.<uuid>``)."""
    if not root.exists():
        return []
    return sorted(entry.name for entry in root.iterdir() if ".creating." in entry.name)


def lock_files(root: Path) -> list[str]:
    locks = root / STAGING_LOCKS_DIR
    if not locks.exists():
        return []
    return sorted(entry.name for entry in locks.iterdir())


def canonical_problems(listing: SquadListing, expected: bytes) -> list[str]:
    """What is wrong with a listed squad's canonical copy, compared with the source bytes."""
    spec = listing.squad.spec
    if spec is None:
        return [f"{listing.id}: squad.json has no spec"]
    problems = []
    canonical = Path(spec.path)
    if canonical.parent.parent != Path(listing.squad_dir):
        problems.append(f"{listing.id}: canonical path {spec.path} outside the squad directory")
    data = canonical.read_bytes()
    if data != expected:
        problems.append(f"{listing.id}: canonical bytes differ from the source")
    if (spec.sha256, spec.bytes) != (sha(expected), len(expected)):
        problems.append(f"{listing.id}: Squad.spec does not describe the source bytes")
    if os.name == "posix" and stat.S_IMODE(canonical.stat().st_mode) != 0o400:
        problems.append(f"{listing.id}: canonical mode {oct(canonical.stat().st_mode)}")
    return problems


def tree_snapshot(*directories: Path) -> Mapping[str, tuple[int, int, int]]:
    """Every entry under ``directories``: (mode, size, mtime_ns), for before/after comparison."""
    snapshot: dict[str, tuple[int, int, int]] = {}
    for directory in directories:
        if not directory.exists():
            continue
        for path in [directory, *sorted(directory.rglob("*"))]:
            status = path.lstat()
            snapshot[str(path)] = (status.st_mode, status.st_size, status.st_mtime_ns)
    return snapshot
