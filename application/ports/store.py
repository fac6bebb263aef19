"""The durable squad store: squads and tasks under one root, their codec, and transactions."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Protocol

import attrs

from domain.attestation.grounding import Observation
from domain.squad.layout import SquadLayout
from domain.squad.messages import MailboxEntry, Message
from domain.squad.model import Squad, Task

__all__ = ["SquadCodec", "SquadSnapshot", "SquadTransaction", "Store"]


class SquadCodec(Protocol):
    """The persisted form of squads and tasks."""

    def encode_squad(self, squad: Squad) -> bytes: ...

    def encode_task(self, task: Task) -> bytes: ...

    def decode_squad(self, data: bytes) -> Squad: ...

    def decode_task(self, data: bytes) -> Task: ...


class SquadTransaction(Protocol):
    """A locked read-modify-write of one squad: records changed here are written atomically
    when the transaction ends without an exception; nothing is written otherwise."""

    @property
    def squad(self) -> Squad: ...

    @property
    def tasks(self) -> Mapping[str, Task]:
        """The pinned tasks (and any put here). A store may read each record when it is first
        used rather than at the start, but never returns one unchecked: using a pinned task
        whose record is missing, corrupt or names another task, or whose ledger directory is
        gone, raises ``SquadIntegrityError`` (iterating the values checks every one)."""
        ...

    def put_squad(self, squad: Squad) -> None: ...

    def put_task(self, task: Task) -> None: ...

    def mailbox(self, task_id: str) -> tuple[MailboxEntry, ...]: ...

    def put_mailbox(self, task_id: str, entries: tuple[MailboxEntry, ...]) -> None: ...

    def append_message(self, task_id: str, message: Message) -> None:
        """Appended when the transaction commits (after the records it explains)."""
        ...


@attrs.frozen
class SquadSnapshot:
    squad: Squad
    tasks: Mapping[str, Task]


class Store(Protocol):
    """Squads under one root, in the upstream layout."""

    @property
    def root(self) -> str: ...

    def squad_dir(self, squad_id: str) -> str: ...

    def layout(self, squad_id: str) -> SquadLayout:
        """Every path of the squad's directory (``SQUAD_NOT_FOUND`` for an invalid id)."""
        ...

    def task_dir(self, squad_id: str, task_id: str) -> str: ...

    def list_squad_ids(self) -> list[str]:
        """Published squads (never staging directories), oldest first."""
        ...

    def list_squads(self) -> list[Squad]:
        """The records of :meth:`list_squad_ids`' squads, in that order, without their tasks:
        enough to choose which squads to read in full."""
        ...

    def unreadable_squad_ids(self) -> list[str]:
        """Squads that :meth:`list_squad_ids` leaves out because their own record
        (``squad.json``) is unreadable, corrupt or names another squad, sorted by id; their
        :meth:`snapshot` raises the error that says why."""
        ...

    def snapshot(self, squad_id: str) -> SquadSnapshot:
        """The squad and its tasks as last committed; ``NotFoundError`` if absent."""
        ...

    def transaction(self, squad_id: str) -> AbstractContextManager[SquadTransaction]: ...

    def messages(self, squad_id: str, task_id: str) -> list[Message]:
        """History plus mailbox entries not yet in it, sorted by time; torn tails skipped."""
        ...

    def mailbox(self, squad_id: str, task_id: str) -> tuple[MailboxEntry, ...]: ...

    def observations(self, squad_id: str, task_id: str) -> tuple[Observation, ...]:
        """The parent's own record of the task's children (spawns, verified deliveries)."""
        ...

    def record_observation(self, squad_id: str, task_id: str, observation: Observation) -> None:
        """Append durably to that record; only the parent ever writes it."""
        ...

    def quarantine(self, squad_id: str, reason: str) -> None:
        """Record a quarantine on the squad alone (used when its tasks cannot be loaded)."""
        ...
