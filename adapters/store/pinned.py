"""The pinned task set of one squad as a mapping that reads each record when it is first asked
for, with every integrity check of the eager load, so that a transaction pays for the records
its decision depends on, not for all of them (one record check per pinned task per transaction
made the scheduler quadratic in the task count)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from application.ports import FileSystem
from domain.errors import SquadIntegrityError
from domain.squad.ids import SAFE_TASK_ID_PATTERN, reserved_task_id_problem
from domain.squad.layout import SquadLayout
from domain.squad.model import Squad, Task


class PinnedTasks(Mapping[str, Task]):
    """Exactly the pinned tasks of ``squad`` (plus any the holder ``put``), each read by
    ``read_task`` on first access and kept for the mapping's life.

    Every pinned id is checked to be path-safe at once (no I/O; ``ids_checked`` when the caller
    already checked this very tuple). A record is checked when it is
    read: its ledger directory must exist, ``read_task`` raises ``SquadIntegrityError`` for a
    record that is missing or unreadable, and it must name its own task. Iterating the keys
    reads nothing; ``values``, ``items``, ``get``, ``in`` and ``dict(...)`` read (and so check)
    every record they return or test, so a decision never rests on an unchecked record.
    """

    def __init__(
        self,
        squad: Squad,
        ledger_dir: Callable[[str], str],
        fs: FileSystem,
        read_task: Callable[[str], Task],
        *,
        ids_checked: bool = False,
    ) -> None:
        if not ids_checked:
            check_pinned_ids(squad)
        self._squad_id = squad.id
        self._ledger_dir = ledger_dir
        self._fs = fs
        self._read_task = read_task
        self._order: list[str] = list(dict.fromkeys(squad.task_ids))
        self._pinned = frozenset(self._order)
        self._loaded: dict[str, Task] = {}

    def __getitem__(self, task_id: str) -> Task:
        task = self._loaded.get(task_id)
        if task is not None:
            return task
        if task_id not in self._pinned:
            raise KeyError(task_id)
        task = self._load(task_id)
        self._loaded[task_id] = task
        return task

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def put(self, task: Task) -> None:
        """Hold ``task`` as its id's value from now on (a new id joins the end)."""
        if task.id not in self._pinned and task.id not in self._loaded:
            self._order.append(task.id)
        self._loaded[task.id] = task

    def _load(self, task_id: str) -> Task:
        if not self._fs.is_dir(self._ledger_dir(task_id)):
            raise SquadIntegrityError(
                self._squad_id, f"task '{task_id}' is pinned but its directory is missing"
            )
        task = self._read_task(task_id)
        if task.id != task_id:
            raise SquadIntegrityError(
                self._squad_id, f"the record of task '{task_id}' names another task"
            )
        return task


def check_pinned_ids(squad: Squad) -> None:
    """Every pinned id can name a directory (a record path is only ever built from these)."""
    for task_id in squad.task_ids:
        if not SAFE_TASK_ID_PATTERN.match(task_id) or reserved_task_id_problem(task_id):
            raise SquadIntegrityError(squad.id, f"pinned task id {task_id!r} is not path-safe")


def load_pinned_tasks(
    squad: Squad, layout: SquadLayout, fs: FileSystem, read_task: Callable[[str], Task]
) -> dict[str, Task]:
    """Exactly the pinned tasks, each read by ``read_task`` now; any gap is an integrity failure.

    ``read_task`` raises ``SquadIntegrityError`` for a record that is missing or unreadable;
    the test store's fake reads its records through the same checks.
    """
    pinned = PinnedTasks(squad, layout.ledger_dir, fs, read_task)
    return {task_id: pinned[task_id] for task_id in pinned}
