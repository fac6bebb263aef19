"""``Store`` in memory, recording what happened: the port fake for scheduler and operation tests.

It keeps :class:`adapters.store.files.FileStore`'s semantics (tests/contract/store/
runs the same behaviour against both): the squad's pinned ``task_ids`` decide which tasks exist,
a pinned task whose record is missing, corrupt, names another task or has lost its ledger
directory raises :class:`SquadIntegrityError` (here at once, where the file store's transaction
raises when the task is first used); a new task is pinned when its transaction commits;
a transaction's changes become visible on commit only, and a ``with`` body that raises commits
nothing. Each squad's read-modify-write runs under the same lock path as the file store's.

The parent-owned records (squad, tasks, mailboxes, message history, observations) live here;
the child-writable ledger directories stay in the given ``FileSystem`` at the paths of
:class:`SquadLayout` (the auditor reads the read ledger there), so the store creates a new task's
ledger directory on commit, as the file store does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

import attrs

from adapters.store.files import FileStore
from adapters.store.pinned import load_pinned_tasks
from application.ports import FileSystem, LockFactory, SquadSnapshot, SquadTransaction, Store
from domain.attestation.grounding import Observation
from domain.errors import ErrorCode, NotFoundError, RecordError, SquadIntegrityError
from domain.squad.layout import SquadLayout
from domain.squad.messages import MailboxEntry, Message
from domain.squad.model import Squad, Task
from tests.fakes.locks import FakeLockFactory

_DIR_MODE = 0o700


@attrs.frozen
class CorruptTaskRecord:
    """Stands for a task record that no longer decodes (see :meth:`InMemoryStore.corrupt_task`)."""

    problem: str = "not a valid task record"


@attrs.frozen
class StoreCommit:
    """What one committed transaction wrote (a transaction that changed nothing is not one)."""

    squad_id: str
    squad: Squad | None
    """The squad record written, or ``None`` when it was unchanged."""
    tasks: tuple[Task, ...]
    pinned: tuple[str, ...]
    """Task ids this commit added to the pinned set."""
    mailboxes: Mapping[str, tuple[MailboxEntry, ...]]
    messages: tuple[tuple[str, Message], ...]


@attrs.frozen
class RecordedObservation:
    squad_id: str
    task_id: str
    observation: Observation


@attrs.frozen
class SquadRecords:
    """Every parent-owned record of one squad, comparable for before/after checks."""

    squad: Squad
    tasks: Mapping[str, Task | CorruptTaskRecord]
    mailboxes: Mapping[str, tuple[MailboxEntry, ...]]
    history: Mapping[str, tuple[Message, ...]]
    observations: Mapping[str, tuple[Observation, ...]]


@attrs.define
class _SquadState:
    squad: Squad
    tasks: dict[str, Task | CorruptTaskRecord] = attrs.field(factory=dict)
    mailboxes: dict[str, tuple[MailboxEntry, ...]] = attrs.field(factory=dict)
    history: dict[str, list[Message]] = attrs.field(factory=dict)
    observations: dict[str, list[Observation]] = attrs.field(factory=dict)


class InMemoryStore:
    """The squad store in memory over ``fs`` (ledger directories) under ``root``."""

    def __init__(self, *, fs: FileSystem, root: str, locks: LockFactory | None = None) -> None:
        self._fs = fs
        self._root = root
        self._locks: LockFactory = locks if locks is not None else FakeLockFactory()
        self._squads: dict[str, _SquadState] = {}
        # Squads whose own record no longer decodes (see :meth:`corrupt_squad`): the problem.
        self._unreadable: dict[str, str] = {}
        # Only the file store's path rules (ids, layout) are used: the same paths by design.
        self._paths = FileStore(fs=fs, locks=self._locks, root=root)
        # What happened, for tests to assert on.
        self.commits: list[StoreCommit] = []
        self.rolled_back: list[str] = []
        self.recorded: list[RecordedObservation] = []
        self.quarantines: list[tuple[str, str]] = []

    # ---- what a test arranges ---------------------------------------------------------------

    def seed(self, squad: Squad, tasks: Iterable[Task]) -> None:
        """Put ``squad`` and ``tasks`` in place as published (unrecorded), with the squad and
        ledger directories in the file system. The pinned set is ``squad.task_ids`` as given:
        a task outside it is stored but never loaded, a pinned one not given is missing."""
        layout = self.layout(squad.id)
        self._fs.ensure_dir(layout.squad_dir, _DIR_MODE)
        state = _SquadState(squad=squad)
        for task in tasks:
            self._fs.ensure_dir(layout.ledger_dir(task.id), _DIR_MODE)
            state.tasks[task.id] = task
        self._squads[squad.id] = state

    def lose_task(self, squad_id: str, task_id: str) -> None:
        """Simulate the loss of a task's record (it stays pinned)."""
        del self._state(squad_id).tasks[task_id]

    def corrupt_task(self, squad_id: str, task_id: str, problem: str = "not valid JSON") -> None:
        """Simulate a task record that no longer decodes."""
        self._state(squad_id).tasks[task_id] = CorruptTaskRecord(problem)

    def corrupt_squad(self, squad_id: str, problem: str = "not a valid squad record") -> None:
        """Simulate a ``squad.json`` that no longer decodes: the squad is no longer listed, it
        is named by ``unreadable_squad_ids``, and reading it raises ``RECORD_CORRUPT``."""
        self._state(squad_id)
        self._unreadable[squad_id] = problem

    def replace_record(self, squad_id: str, task_id: str, task: Task) -> None:
        """Overwrite the record stored for ``task_id`` behind the store's back (unrecorded);
        ``task.id`` may name another task, as a tampered ``task.json`` could."""
        self._state(squad_id).tasks[task_id] = task

    # ---- what a test inspects -----------------------------------------------------------------

    def records(self, squad_id: str) -> SquadRecords:
        state = self._state(squad_id)
        return SquadRecords(
            squad=state.squad,
            tasks=dict(state.tasks),
            mailboxes=dict(state.mailboxes),
            history={k: tuple(v) for k, v in state.history.items()},
            observations={k: tuple(v) for k, v in state.observations.items()},
        )

    def history(self, squad_id: str, task_id: str) -> tuple[Message, ...]:
        """The appended message history alone (no mailbox entries merged in)."""
        return tuple(self._state(squad_id).history.get(task_id, ()))

    # ---- Store ------------------------------------------------------------------------------

    @property
    def root(self) -> str:
        return self._root

    def layout(self, squad_id: str) -> SquadLayout:
        return self._paths.layout(squad_id)

    def squad_dir(self, squad_id: str) -> str:
        return self._paths.squad_dir(squad_id)

    def task_dir(self, squad_id: str, task_id: str) -> str:
        return self._paths.task_dir(squad_id, task_id)

    def _task_layout(self, squad_id: str, task_id: str) -> SquadLayout:
        self.task_dir(squad_id, task_id)  # validates both ids
        return self.layout(squad_id)

    def list_squad_ids(self) -> list[str]:
        return [squad.id for squad in self.list_squads()]

    def list_squads(self) -> list[Squad]:
        readable = [s for s in self._squads.values() if s.squad.id not in self._unreadable]
        ordered = sorted(readable, key=lambda s: (s.squad.created, s.squad.id))
        return [state.squad for state in ordered]

    def unreadable_squad_ids(self) -> list[str]:
        return sorted(self._unreadable)

    def _state(self, squad_id: str) -> _SquadState:
        self.squad_dir(squad_id)
        state = self._squads.get(squad_id)
        if state is None:
            raise NotFoundError(
                ErrorCode.SQUAD_NOT_FOUND,
                f"squad '{squad_id}' not found under {self._root}: check the id",
            )
        problem = self._unreadable.get(squad_id)
        if problem is not None:
            squad_file = self.layout(squad_id).squad_file
            raise RecordError(ErrorCode.RECORD_CORRUPT, f"{squad_file}: {problem}")
        return state

    def _load_tasks(self, state: _SquadState) -> dict[str, Task]:
        squad = state.squad

        def read_task(task_id: str) -> Task:
            record = state.tasks.get(task_id)
            if record is None:
                raise SquadIntegrityError(
                    squad.id, f"task '{task_id}' is pinned but its record is missing"
                )
            if isinstance(record, CorruptTaskRecord):
                raise SquadIntegrityError(squad.id, f"task '{task_id}': {record.problem}")
            return record

        return load_pinned_tasks(squad, self.layout(squad.id), self._fs, read_task)

    def snapshot(self, squad_id: str) -> SquadSnapshot:
        state = self._state(squad_id)
        return SquadSnapshot(squad=state.squad, tasks=self._load_tasks(state))

    def mailbox(self, squad_id: str, task_id: str) -> tuple[MailboxEntry, ...]:
        self._task_layout(squad_id, task_id)
        state = self._squads.get(squad_id)
        return () if state is None else state.mailboxes.get(task_id, ())

    def messages(self, squad_id: str, task_id: str) -> list[Message]:
        self._task_layout(squad_id, task_id)
        state = self._squads.get(squad_id)
        history = [] if state is None else list(state.history.get(task_id, ()))
        known = {m.id for m in history}
        extra = [e.message for e in self.mailbox(squad_id, task_id) if e.message.id not in known]
        return sorted([*history, *extra], key=lambda m: m.ts)

    def observations(self, squad_id: str, task_id: str) -> tuple[Observation, ...]:
        self._task_layout(squad_id, task_id)
        state = self._squads.get(squad_id)
        return () if state is None else tuple(state.observations.get(task_id, ()))

    @contextmanager
    def transaction(self, squad_id: str) -> Iterator[SquadTransaction]:
        with self._locks.lock(self.layout(squad_id).squad_lock, timeout=30.0):
            state = self._state(squad_id)
            work = _MemoryTransaction(self, state.squad, self._load_tasks(state))
            try:
                yield work
            except BaseException:
                self.rolled_back.append(squad_id)
                raise
            self._commit(state, work)

    def record_observation(self, squad_id: str, task_id: str, observation: Observation) -> None:
        self._task_layout(squad_id, task_id)
        self._state(squad_id).observations.setdefault(task_id, []).append(observation)
        self.recorded.append(RecordedObservation(squad_id, task_id, observation))

    def quarantine(self, squad_id: str, reason: str) -> None:
        with self._locks.lock(self.layout(squad_id).squad_lock, timeout=30.0):
            state = self._state(squad_id)
            if state.squad.quarantine != reason:
                state.squad = attrs.evolve(state.squad, quarantine=reason)
                self.quarantines.append((squad_id, reason))

    # ---- the commit -------------------------------------------------------------------------

    def _commit(self, state: _SquadState, work: _MemoryTransaction) -> None:
        """Write what differs from the stored records; new tasks are pinned, in put order."""
        squad, stored = work.squad, self._load_tasks(state)
        tasks = tuple(t for t in work.tasks.values() if stored.get(t.id) != t)
        pinned = tuple(t.id for t in tasks if t.id not in squad.task_ids)
        if pinned:
            squad = attrs.evolve(squad, task_ids=(*squad.task_ids, *pinned))
        mailboxes = {
            task_id: entries
            for task_id, entries in sorted(work.mailboxes.items())
            if entries != state.mailboxes.get(task_id, ())
        }
        commit = StoreCommit(
            squad_id=squad.id,
            squad=squad if squad != state.squad else None,
            tasks=tasks,
            pinned=pinned,
            mailboxes=mailboxes,
            messages=tuple(work.messages),
        )
        if not (commit.squad or commit.tasks or commit.mailboxes or commit.messages):
            return
        layout = self.layout(squad.id)
        for task in tasks:
            self._task_layout(squad.id, task.id)  # every id is checked before anything changes
        for task in tasks:
            if not self._fs.is_dir(layout.ledger_dir(task.id)):
                self._fs.make_dir_exclusive(layout.ledger_dir(task.id), _DIR_MODE)
            state.tasks[task.id] = task
        state.mailboxes.update(mailboxes)
        state.squad = squad
        for task_id, message in work.messages:
            state.history.setdefault(task_id, []).append(message)
        self.commits.append(commit)


@attrs.define
class _MemoryTransaction:
    """Working copies of the squad's records; the store diffs them against its own on commit."""

    store: InMemoryStore
    squad: Squad
    tasks: dict[str, Task]
    mailboxes: dict[str, tuple[MailboxEntry, ...]] = attrs.field(factory=dict)
    messages: list[tuple[str, Message]] = attrs.field(factory=list)

    def put_squad(self, squad: Squad) -> None:
        if squad.id != self.squad.id:
            raise ValueError("a transaction changes only its own squad")
        self.squad = squad

    def put_task(self, task: Task) -> None:
        self.tasks[task.id] = task

    def mailbox(self, task_id: str) -> tuple[MailboxEntry, ...]:
        if task_id not in self.mailboxes:
            self.mailboxes[task_id] = self.store.mailbox(self.squad.id, task_id)
        return self.mailboxes[task_id]

    def put_mailbox(self, task_id: str, entries: tuple[MailboxEntry, ...]) -> None:
        self.mailboxes[task_id] = entries

    def append_message(self, task_id: str, message: Message) -> None:
        self.messages.append((task_id, message))


_conforms: type[Store] = InMemoryStore
_transaction_conforms: type[SquadTransaction] = _MemoryTransaction
