"""The squad scheduler: what runs, what is accepted, and recovery (upstream §4, contract §10).

One ``Scheduler`` drives one squad from one process. It holds the children it spawned and
processes their events on the caller's thread (``pump``); the durable truth is the store, so
every decision re-reads it inside a squad transaction and a restarted process carries on from
there. Completion is never accepted without ``validate_task_attestation``.

The parts, one job each, share a ``SchedulerContext``: ``ChildEventRecorder`` (what a child's
stream says), ``Settlement`` (accepting, rejecting and retrying), ``Recovery`` (the repairs of
a reconcile pass), ``Spawner`` (starting ready tasks) and ``check_completion`` (review gate).
"""

from __future__ import annotations

import queue
from collections.abc import Callable

import attrs

from application.attestation_check import AttestationAuditor
from application.ports import (
    AgentDirectory,
    AssistantText,
    ChildEvent,
    ChildRuntime,
    Clock,
    Exited,
    FileWitnesses,
    Ids,
    IsolationSupport,
    OutputProgress,
    SessionBound,
    Settled,
    SquadSnapshot,
    Store,
    TempDirs,
    ToolCallsRequested,
    ToolResultSeen,
    ToolStarted,
)
from application.squads.scheduler.advising import AdvisorEvent, Advisors
from application.squads.scheduler.budgets import RetryBudgets
from application.squads.scheduler.child_events import ChildEventRecorder
from application.squads.scheduler.completion import check_completion
from application.squads.scheduler.context import Notice, SchedulerContext
from application.squads.scheduler.live_children import LiveChild, stop_all, stop_orphans
from application.squads.scheduler.monitoring import ChildMonitor
from application.squads.scheduler.recovery import Recovery
from application.squads.scheduler.settlement import DEFAULT_BACKOFF, Settlement
from application.squads.scheduler.spawning import NO_ISOLATION, Spawner
from domain.errors import SquadIntegrityError
from domain.squad.advisor import AdvisorSettings
from domain.squad.model import TaskStatus
from domain.squad.monitor import MonitorPolicy
from domain.squad.transitions import move_task


def _ignore(_notice: Notice) -> None:
    return None


@attrs.define(kw_only=True, eq=False)
class Scheduler:
    squad_id: str
    _store: Store
    _auditor: AttestationAuditor
    _runtime: ChildRuntime
    _agents: AgentDirectory
    _clock: Clock
    _ids: Ids
    _notices: Callable[[Notice], None] | None = None
    _backoff: tuple[float, ...] = DEFAULT_BACKOFF
    _reconcile_interval: float = 5.0
    _default_provider: str | None = None
    _default_model: str | None = None
    _isolation: IsolationSupport = NO_ISOLATION
    _require_isolation: bool = False
    _monitor_policy: MonitorPolicy = attrs.field(factory=MonitorPolicy)
    # The monitor's advisor for escalations (``PI_SQUAD_ADVISOR_MODEL``); ``None``: none, and
    # no advisor child is ever spawned. Its session lives in one of ``temp_dirs``.
    _advisor: AdvisorSettings | None = None
    _temp_dirs: TempDirs | None = None
    # What lets a pass skip re-auditing a done task whose files provably did not change;
    # ``None`` audits every done task on every pass.
    _witnesses: FileWitnesses | None = None
    live: dict[str, LiveChild] = attrs.field(init=False, factory=dict)
    # ``None`` is a wake-up (``wake``), not an event.
    _events: queue.Queue[ChildEvent | AdvisorEvent | None] = attrs.field(
        init=False, factory=queue.Queue
    )
    _budgets: RetryBudgets = attrs.field(init=False, factory=RetryBudgets)
    _next_reconcile: float = attrs.field(init=False, default=0.0)
    _records_quarantine: str | None = attrs.field(init=False, default=None)
    _context: SchedulerContext = attrs.field(init=False)
    _recorder: ChildEventRecorder = attrs.field(init=False)
    _settlement: Settlement = attrs.field(init=False)
    _recovery: Recovery = attrs.field(init=False)
    _spawner: Spawner = attrs.field(init=False)
    _monitor: ChildMonitor = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        context = SchedulerContext(
            squad_id=self.squad_id,
            store=self._store,
            clock=self._clock,
            ids=self._ids,
            notify=self._notices or _ignore,
        )
        self._context = context
        self._recorder = ChildEventRecorder(context, self._auditor)
        self._settlement = Settlement(context, self._auditor, self._budgets, self._backoff)
        self._recovery = Recovery(context, self._auditor, self.live, self._witnesses)
        advisors = None
        if self._advisor is not None:
            if self._temp_dirs is None:
                raise ValueError("an advisor needs temp_dirs for its session")
            advisors = Advisors(
                context, self._runtime, self._advisor, self._temp_dirs, self._events.put
            )
        self._monitor = ChildMonitor(context, self._monitor_policy, advisors)
        self._spawner = Spawner(
            context=context,
            runtime=self._runtime,
            agents=self._agents,
            budgets=self._budgets,
            live=self.live,
            sink=self.sink,
            isolation=self._isolation,
            require_isolation=self._require_isolation,
            default_provider=self._default_provider,
            default_model=self._default_model,
        )

    # -- events -------------------------------------------------------------------------------

    def sink(self, event: ChildEvent) -> None:
        """Where children deliver events, from any thread."""
        self._events.put(event)

    def wake(self) -> None:
        """End a ``pump`` that is waiting, from any thread (its caller then looks again, e.g.
        at a stop request); nothing is handled or reconciled for it."""
        self._events.put(None)

    def next_deadline(self) -> float:
        """The monotonic time of the next thing due without any event: the periodic reconcile,
        a held retry, or one of the monitor's deadlines for the live children."""
        return min(self._reconcile_due(), self._monitor.next_deadline(self.live))

    def _reconcile_due(self) -> float:
        """The periodic tick, or a held retry once it falls due. A retry that fell due before
        the last reconcile was already offered (it waits for a free slot): the next tick or
        event offers it again, so it is no deadline and an idle driver never spins on it."""
        retry = self._budgets.next_due()
        if retry <= self._next_reconcile - self._reconcile_interval:
            retry = float("inf")
        return min(self._next_reconcile, retry)

    def pump(self, timeout: float | None = 0.0) -> int:
        """Handle every queued event, waiting for the first up to ``timeout`` seconds and never
        past ``next_deadline`` (``None``: until then); reconcile after. Nothing polls: the wait
        ends on a child's event, a ``wake`` or the deadline, whichever comes first."""
        wait = max(0.0, self.next_deadline() - self._clock.monotonic())
        if timeout is not None:
            wait = min(wait, timeout)
        handled = 0
        try:
            event = self._events.get(timeout=wait) if wait > 0 else self._events.get_nowait()
        except queue.Empty:
            self._watch_children()
            # Reconcile on the periodic tick, or as soon as a held retry becomes due.
            if self._clock.monotonic() >= self._reconcile_due():
                self.reconcile()
            return 0
        try:
            while True:
                if event is not None:
                    self.handle(event)
                    handled += 1
                try:
                    event = self._events.get_nowait()
                except queue.Empty:
                    break
        except SquadIntegrityError as exc:
            self.quarantine_records(exc)
            return handled
        if handled == 0:
            return 0  # only woken
        self._watch_children()
        self.reconcile()
        return handled

    def _watch_children(self) -> None:
        """The monitor's quiet and ceiling checks (``domain/squad/monitor.py``)."""
        try:
            self._monitor.tick(self.live)
        except SquadIntegrityError as exc:
            self.quarantine_records(exc)

    def _current(self, task_id: str, child_id: str) -> LiveChild | None:
        live = self.live.get(task_id)
        return live if live is not None and live.handle.child_id == child_id else None

    def handle(self, event: ChildEvent | AdvisorEvent) -> None:
        if isinstance(event, AdvisorEvent):  # never a task's own event
            self._monitor.advice_event(event, self.live)
            return
        live = self._current(event.task_id, event.child_id)
        if isinstance(event, SessionBound):
            bound = self._recorder.bind_session(event)
            if live is not None:
                # Reads are observed in the reported session only once it is the task's own.
                live.session_file = event.session_file if bound else None
                self._monitor.event(live)
            return
        if live is None:
            return  # a replaced or killed child: its late events change nothing
        if isinstance(event, Settled):
            del self.live[event.task_id]
            self._settlement.settle(event)
            return
        if isinstance(event, Exited):
            del self.live[event.task_id]
            if event.unexpected:
                self._settlement.unexpected_exit(event)
            return
        if isinstance(event, OutputProgress):
            self._monitor.output(live, event, self.live)
            return
        self._monitor.event(live)
        if isinstance(event, AssistantText):
            self._recorder.record_text(event)
        elif isinstance(event, ToolCallsRequested):
            self._recorder.remember_arguments(live, event)
            self._monitor.calls(live, event)
        elif isinstance(event, ToolResultSeen):
            self._recorder.observe_result(live, event)
        elif isinstance(event, ToolStarted):
            self._recorder.tool_started(live, event)

    # -- reconcile ----------------------------------------------------------------------------

    def reconcile(self) -> None:
        """One level-triggered pass; safe to repeat; correct after any crash."""
        self._next_reconcile = self._clock.monotonic() + self._reconcile_interval
        try:
            self._reconcile()
        except SquadIntegrityError as exc:
            self.quarantine_records(exc)

    def quarantine_records(self, failure: SquadIntegrityError) -> None:
        """A pinned task's records are gone or forged: stop every child, accept nothing."""
        stop_all(self.live)
        self._monitor.close()
        error = f"Task records failed the integrity check: {failure.reason}"
        self._store.quarantine(self.squad_id, error)
        if self._records_quarantine != error:
            self._records_quarantine = error
            self._context.notify(Notice("quarantine", self.squad_id, error))

    def _reconcile(self) -> None:
        self._budgets.apply_durable_resets(self._store, self.squad_id)
        # One transaction reads the squad and its tasks once for the whole pass: the integrity
        # check, the repairs, and (as committed) what the spawner and the review gate decide
        # from; each spawn and the review gate re-check under the lock before they write.
        with self._store.transaction(self.squad_id) as tx:
            # Children whose task another process paused, cancelled or re-blocked stop first.
            stop_orphans(self.live, tx.tasks)
            healthy = self._recovery.repair(tx)
            after = SquadSnapshot(squad=tx.squad, tasks=dict(tx.tasks))
        if not healthy:
            return
        # Children whose tasks this pass re-blocked or reopened stop now, freeing their slots.
        stop_orphans(self.live, after.tasks)
        # And an advisor asked about a child stopped now ends with it, before a drive returns.
        self._monitor.advice_tick(self.live)
        # A task this pass started is in progress: neither the review gate nor a failure can
        # be due until it ends, and its end is handled (and reconciled) as an event.
        if self._spawner.schedule(after) == 0:
            check_completion(self._context, self._auditor, after)

    # -- budgets and stopping -----------------------------------------------------------------

    def reset_budgets(self, task_id: str) -> None:
        """``resume_task`` gives a task fresh spawn-retry and attestation-rejection budgets."""
        self._budgets.reset(task_id)

    def stop(self) -> None:
        """Kill every child; their tasks become suspended (resumable on the same session)."""
        self._monitor.close()
        live_ids = stop_all(self.live)
        if not live_ids:
            return
        try:
            with self._store.transaction(self.squad_id) as tx:
                for task_id in live_ids:
                    task = tx.tasks.get(task_id)
                    if task is not None and task.status is TaskStatus.IN_PROGRESS:
                        tx.put_task(move_task(task, TaskStatus.SUSPENDED))
        except SquadIntegrityError as failure:
            self.quarantine_records(failure)  # the children are already stopped
