"""Driving one squad from one process until it needs a person (review, failure, pause).

Exactly one process drives a squad at a time: the driver holds the squad's driver lock for
as long as it runs, so a second process (another ``pi-squad run``, a main Pi session) cannot
spawn the same tasks. The lock is released by the operating system if the driver dies; the
next driver's first reconcile then resumes lost work on the same sessions.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from application.ports import LockFactory, SquadSnapshot, Store
from application.squads.scheduler import Scheduler
from domain.errors import ErrorCode, SquadIntegrityError, SquadOperationError
from domain.squad.model import Squad, SquadStatus, TaskStatus

STOP_STATUSES = frozenset(
    {SquadStatus.REVIEW, SquadStatus.DONE, SquadStatus.FAILED, SquadStatus.PAUSED}
)


@attrs.frozen
class DriveOutcome:
    snapshot: SquadSnapshot
    reason: str


def stalled(snapshot: SquadSnapshot, live: int) -> bool:
    """Nothing runs and nothing can: only suspended, failed or blocked work remains."""
    if live:
        return False
    statuses = {t.status for t in snapshot.tasks.values()}
    return not statuses & {TaskStatus.PENDING, TaskStatus.IN_PROGRESS}


def refuse_flow_brief(squad: Squad) -> None:
    """An attested flow's squad holds its brief and its runs' proof records; its children are
    the flow's to start, never a squad driver's (it would start them with a squad's prompts)."""
    if squad.flow_id is not None:
        raise SquadOperationError(
            ErrorCode.OPERATION_REFUSED,
            f"squad '{squad.id}' holds the brief of attested flow {squad.flow_id}: its runs "
            "belong to that flow and are never driven as a squad; check their proof with "
            f"`pi-squad verify {squad.id}`, or run the flow call again",
        )


def drive_squad(
    scheduler: Scheduler,
    *,
    store: Store,
    locks: LockFactory,
    poll_seconds: float | None = None,
    on_progress: Callable[[SquadSnapshot], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> DriveOutcome:
    """Drive until the squad stops, nothing can run, or ``should_stop`` says so.

    Event-driven: each turn waits in ``Scheduler.pump`` for a child's event, a ``wake`` (how a
    stop request is delivered at once) or the scheduler's next deadline (its periodic
    reconcile, a held retry, the monitor's idle and ceiling deadlines), then reads the squad
    once. ``poll_seconds`` caps that wait, for a caller that must look more often (a live
    view's clock); ``None``, the default, sleeps until the next deadline. Changes another
    process makes to the squad are seen on the next turn (at the latest the periodic
    reconcile, every few seconds).
    """
    squad_id = scheduler.squad_id
    lock_path = store.layout(squad_id).driver_lock
    with locks.try_lock(lock_path) as taken:
        if not taken:
            raise SquadOperationError(
                ErrorCode.SQUAD_BUSY,
                f"squad '{squad_id}' is already being driven by another process; "
                "use `pi-squad status` or `pi-squad watch` to follow it",
            )
        refuse_flow_brief(store.snapshot(squad_id).squad)
        try:
            scheduler.reconcile()
            while True:
                # The squad is judged before each wait, so a squad the first reconcile already
                # stopped (or finished) is returned at once, not after the first wake.
                snapshot = store.snapshot(squad_id)
                if on_progress is not None:
                    on_progress(snapshot)
                if snapshot.squad.status in STOP_STATUSES:
                    return DriveOutcome(snapshot, str(snapshot.squad.status))
                if snapshot.squad.quarantine is not None and not scheduler.live:
                    return DriveOutcome(snapshot, "quarantined")
                if stalled(snapshot, len(scheduler.live)):
                    return DriveOutcome(snapshot, "stalled")
                if should_stop is not None and should_stop():
                    scheduler.stop()
                    return DriveOutcome(store.snapshot(squad_id), "interrupted")
                scheduler.pump(timeout=poll_seconds)
        except SquadIntegrityError as failure:
            # The loop's own read found a pinned record gone: quarantine (children stopped,
            # recorded on squad.json) before the coded error reaches the caller.
            scheduler.quarantine_records(failure)
            raise
        except BaseException:
            # Ctrl-C or a crash of the driver: children are stopped and their tasks suspended,
            # so the next driver resumes them on their sessions.
            scheduler.stop()
            raise
