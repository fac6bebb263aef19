"""Publish one squad directory atomically (contract §5): build it in a locked staging
directory, then rename it onto a path that does not exist yet.

Everything is built in a sibling staging directory ``<id>.creating.<uuid>`` that holds an
inter-process lock for as long as it is being built, then renamed onto a path that does not
exist yet. A reader therefore sees either no squad or a whole one; a crash leaves only a
staging directory, which a later ``create`` removes once its lock proves the builder is gone
(``application.staging_sweep``).

Durability: every file in staging is fsynced when written and every directory once after all
its entries exist (the files written at once, then the directories fsynced at once: each its
own fsync, sharing the journal's commits), then the rename and an fsync of the root publish
the whole tree. Files inside staging are therefore created in place rather than through
``write_atomic``: a temporary name and a rename per file would guard against a reader seeing
a partial file, and no reader looks inside a staging directory.

Staging locks live in ``<root>/.staging-locks/<staging name>.lock``. ``LockFactory.try_lock``
refuses a lock whose file was unlinked while it was being taken, so a lock file removed by a
sweeper can never be "held" by a builder that the sweeper no longer sees; the builder just
picks another staging name.

Any ``OSError`` from a step is ``PUBLISH_FAILED``, and nothing is left that ``list_squads``
lists: the staging directory is removed, and if only the final fsync of the root fails after
the rename, the squad is renamed back into its (still locked) staging directory first. After a
successful rename and root fsync no further file-system call is made.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Protocol

import attrs

from application.concurrent_steps import Step, StepFailed, run_steps
from application.ports import (
    Clock,
    FileSystem,
    Ids,
    LockFactory,
    SquadCodec,
    StableReadError,
)
from domain import paths
from domain.errors import ErrorCode, PublishError
from domain.spec.parse import ValidatedSpec
from domain.squad.ids import SQUAD_ID_PATTERN
from domain.squad.layout import CANONICAL_DIR, CANONICAL_NAME, SquadLayout
from domain.squad.model import Squad, Task

STAGING_LOCKS_DIR = ".staging-locks"
DIR_MODE = 0o700
CANONICAL_CREATE_MODE = 0o600
# What ``FileSystem.write_atomic`` gives the state files it rewrites later.
STATE_FILE_MODE = 0o600
STAGING_NAME = re.compile(r"^([a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?)\.creating\.([0-9a-f]{32})\Z")
LOCK_SUFFIX = ".lock"
# A fresh staging lock is lost only to a sweeper that took it in the instant between its
# creation and its locking; another name is then tried.
_MAX_LOCK_ATTEMPTS = 8


class CanonicalBytes(Protocol):
    """The exact bytes a squad's canonical copy is written from, hashed and measured: a
    validated squad spec, or an attested flow's brief (``application.flows.attested``)."""

    @property
    def raw(self) -> bytes: ...

    @property
    def sha256(self) -> str: ...

    @property
    def byte_length(self) -> int: ...


@attrs.frozen
class PublishedSquad:
    squad: Squad
    squad_dir: str
    tasks: tuple[Task, ...]
    validated: ValidatedSpec | None = attrs.field(default=None, repr=False)

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.validated.warnings if self.validated is not None else ()


@attrs.frozen
class Publisher:
    """The ports publication needs; one per operation."""

    fs: FileSystem
    locks: LockFactory
    clock: Clock
    ids: Ids
    codec: SquadCodec
    squad_root: str

    def join(self, *names: str) -> str:
        return paths.join_path(self.squad_root, *names, flavour=self.fs.flavour)


def staging_lock_path(publisher: Publisher, staging_name: str) -> str:
    """Where the lock of the staging directory ``staging_name`` lives."""
    return publisher.join(STAGING_LOCKS_DIR, staging_name + LOCK_SUFFIX)


def os_reason(exc: OSError) -> str:
    """What went wrong, in the operating system's words when it gave any."""
    return exc.strerror or str(exc) or type(exc).__name__


def publish_failed(step: str, exc: OSError) -> PublishError:
    """``PUBLISH_FAILED`` for an ``OSError`` at ``step``, after which nothing is published."""
    return PublishError(
        ErrorCode.PUBLISH_FAILED,
        f"{step} failed: {os_reason(exc)}; nothing was published, retrying is safe",
    )


def assert_layout(publisher: Publisher, squad: Squad, tasks: tuple[Task, ...]) -> str:
    """The squad's directory, once its id, task ids and canonical path are proved path-safe."""
    flavour = publisher.fs.flavour
    squad_dir = publisher.join(squad.id)
    if not SQUAD_ID_PATTERN.match(squad.id) or not paths.is_immediate_child(
        publisher.squad_root, squad_dir, flavour
    ):
        raise PublishError(ErrorCode.PUBLISH_FAILED, f"squad id '{squad.id}' is not path-safe")
    if squad.spec is not None and not paths.is_beneath(squad_dir, squad.spec.path, flavour):
        raise PublishError(ErrorCode.PUBLISH_FAILED, "canonical path escapes the squad directory")
    for task in tasks:
        if not paths.is_immediate_child(squad_dir, publisher.join(squad.id, task.id), flavour):
            raise PublishError(ErrorCode.PUBLISH_FAILED, f"task id '{task.id}' is not path-safe")
    return squad_dir


@attrs.define
class _Build:
    """One staging directory being built; ``renamed`` once it became the squad directory."""

    staging: str
    name: str
    renamed: bool = False


def _take_staging_lock(publisher: Publisher, squad_id: str, stack: contextlib.ExitStack) -> str:
    """Hold the lock of a fresh staging name until ``stack`` closes (then discard its file);
    return the name."""
    for _ in range(_MAX_LOCK_ATTEMPTS):
        name = f"{squad_id}.creating.{publisher.ids.uuid4_hex()}"
        lock_path = staging_lock_path(publisher, name)
        attempt = contextlib.ExitStack()
        if attempt.enter_context(publisher.locks.try_lock(lock_path)):
            stack.callback(publisher.locks.discard, lock_path)  # after the release below
            stack.enter_context(attempt.pop_all())
            return name
        attempt.close()
    raise PublishError(
        ErrorCode.PUBLISH_FAILED,
        f"no staging lock could be taken in {_MAX_LOCK_ATTEMPTS} attempts; retrying is safe",
    )


@contextmanager
def _staging(publisher: Publisher, squad_id: str) -> Iterator[_Build]:
    """An exclusively created, locked staging directory, removed unless it was renamed away."""
    with contextlib.ExitStack() as stack:
        name = _take_staging_lock(publisher, squad_id, stack)
        build = _Build(publisher.join(name), name)
        try:
            publisher.fs.make_dir_exclusive(build.staging, DIR_MODE)
            yield build
        finally:
            if not build.renamed:
                remove_quietly(publisher.fs, build.staging)


def publish_once(
    publisher: Publisher,
    squad: Squad,
    tasks: tuple[Task, ...],
    validated: CanonicalBytes | None,
) -> PublishedSquad | None:
    """Build and rename one candidate; ``None`` when another creator took the id first.

    ``validated`` is the file spec whose exact bytes become the canonical copy; ``None`` for a
    legacy inline squad, which has no canonical spec.
    """
    fs = publisher.fs
    squad_id = squad.id
    squad_dir = assert_layout(publisher, squad, tasks)
    step = "staging"
    try:
        with _staging(publisher, squad_id) as build:
            staging = build.staging
            spec_dir = paths.join_path(staging, CANONICAL_DIR, flavour=fs.flavour)
            canonical = paths.join_path(spec_dir, CANONICAL_NAME, flavour=fs.flavour)
            step = "task state"
            # The staging directory becomes the squad directory: lay it out as one.
            staged = SquadLayout(publisher.squad_root, build.name, fs.flavour)
            fs.make_dir_exclusive(staged.records_root, DIR_MODE)
            step = "squad state"
            run_steps(
                _state_writes(
                    publisher,
                    staged,
                    squad,
                    tasks,
                    spec_dir=spec_dir,
                    canonical=canonical,
                    validated=validated,
                )
            )
            if validated is not None:
                step = "canonical verification"
                _verify_canonical(fs, canonical, validated)
                step = "read-only marking"
                # Marked before the rename so that no published squad ever has a writable copy.
                fs.mark_read_only(canonical)
            step = "directory sync"
            directories = [staged.records_dir(task.id) for task in tasks]
            directories += [
                staged.records_root,
                *([spec_dir] if validated is not None else []),
                staging,
            ]
            run_steps([(step, partial(fs.fsync_dir, directory)) for directory in directories])
            step = "rename into place"
            try:
                fs.rename_no_replace(staging, squad_dir)
            except FileExistsError:
                return None
            build.renamed = True
            step = "root directory sync"
            try:
                fs.fsync_dir(publisher.squad_root)
            except OSError as exc:
                _withdraw(fs, build, squad_dir, exc)
                raise
    except StepFailed as failed:
        if isinstance(failed.error, OSError):
            raise publish_failed(failed.step, failed.error) from None
        raise failed.error from None
    except OSError as exc:
        raise publish_failed(step, exc) from None
    return PublishedSquad(
        squad=squad,
        squad_dir=squad_dir,
        tasks=tasks,
        validated=validated if isinstance(validated, ValidatedSpec) else None,
    )


def _state_writes(
    publisher: Publisher,
    staged: SquadLayout,
    squad: Squad,
    tasks: tuple[Task, ...],
    *,
    spec_dir: str,
    canonical: str,
    validated: CanonicalBytes | None,
) -> list[Step]:
    """The files of a staged squad, each created, written and fsynced by its own step (with
    the directories that hold only it: the canonical's ``spec/``, a task's two directories).

    Nothing in staging is visible before the final rename, so a state file is written in place
    (create, write, fsync) instead of through a temporary name and a rename: a crash leaves at
    worst a partial file inside a staging directory, which only the staging sweep ever sees.
    The steps run at once, and every directory is fsynced after they all ended, so every entry
    is durable before the rename publishes them (``application.concurrent_steps``).
    """
    fs = publisher.fs
    create = fs.create_file_exclusive
    codec = publisher.codec
    writes: list[Step] = []
    if validated is not None:
        writes.append(
            ("canonical spec", partial(_stage_canonical, fs, spec_dir, canonical, validated.raw))
        )
    writes += [
        ("task state", partial(_stage_task, fs, staged, t.id, codec.encode_task(t))) for t in tasks
    ]
    writes.append(
        (
            "squad state",
            partial(create, staged.squad_file, codec.encode_squad(squad), STATE_FILE_MODE),
        )
    )
    return writes


def _stage_canonical(fs: FileSystem, spec_dir: str, canonical: str, raw: bytes) -> None:
    fs.make_dir_exclusive(spec_dir, DIR_MODE)
    fs.create_file_exclusive(canonical, raw, CANONICAL_CREATE_MODE)


def _stage_task(fs: FileSystem, staged: SquadLayout, task_id: str, encoded: bytes) -> None:
    fs.make_dir_exclusive(staged.ledger_dir(task_id), DIR_MODE)
    fs.make_dir_exclusive(staged.records_dir(task_id), DIR_MODE)
    fs.create_file_exclusive(staged.task_file(task_id), encoded, STATE_FILE_MODE)


def _withdraw(fs: FileSystem, build: _Build, squad_dir: str, cause: OSError) -> None:
    """Rename a squad whose publication could not be made durable back into its staging
    directory (still locked by this process), from where ``_staging`` removes it."""
    try:
        fs.rename_no_replace(squad_dir, build.staging)
    except OSError:
        raise PublishError(
            ErrorCode.PUBLISH_FAILED,
            f"root directory sync failed: {os_reason(cause)}; the squad was renamed into place "
            f"at {squad_dir} but may not survive a crash, and withdrawing it failed too",
        ) from None
    build.renamed = False


def _verify_canonical(fs: FileSystem, canonical: str, validated: CanonicalBytes) -> None:
    try:
        read = fs.read_stable(canonical, max_bytes=validated.byte_length)
    except StableReadError as exc:
        raise PublishError(
            ErrorCode.PUBLISH_FAILED,
            f"canonical copy unreadable after writing: {exc.failure.value}",
        ) from None
    if read.data != validated.raw or read.sha256 != validated.sha256:
        raise PublishError(ErrorCode.PUBLISH_FAILED, "canonical copy differs from the bytes hashed")


def remove_quietly(fs: FileSystem, path: str) -> None:
    # Best effort: a leftover staging directory is invisible and cleaned by a later create.
    with contextlib.suppress(OSError):
        fs.remove_tree(path)
