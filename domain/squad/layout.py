"""Where every record of a squad lives under the squad root, and who may write it.

The split follows the trust boundary (docs/architecture.md, "Trust boundary"). A child agent
may write only beneath its task's *ledger directory* ``<squad>/<task>/``: the contract fixes
its read ledger there (``spec-read-{state,attestation}.json``, §9) and Pi writes its session
beneath it. Landlock grants file creation and renaming per directory, so nothing that decides
acceptance may share that directory: the parent-owned records of a task (``task.json``,
``messages.jsonl``, ``mailbox.json`` and the parent's own observations of the child,
``observed.jsonl``) live in ``<squad>/.records/<task>/``, which no child can write.

Pure: names and joins only, for a given path flavour.
"""

from __future__ import annotations

from typing import Final

import attrs

from domain import paths
from domain.paths import PathFlavour

SQUAD_FILE: Final = "squad.json"
SQUAD_LOCK: Final = ".squad.lock"
DRIVER_LOCK: Final = ".driver.lock"
REPORT_DIR: Final = ".report"
REPORT_NAME: Final = "report.md"
CANONICAL_DIR: Final = paths.CANONICAL_DIR
CANONICAL_NAME: Final = paths.CANONICAL_NAME
RECORDS_DIR: Final = ".records"
TASK_FILE: Final = "task.json"
MESSAGES_FILE: Final = "messages.jsonl"
MAILBOX_FILE: Final = "mailbox.json"
OBSERVED_FILE: Final = "observed.jsonl"
SESSION_DIR: Final = "session"


@attrs.frozen
class SquadLayout:
    """The paths of one squad under one squad root."""

    root: str
    squad_id: str
    flavour: PathFlavour

    def _join(self, *names: str) -> str:
        return paths.join_path(self.root, self.squad_id, *names, flavour=self.flavour)

    @property
    def squad_dir(self) -> str:
        return self._join()

    @property
    def squad_file(self) -> str:
        return self._join(SQUAD_FILE)

    @property
    def squad_lock(self) -> str:
        return self._join(SQUAD_LOCK)

    @property
    def report_file(self) -> str:
        """Where ``/squad report`` writes the evidence pack (outputs beside it)."""
        return self._join(REPORT_DIR, REPORT_NAME)

    @property
    def driver_lock(self) -> str:
        """Held by whichever process drives the squad's children (``application.squads.drive``)."""
        return self._join(DRIVER_LOCK)

    @property
    def canonical(self) -> str:
        return self._join(CANONICAL_DIR, CANONICAL_NAME)

    @property
    def records_root(self) -> str:
        return self._join(RECORDS_DIR)

    # -- a task's parent-owned records ------------------------------------------------------

    def records_dir(self, task_id: str) -> str:
        return self._join(RECORDS_DIR, task_id)

    def task_file(self, task_id: str) -> str:
        return self._join(RECORDS_DIR, task_id, TASK_FILE)

    def messages_file(self, task_id: str) -> str:
        return self._join(RECORDS_DIR, task_id, MESSAGES_FILE)

    def mailbox_file(self, task_id: str) -> str:
        return self._join(RECORDS_DIR, task_id, MAILBOX_FILE)

    def observed_file(self, task_id: str) -> str:
        return self._join(RECORDS_DIR, task_id, OBSERVED_FILE)

    # -- a task's child-writable ledger directory ---------------------------------------------

    def ledger_dir(self, task_id: str) -> str:
        return self._join(task_id)

    def session_dir(self, task_id: str) -> str:
        return self._join(task_id, SESSION_DIR)

    def session_file_problem(self, task_id: str, session_file: str) -> str | None:
        """Why ``session_file`` cannot be the session of ``task_id``, or ``None``: it must be a
        file directly in the task's own session directory, spelled exactly as that directory
        joined with one plain name (how Pi names the file it creates under ``--session-dir``),
        never a path that only normalises there (``..`` through a link lands elsewhere)."""
        directory = self.session_dir(task_id)
        separator = "/" if self.flavour == "posix" else "\\"
        name = session_file.rsplit(separator, 1)[-1]
        try:
            expected = paths.join_path(directory, name, flavour=self.flavour)
        except ValueError:
            expected = None
        if expected == session_file:
            return None
        shown = repr(session_file[:_SHOWN_PATH_CHARS])
        cut = "..." if len(session_file) > _SHOWN_PATH_CHARS else ""
        return (
            f"the session file {shown}{cut} is not a file directly in the task's own session "
            f"directory {directory}"
        )


# A path from a child's stream is shown in a reason only this far.
_SHOWN_PATH_CHARS = 200
