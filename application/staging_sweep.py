"""Sweep what crashed builders left in the squad root: staging directories and their locks.

A crash between taking a staging lock and creating the staging directory, or after the rename,
leaves a lock file without a staging directory; a crash while building leaves a staging
directory whose lock nobody holds. A later ``create`` removes both (``application.publication``
describes the staging scheme), never touching what a live builder holds or a squad refers to.
"""

from __future__ import annotations

from application.list_squads import entry_names, read_squad_file
from application.publication import (
    LOCK_SUFFIX,
    STAGING_LOCKS_DIR,
    STAGING_NAME,
    Publisher,
    remove_quietly,
    staging_lock_path,
)
from domain import paths
from domain.squad.ids import SQUAD_ID_PATTERN


def remove_abandoned_staging(publisher: Publisher) -> list[str]:
    """Remove staging directories whose builder is gone; return their names.

    A directory is removed only when its name has the staging shape, it is a real directory,
    its lock can be taken (its builder died), and no published squad's canonical spec lies
    beneath it. An unlistable root raises ``OSError`` (a missing one holds nothing); a
    problem with one entry leaves that entry for a later attempt.
    """
    fs = publisher.fs
    names = entry_names(fs, publisher.squad_root)
    removed: list[str] = []
    referenced: list[str] | None = None
    for name in names:
        if not STAGING_NAME.match(name):
            continue
        staging = publisher.join(name)
        lock_path = staging_lock_path(publisher, name)
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
                remove_quietly(fs, staging)
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
    names = entry_names(fs, publisher.join(STAGING_LOCKS_DIR))
    removed: list[str] = []
    for name in names:
        staging_name = name.removesuffix(LOCK_SUFFIX)
        if staging_name == name or not STAGING_NAME.match(staging_name):
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
        # An unreadable squad.json proves no reference; its own squad is not listed either.
        squad = read_squad_file(publisher.fs, publisher.join(name), publisher.codec)
        if squad is not None and squad.spec is not None:
            found.append(squad.spec.path)
    return found
