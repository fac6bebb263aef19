"""Publish a validated file squad atomically (contract §5).

Everything is built in a sibling staging directory ``<id>.creating.<uuid>`` that holds an
inter-process lock for as long as it is being built, then renamed onto a path that does not
exist yet. A reader therefore sees either no squad or a whole one; a crash leaves only a
staging directory, which a later ``create`` removes once its lock proves the builder is gone.

Staging locks live in ``<root>/.staging-locks/<staging name>.lock``. A crash between taking
the lock and creating the staging directory, or after the rename, leaves a lock file without a
staging directory; a later ``create`` removes it while holding it (see
``remove_orphan_staging_locks``). ``LockFactory.try_lock`` refuses a lock whose file was
unlinked while it was being taken, so a lock file removed that way can never be "held" by a
builder that a sweeper no longer sees; the builder just picks another staging name.

Any ``OSError`` from a step is ``PUBLISH_FAILED``, and nothing is left that ``list_squads``
lists: the staging directory is removed, and if only the final fsync of the root fails after
the rename, the squad is renamed back into its (still locked) staging directory first. After a
successful rename and root fsync no further file-system call is made.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
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
from domain.spec.model import SquadConfig
from domain.spec.parse import ValidatedSpec
from domain.squad.ids import (
    ROOT_ENTRIES,
    SQUAD_ID_PATTERN,
    base36,
    derive_squad_id,
    make_task_id,
    reserved_squad_id_problem,
    with_unique_suffix,
)
from domain.squad.layout import CANONICAL_DIR, CANONICAL_NAME, SquadLayout
from domain.squad.model import AgentSetting, SpecRef, Squad, SquadStatus, Task, TaskStatus

STAGING_LOCKS_DIR = ".staging-locks"
DIR_MODE = 0o700
CANONICAL_CREATE_MODE = 0o600
# Names a squad must not take: the root's own entries (any case; Windows device names too, by
# ``domain.squad.ids.reserved_squad_id_problem``).
RESERVED_SQUAD_IDS = ROOT_ENTRIES
_STAGING_NAME = re.compile(r"^([a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?)\.creating\.([0-9a-f]{32})\Z")
_LOCK_SUFFIX = ".lock"
_MAX_ID_ATTEMPTS = 16
# A fresh staging lock is lost only to a sweeper that took it in the instant between its
# creation and its locking; another name is then tried.
_MAX_LOCK_ATTEMPTS = 8


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
    _prepare_root(publisher)
    base_id = derive_squad_id(validated.spec.goal, validated.sha256)
    return _publish_with_free_id(
        publisher,
        base_id,
        lambda squad_id: _squad_values(publisher, validated, squad_id, cwd=cwd),
        validated,
    )


def _prepare_root(publisher: Publisher) -> None:
    fs = publisher.fs
    try:
        fs.ensure_dir(publisher.squad_root, DIR_MODE)
    except OSError as exc:
        raise PublishError(
            ErrorCode.PUBLISH_FAILED, f"squad root {publisher.squad_root}: {_reason(exc)}"
        ) from None
    try:
        remove_abandoned_staging(publisher)
        remove_orphan_staging_locks(publisher)
    except OSError as exc:
        raise _publish_failed("listing the squad root", exc) from None


def _publish_with_free_id(
    publisher: Publisher,
    base_id: str,
    values: Callable[[str], tuple[Squad, tuple[Task, ...]]],
    validated: ValidatedSpec | None,
) -> PublishedSquad:
    now = publisher.clock.now()
    for attempt in range(_MAX_ID_ATTEMPTS):
        try:
            squad_id = _choose_id(
                publisher, base_id, now_ms=int(now.timestamp() * 1000), attempt=attempt
            )
        except OSError as exc:
            raise _publish_failed("choosing a squad id", exc) from None
        squad, tasks = values(squad_id)
        published = _publish_once(publisher, squad, tasks, validated)
        if published is not None:
            return published
    raise PublishError(
        ErrorCode.PUBLISH_FAILED,
        f"no free squad id after {_MAX_ID_ATTEMPTS} attempts (base '{base_id}')",
    )


def publish_inline_squad(
    publisher: Publisher,
    *,
    goal: str,
    tasks: tuple[Task, ...],
    agents: tuple[tuple[str, AgentSetting], ...],
    config: SquadConfig,
    cwd: str,
) -> PublishedSquad:
    """Publish a legacy inline squad (no spec, no reader, no attestation) the same atomic way."""
    _prepare_root(publisher)
    now = publisher.clock.now()
    slug = make_task_id(goal)
    base_id = (
        slug if slug and SQUAD_ID_PATTERN.match(slug) else f"squad-{publisher.ids.uuid4_hex()[:12]}"
    )

    def values(squad_id: str) -> tuple[Squad, tuple[Task, ...]]:
        squad = Squad(
            id=squad_id,
            goal=goal,
            status=SquadStatus.RUNNING,
            created=now,
            cwd=cwd,
            config=config,
            agents=agents,
            task_ids=tuple(task.id for task in tasks),
        )
        return squad, tasks

    return _publish_with_free_id(publisher, base_id, values, None)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _publish_failed(step: str, exc: OSError) -> PublishError:
    return PublishError(
        ErrorCode.PUBLISH_FAILED,
        f"{step} failed: {_reason(exc)}; nothing was published, retrying is safe",
    )


def _choose_id(publisher: Publisher, base_id: str, *, now_ms: int, attempt: int) -> str:
    candidates = [base_id] if attempt == 0 else []
    candidates.append(with_unique_suffix(base_id, base36(now_ms)))
    candidates.append(
        with_unique_suffix(base_id, f"{base36(now_ms)}-{publisher.ids.uuid4_hex()[:6]}")
    )
    for candidate in candidates:
        if reserved_squad_id_problem(candidate) or not SQUAD_ID_PATTERN.match(candidate):
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
        task_ids=tuple(t.id for t in spec.tasks),
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
        lock_path = publisher.join(STAGING_LOCKS_DIR, name + _LOCK_SUFFIX)
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
                _remove_quietly(publisher.fs, build.staging)


def _publish_once(
    publisher: Publisher,
    squad: Squad,
    tasks: tuple[Task, ...],
    validated: ValidatedSpec | None,
) -> PublishedSquad | None:
    """Build and rename one candidate; ``None`` when another creator took the id first.

    ``validated`` is the file spec whose exact bytes become the canonical copy; ``None`` for a
    legacy inline squad, which has no canonical spec.
    """
    fs = publisher.fs
    squad_id = squad.id
    squad_dir = _assert_layout(publisher, squad, tasks)
    step = "staging"
    try:
        with _staging(publisher, squad_id) as build:
            staging = build.staging
            step = "canonical spec"
            spec_dir = paths.join_path(staging, CANONICAL_DIR, flavour=fs.flavour)
            canonical = paths.join_path(spec_dir, CANONICAL_NAME, flavour=fs.flavour)
            if validated is not None:
                fs.make_dir_exclusive(spec_dir, DIR_MODE)
                fs.create_file_exclusive(canonical, validated.raw, CANONICAL_CREATE_MODE)
            step = "task state"
            # The staging directory becomes the squad directory: lay it out as one.
            staged = SquadLayout(publisher.squad_root, build.name, fs.flavour)
            fs.make_dir_exclusive(staged.records_root, DIR_MODE)
            for task in tasks:
                fs.make_dir_exclusive(staged.ledger_dir(task.id), DIR_MODE)
                fs.make_dir_exclusive(staged.records_dir(task.id), DIR_MODE)
                fs.write_atomic(staged.task_file(task.id), publisher.codec.encode_task(task))
            step = "squad state"
            fs.write_atomic(staged.squad_file, publisher.codec.encode_squad(squad))
            if validated is not None:
                step = "canonical verification"
                _verify_canonical(fs, canonical, validated)
                step = "read-only marking"
                # Marked before the rename so that no published squad ever has a writable copy.
                fs.mark_read_only(canonical)
                step = "directory sync"
                fs.fsync_dir(spec_dir)
            step = "directory sync"
            fs.fsync_dir(staging)
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
    except OSError as exc:
        raise _publish_failed(step, exc) from None
    return PublishedSquad(squad=squad, squad_dir=squad_dir, tasks=tasks, validated=validated)


def _withdraw(fs: FileSystem, build: _Build, squad_dir: str, cause: OSError) -> None:
    """Rename a squad whose publication could not be made durable back into its staging
    directory (still locked by this process), from where ``_staging`` removes it."""
    try:
        fs.rename_no_replace(squad_dir, build.staging)
    except OSError:
        raise PublishError(
            ErrorCode.PUBLISH_FAILED,
            f"root directory sync failed: {_reason(cause)}; the squad was renamed into place "
            f"at {squad_dir} but may not survive a crash, and withdrawing it failed too",
        ) from None
    build.renamed = False


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
    beneath it. An unlistable root raises ``OSError`` (a missing one holds nothing); a
    problem with one entry leaves that entry for a later attempt.
    """
    fs = publisher.fs
    try:
        names = fs.list_dir(publisher.squad_root)
    except FileNotFoundError:
        return []
    removed: list[str] = []
    referenced: list[str] | None = None
    for name in names:
        if not _STAGING_NAME.match(name):
            continue
        staging = publisher.join(name)
        lock_path = publisher.join(STAGING_LOCKS_DIR, name + _LOCK_SUFFIX)
        try:
            if not fs.is_dir(staging):
                continue
            if referenced is None:
                referenced = _published_spec_paths(publisher, names)
            if any(paths.is_beneath(staging, spec, fs.flavour) for spec in referenced):
                continue
            with publisher.locks.try_lock(lock_path) as taken:
                if not taken:
                    continue  # a live creator is building it
                _remove_quietly(fs, staging)
            publisher.locks.discard(lock_path)
        except OSError:
            continue
        removed.append(name)
    return removed


def remove_orphan_staging_locks(publisher: Publisher) -> list[str]:
    """Remove staging lock files whose staging directory does not exist; return their names.

    Such a file is left by a builder killed before it created its staging directory or after
    it renamed it into place. A file is removed only when its name has the staging-lock shape,
    its staging directory is absent both before and while the lock is held, and the lock can
    be taken; it is unlinked while held (POSIX), and once more after release for platforms
    that cannot unlink an open file. A missing lock directory holds nothing; an unlistable one
    raises ``OSError``.
    """
    fs = publisher.fs
    locks_dir = publisher.join(STAGING_LOCKS_DIR)
    try:
        names = fs.list_dir(locks_dir)
    except FileNotFoundError:
        return []
    removed: list[str] = []
    for name in names:
        staging_name = name.removesuffix(_LOCK_SUFFIX)
        if staging_name == name or not _STAGING_NAME.match(staging_name):
            continue
        staging = publisher.join(staging_name)
        lock_path = publisher.join(STAGING_LOCKS_DIR, name)
        try:
            if fs.exists(staging):
                continue  # remove_abandoned_staging decides about the directory and its lock
            with publisher.locks.try_lock(lock_path) as taken:
                if not taken or fs.exists(staging):
                    continue
                publisher.locks.discard(lock_path)
            publisher.locks.discard(lock_path)
        except OSError:
            continue
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
