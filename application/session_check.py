"""Whether a session file may be a task's own: the one session its attestation is grounded in.

The path comes from the child's own stream (the answer to ``get_state``), which anything running
in the child's process tree can write to; the file lies in the task's ledger, which the child
can write. So neither is taken on trust: the path must name a file directly in the task's own
session directory (``SquadLayout.session_file_problem``), the ledger and session directories
must be real directories (not links), and the file, once it must exist, a regular file that is
not a link, examined without following or waiting (``FileSystem.regular_file``). An entry a
child ``chmod``-ed is given back its owner's access before the check gives up on it.
"""

from __future__ import annotations

import attrs

from application.ports import FileSystem, ReadFailure, StableReadError
from domain.squad.layout import SquadLayout

_DIR_ACCESS = 0o700
_FILE_ACCESS = 0o600


@attrs.frozen
class _Unreachable:
    """The entries could not be examined at all (a mode in the way, most likely)."""

    reason: str


def session_problem(
    fs: FileSystem, layout: SquadLayout, task_id: str, session_file: str, *, must_exist: bool
) -> str | None:
    """Why ``session_file`` cannot be the session of ``task_id``, or ``None``.

    ``must_exist=False`` when a child reports the session it starts on: Pi writes a new
    session's file only with its first answer, so a missing file (or session directory) is
    fine then, but anything else in its place is not. ``must_exist=True`` when an attestation
    is judged: the session the deliveries were observed in must be there.
    """
    problem = layout.session_file_problem(task_id, session_file)
    if problem is not None:
        return problem
    found = _examine(fs, layout, task_id, session_file, must_exist=must_exist)
    if isinstance(found, _Unreachable) and _reclaim(fs, layout, task_id, session_file):
        found = _examine(fs, layout, task_id, session_file, must_exist=must_exist)
    return found.reason if isinstance(found, _Unreachable) else found


def _reclaim(fs: FileSystem, layout: SquadLayout, task_id: str, session_file: str) -> bool:
    """The parent owns the ledger and session directories: give them (and the file) back the
    access a child's ``chmod`` took away; whether anything changed."""
    changed = False
    for directory in (layout.ledger_dir(task_id), layout.session_dir(task_id)):
        changed = fs.reclaim_access(directory, _DIR_ACCESS) or changed
    return fs.reclaim_access(session_file, _FILE_ACCESS) or changed


def _examine(
    fs: FileSystem, layout: SquadLayout, task_id: str, session_file: str, *, must_exist: bool
) -> str | _Unreachable | None:
    try:
        for directory in (layout.ledger_dir(task_id), layout.session_dir(task_id)):
            if fs.is_dir(directory):
                continue
            if not must_exist and not fs.exists(directory):
                return None  # no session directory yet: Pi creates it with the file
            return f"{directory} is not a directory (a link or something else is in its place)"
    except OSError as exc:
        return _Unreachable(f"the task's session directory cannot be examined: {exc.strerror}")
    try:
        fs.regular_file(session_file)
    except StableReadError as exc:
        if exc.failure is ReadFailure.MISSING and not must_exist:
            return None
        shown = f"the task's session file {session_file} is {_failure(exc)}"
        return _Unreachable(shown) if exc.failure is ReadFailure.UNREADABLE else shown
    return None


def _failure(exc: StableReadError) -> str:
    if exc.failure is ReadFailure.MISSING:
        return "missing"
    if exc.failure is ReadFailure.SYMLINK:
        return "a symbolic link"
    return f"refused ({exc.failure.value}: {exc.detail})"
