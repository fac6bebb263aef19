"""Publish a validated file squad atomically (contract §5).

Everything is built in a sibling staging directory ``<id>.creating.<uuid>`` that holds an
inter-process lock for as long as it is being built, then renamed onto a path that does not
exist yet. A reader therefore sees either no squad or a whole one; a crash leaves only a
staging directory, which a later ``create`` removes once its lock proves the builder is gone.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextlib import contextmanager

import attrs

from application.load_spec import CatalogLookup, load_validated_spec
from application.ports import (
    Clock,
    FileSystem,
    Ids,
    LockFactory,
    SquadCodec,
    StableReadError,
)
from domain import paths
from domain.agents import AgentCatalog
from domain.errors import ErrorCode, PublishError
from domain.spec import ValidatedSpec
from domain.squad.ids import SQUAD_ID_PATTERN, base36, derive_squad_id, with_unique_suffix
from domain.squad.model import AgentSetting, SpecRef, Squad, SquadStatus, Task, TaskStatus

CANONICAL_DIR = "spec"
CANONICAL_NAME = "spec.v1.json"
STAGING_LOCKS_DIR = ".staging-locks"
DIR_MODE = 0o700
CANONICAL_CREATE_MODE = 0o600
# Names a squad must not take: the root's own entries.
RESERVED_SQUAD_IDS = frozenset({"agents", "knowledge"})
_STAGING_NAME = re.compile(r"^([a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?)\.creating\.([0-9a-f]{32})\Z")
_MAX_ID_ATTEMPTS = 16


@attrs.frozen
class PublishedSquad:
    squad: Squad
    squad_dir: str
    tasks: tuple[Task, ...]
    validated: ValidatedSpec = attrs.field(repr=False)


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


def create_squad(
    publisher: Publisher,
    catalog: AgentCatalog,
    *,
    spec_file: str,
    spec_sha256: str,
    cwd: str,
) -> PublishedSquad:
    """Validate ``spec_file`` against ``spec_sha256`` and publish it as a new squad."""
    spec_path, validated = load_validated_spec(
        publisher.fs, CatalogLookup(catalog), spec_file=spec_file, spec_sha256=spec_sha256, cwd=cwd
    )
    del spec_path  # the canonical copy, not the source, is what the squad refers to
    fs = publisher.fs
    try:
        fs.ensure_dir(publisher.squad_root, DIR_MODE)
    except OSError as exc:
        raise PublishError(
            ErrorCode.PUBLISH_FAILED, f"squad root {publisher.squad_root}: {exc.strerror or exc}"
        ) from None
    remove_abandoned_staging(publisher)
    now = publisher.clock.now()
    base_id = derive_squad_id(validated.spec.goal, validated.sha256)
    for attempt in range(_MAX_ID_ATTEMPTS):
        squad_id = _choose_id(
            publisher, base_id, now_ms=int(now.timestamp() * 1000), attempt=attempt
        )
        published = _publish_once(publisher, validated, squad_id, cwd=cwd)
        if published is not None:
            return published
    raise PublishError(
        ErrorCode.PUBLISH_FAILED,
        f"no free squad id after {_MAX_ID_ATTEMPTS} attempts (base '{base_id}')",
    )


def _choose_id(publisher: Publisher, base_id: str, *, now_ms: int, attempt: int) -> str:
    candidates = [base_id] if attempt == 0 else []
    candidates.append(with_unique_suffix(base_id, base36(now_ms)))
    candidates.append(
        with_unique_suffix(base_id, f"{base36(now_ms)}-{publisher.ids.uuid4_hex()[:6]}")
    )
    for candidate in candidates:
        if candidate in RESERVED_SQUAD_IDS or not SQUAD_ID_PATTERN.match(candidate):
            continue
        if not publisher.fs.exists(publisher.join(candidate)):
            return candidate
    return with_unique_suffix(base_id, publisher.ids.uuid4_hex()[:12])


def _squad_values(
    publisher: Publisher, validated: ValidatedSpec, squad_id: str, *, cwd: str
) -> tuple[Squad, tuple[Task, ...]]:
    spec = validated.spec
    now = publisher.clock.now()
    canonical = publisher.join(squad_id, CANONICAL_DIR, CANONICAL_NAME)
    squad = Squad(
        id=squad_id,
        goal=spec.goal,
        status=SquadStatus.RUNNING,
        created=now,
        cwd=cwd,
        config=spec.config,
        agents=tuple(
            (agent.name, AgentSetting(model=agent.model, thinking=agent.thinking))
            for agent in spec.agents
        ),
        spec=SpecRef(
            sha256=validated.sha256,
            bytes=validated.byte_length,
            path=canonical,
            chunk_count=validated.chunks.chunk_count,
        ),
    )
    tasks = tuple(
        Task(
            id=t.id,
            title=t.title,
            description=t.description,
            agent=t.agent,
            status=TaskStatus.BLOCKED if t.depends else TaskStatus.PENDING,
            depends=t.depends,
            inherit_context=t.inherit_context,
            created=now,
        )
        for t in spec.tasks
    )
    return squad, tasks


def _assert_layout(publisher: Publisher, squad: Squad, tasks: tuple[Task, ...]) -> str:
    flavour = publisher.fs.flavour
    squad_dir = publisher.join(squad.id)
    if not SQUAD_ID_PATTERN.match(squad.id) or not paths.is_immediate_child(
        publisher.squad_root, squad_dir, flavour
    ):
        raise PublishError(ErrorCode.PUBLISH_FAILED, f"squad id '{squad.id}' is not path-safe")
    assert squad.spec is not None
    if not paths.is_beneath(squad_dir, squad.spec.path, flavour):
        raise PublishError(ErrorCode.PUBLISH_FAILED, "canonical path escapes the squad directory")
    for task in tasks:
        if not paths.is_immediate_child(squad_dir, publisher.join(squad.id, task.id), flavour):
            raise PublishError(ErrorCode.PUBLISH_FAILED, f"task id '{task.id}' is not path-safe")
    return squad_dir


@contextmanager
def _staging(publisher: Publisher, squad_id: str) -> Iterator[str]:
    """An exclusively created, locked staging directory, removed unless it was renamed away."""
    name = f"{squad_id}.creating.{publisher.ids.uuid4_hex()}"
    staging = publisher.join(name)
    lock_path = publisher.join(STAGING_LOCKS_DIR, f"{name}.lock")
    try:
        with publisher.locks.try_lock(lock_path) as taken:
            if not taken:
                raise PublishError(ErrorCode.PUBLISH_FAILED, "staging lock unexpectedly held")
            try:
                publisher.fs.make_dir_exclusive(staging, DIR_MODE)
                yield staging
            finally:
                if publisher.fs.exists(staging):
                    _remove_quietly(publisher.fs, staging)
    finally:
        publisher.locks.discard(lock_path)


def _publish_once(
    publisher: Publisher, validated: ValidatedSpec, squad_id: str, *, cwd: str
) -> PublishedSquad | None:
    """Build and rename one candidate; ``None`` when another creator took the id first."""
    fs = publisher.fs
    squad, tasks = _squad_values(publisher, validated, squad_id, cwd=cwd)
    squad_dir = _assert_layout(publisher, squad, tasks)
    step = "staging"
    try:
        with _staging(publisher, squad_id) as staging:
            step = "canonical spec"
            spec_dir = paths.join_path(staging, CANONICAL_DIR, flavour=fs.flavour)
            fs.make_dir_exclusive(spec_dir, DIR_MODE)
            canonical = paths.join_path(spec_dir, CANONICAL_NAME, flavour=fs.flavour)
            fs.create_file_exclusive(canonical, validated.raw, CANONICAL_CREATE_MODE)
            step = "task state"
            for task in tasks:
                task_dir = paths.join_path(staging, task.id, flavour=fs.flavour)
                fs.make_dir_exclusive(task_dir, DIR_MODE)
                fs.write_atomic(
                    paths.join_path(task_dir, "task.json", flavour=fs.flavour),
                    publisher.codec.encode_task(task),
                )
            step = "squad state"
            fs.write_atomic(
                paths.join_path(staging, "squad.json", flavour=fs.flavour),
                publisher.codec.encode_squad(squad),
            )
            step = "canonical verification"
            _verify_canonical(fs, canonical, validated)
            step = "read-only marking"
            # Marked before the rename so that no published squad ever has a writable copy.
            fs.mark_read_only(canonical)
            step = "directory sync"
            fs.fsync_dir(spec_dir)
            fs.fsync_dir(staging)
            step = "rename into place"
            try:
                fs.rename_no_replace(staging, squad_dir)
            except FileExistsError:
                return None
            step = "root directory sync"
            fs.fsync_dir(publisher.squad_root)
    except OSError as exc:
        raise PublishError(
            ErrorCode.PUBLISH_FAILED,
            f"{step} failed: {exc.strerror or exc}; nothing was published, retrying is safe",
        ) from None
    return PublishedSquad(squad=squad, squad_dir=squad_dir, tasks=tasks, validated=validated)


def _verify_canonical(fs: FileSystem, canonical: str, validated: ValidatedSpec) -> None:
    try:
        read = fs.read_stable(canonical, max_bytes=validated.byte_length)
    except StableReadError as exc:
        raise PublishError(
            ErrorCode.PUBLISH_FAILED,
            f"canonical copy unreadable after writing: {exc.failure.value}",
        ) from None
    if read.data != validated.raw or read.sha256 != validated.sha256:
        raise PublishError(ErrorCode.PUBLISH_FAILED, "canonical copy differs from the bytes hashed")


def _remove_quietly(fs: FileSystem, path: str) -> None:
    # Best effort: a leftover staging directory is invisible and cleaned by a later create.
    with contextlib.suppress(OSError):
        fs.remove_tree(path)


def remove_abandoned_staging(publisher: Publisher) -> list[str]:
    """Remove staging directories whose builder is gone; return their names.

    A directory is removed only when its name has the staging shape, it is a real directory,
    its lock can be taken (its builder died), and no published squad's canonical spec lies
    beneath it.
    """
    fs = publisher.fs
    try:
        names = fs.list_dir(publisher.squad_root)
    except OSError:
        return []
    removed: list[str] = []
    referenced = None
    for name in names:
        if not _STAGING_NAME.match(name):
            continue
        staging = publisher.join(name)
        if not fs.is_dir(staging):
            continue
        if referenced is None:
            referenced = _published_spec_paths(publisher, names)
        if any(paths.is_beneath(staging, spec, fs.flavour) for spec in referenced):
            continue
        lock_path = publisher.join(STAGING_LOCKS_DIR, f"{name}.lock")
        with publisher.locks.try_lock(lock_path) as taken:
            if not taken:
                continue  # a live creator is building it
            _remove_quietly(fs, staging)
        publisher.locks.discard(lock_path)
        removed.append(name)
    return removed


def _published_spec_paths(publisher: Publisher, names: list[str]) -> list[str]:
    found: list[str] = []
    for name in names:
        if not SQUAD_ID_PATTERN.match(name):
            continue
        try:
            data = publisher.fs.read_small(publisher.join(name, "squad.json"), 4 * 1024 * 1024)
            squad = publisher.codec.decode_squad(data)
        except (OSError, StableReadError, ValueError):
            # An unreadable squad.json proves no reference; its own squad is not listed either.
            squad = None
        if squad is not None and squad.spec is not None:
            found.append(squad.spec.path)
    return found
