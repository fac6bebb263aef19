"""A workflow's host (``domain.flows.workflow_state.WorkflowHost``) over the file-system port,
the clock and the session's person: the state file read whole through one pinned descriptor,
written by the project's atomic write (a same-directory ``0600`` temp file, fsync, replace,
fsync of the directory) under owner-only directories (``0700``)."""

from __future__ import annotations

import posixpath

import attrs

from application.flows.checkpoints import Confirm
from application.ports import Clock, FileSystem, ReadFailure, StableReadError
from domain.flows.workflow_state import StateInvalid

STATE_DIR_MODE = 0o700
# A state holds at most 12 phases' capped outputs and envelopes (50 KiB each) and receipts.
MAX_STATE_BYTES = 4 * 1024 * 1024
# Who granted an approval, as the receipt records it: the person at the session's UI.
SESSION_ACTOR = "session-user"


@attrs.frozen
class WorkflowFiles:
    """The host of one flow call: relative state paths resolve against ``cwd`` (the flow's
    working directory); ``confirm`` asks the person (``None``: nobody can be asked)."""

    fs: FileSystem
    clock: Clock
    cwd: str
    confirm: Confirm | None = None
    actor: str = SESSION_ACTOR

    def _path(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.cwd, path))

    def load(self, path: str) -> bytes | None:
        where = self._path(path)
        try:
            return self.fs.read_stable(where, max_bytes=MAX_STATE_BYTES).data
        except StableReadError as exc:
            if exc.failure is ReadFailure.MISSING:
                return None
            raise StateInvalid(f"it could not be read ({exc.failure.value})") from None

    def save(self, path: str, data: bytes) -> None:
        where = self._path(path)
        try:
            self.fs.ensure_dir(posixpath.dirname(where), STATE_DIR_MODE)
            self.fs.write_atomic(where, data)
        except (OSError, ValueError) as exc:
            raise StateInvalid(f"it could not be written ({type(exc).__name__})") from None

    def now_ms(self) -> int:
        return int(self.clock.now().timestamp() * 1000)

    def ask(self, title: str, message: str) -> bool | None:
        return None if self.confirm is None else self.confirm(title, message)
