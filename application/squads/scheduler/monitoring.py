"""The monitor at work in one squad's scheduler: every event of a live child resets its quiet
time, every tool call it requests is checked for repeats, and every pump checks the quiet and
the runtime ceiling. Each action (steer, escalation, stop) is written into the task's history
and onto its record (``Task.monitor``, shown by status), and an escalation or a stop is told to
the orchestrator.

With an advisor (``PI_SQUAD_ADVISOR_MODEL``, ``application/squads/scheduler/advising.py``) an
escalation first asks it for one steering sentence: its answer is steered into the stuck child
instead of telling the orchestrator; if it fails, times out or the steer is refused, the
orchestrator is told as without one. Every step is recorded the same way."""

from __future__ import annotations

import attrs

from application.ports import OutputProgress, ToolCallsRequested
from application.squads.scheduler.advising import AdviceOutcome, AdvisorEvent, Advisors
from application.squads.scheduler.context import Notice, SchedulerContext
from application.squads.scheduler.live_children import LiveChild
from domain.squad.messages import MessageKind
from domain.squad.model import TaskStatus
from domain.squad.monitor import (
    STEER_PREFIX,
    ChildWatch,
    MonitorAction,
    MonitorMove,
    MonitorPolicy,
    MonitorReason,
    next_deadline,
    on_call,
    on_event,
    on_output,
    on_tick,
    watch_started,
)
from domain.squad.transitions import move_task


@attrs.define(eq=False)
class ChildMonitor:
    _context: SchedulerContext
    _policy: MonitorPolicy
    # ``None``: no advisor (the default); escalations go straight to the orchestrator.
    _advisors: Advisors | None = None

    def _watch(self, live: LiveChild, now: float) -> ChildWatch:
        if live.watch is None:
            live.watch = watch_started(now)
        return live.watch

    def event(self, live: LiveChild) -> None:
        now = self._context.clock.monotonic()
        live.watch = on_event(self._watch(live, now), now)
        live.advised_at = None

    def calls(self, live: LiveChild, event: ToolCallsRequested) -> None:
        now = self._context.clock.monotonic()
        live.advised_at = None
        watch = self._watch(live, now)
        for call in event.calls:
            watch, action = on_call(watch, call.tool_name, call.arguments, now, self._policy)
            live.watch = watch
            if action is not None:
                self._act(live, action)

    def output(
        self, live: LiveChild, event: OutputProgress, live_children: dict[str, LiveChild]
    ) -> None:
        """A streamed piece of a message: the child is stopped past the size bound."""
        now = self._context.clock.monotonic()
        watch, action = on_output(self._watch(live, now), event.message_bytes, now, self._policy)
        live.watch = watch
        if action is not None:
            self._stop(live, action, live_children)

    def tick(self, live_children: dict[str, LiveChild]) -> None:
        now = self._context.clock.monotonic()
        for live in list(live_children.values()):
            watch, action = on_tick(self._watch(live, now), now, self._policy)
            live.watch = watch
            if action is None:
                continue
            if action.move is MonitorMove.STOP:
                self._stop(live, action, live_children)
            else:
                self._act(live, action)
        for live in list(live_children.values()):
            if live.advised_at is not None and now >= live.advised_at + self._advice_grace:
                self._advice_ignored(live, now)
        self.advice_tick(live_children)

    @property
    def _advice_grace(self) -> float:
        """How long an advised child may stay quiet: the gap between the idle steer and the
        escalation, as for the monitor's own steer."""
        return self._policy.idle_escalate - self._policy.idle_steer

    def _advice_ignored(self, live: LiveChild, now: float) -> None:
        """The advisor's steer changed nothing: the orchestrator is told, once, so an advisor
        never leaves a stuck child unreported."""
        live.advised_at = None
        quiet = 0.0 if live.watch is None else now - live.watch.last_event_at
        text = (
            f"no event from the child for {quiet:.0f} s, not even after the advisor's steer: it "
            "may be stuck; check it (pi-squad status), message it, or pause_task it"
        )
        reason = MonitorReason.IDLE_ESCALATION
        if self._record(live.task_id, f"escalated ({reason}): {text}"):
            context = self._context
            context.notify(
                Notice("escalation", context.squad_id, f"{live.task_id}: {text}", live.task_id)
            )

    def advice_tick(self, live_children: dict[str, LiveChild]) -> None:
        """Advisors past their timeout, or whose stuck child is gone, end here."""
        if self._advisors is not None:
            for outcome in self._advisors.tick(live_children):
                self._advised(outcome, live_children)

    def advice_event(self, event: AdvisorEvent, live_children: dict[str, LiveChild]) -> None:
        if self._advisors is not None:
            outcome = self._advisors.event(event)
            if outcome is not None:
                self._advised(outcome, live_children)

    def close(self) -> None:
        """The scheduler stops: so do its advisors (nothing is recorded: the tasks they were
        asked about are being suspended)."""
        if self._advisors is not None:
            self._advisors.close()

    def next_deadline(self, live_children: dict[str, LiveChild]) -> float:
        """When ``tick`` next has something to do (infinity: never, until an event); a child
        not watched yet is due now, so that its watch starts."""
        now = self._context.clock.monotonic()
        earliest = float("inf")
        for live in live_children.values():
            if live.watch is None:
                return now
            deadline = next_deadline(live.watch, self._policy)
            if deadline is not None:
                earliest = min(earliest, deadline)
            if live.advised_at is not None:
                earliest = min(earliest, live.advised_at + self._advice_grace)
        if self._advisors is not None:
            earliest = min(earliest, self._advisors.next_deadline())
        return earliest

    def _stop(
        self, live: LiveChild, action: MonitorAction, live_children: dict[str, LiveChild]
    ) -> None:
        # Forgotten first: its exit is then a stopped child's, never retried.
        live.session.kill()
        live_children.pop(live.task_id, None)
        self._act(live, action)

    def _act(self, live: LiveChild, action: MonitorAction) -> None:
        context = self._context
        told = action.text  # what the orchestrator hears of an escalation or a stop
        if action.move is MonitorMove.STEER:
            delivered = live.handle.steer(action.text)
            note = f"steered ({action.reason})" + ("" if delivered else ", not delivered")
        elif action.move is MonitorMove.ESCALATE:
            advisors = self._advisors
            if advisors is not None and not advisors.asking(live.task_id):
                watch = live.watch
                quiet = 0.0 if watch is None else context.clock.monotonic() - watch.last_event_at
                failure = advisors.ask(live, action.text, quiet)
                if failure is None:
                    note = f"escalated ({action.reason}): asking the advisor ({advisors.name})"
                    self._record(live.task_id, note)
                    return  # the orchestrator is told only if the advisor fails
                told = f"{action.text}; the advisor failed: {failure}"
            note = f"escalated ({action.reason}): {told}"
        else:
            note = f"stopped ({action.reason}): {action.text}"
        stop = action.move is MonitorMove.STOP
        if not self._record(live.task_id, note, fail=action if stop else None):
            return
        if action.move is MonitorMove.ESCALATE:
            context.notify(
                Notice("escalation", context.squad_id, f"{live.task_id}: {told}", live.task_id)
            )
        elif stop:
            context.notify(
                Notice("task_failed", context.squad_id, f"{live.task_id}: {told}", live.task_id)
            )

    def _advised(self, outcome: AdviceOutcome, live_children: dict[str, LiveChild]) -> None:
        """The advisor's answer steered into the stuck child, or the escalation it replaced
        told to the orchestrator after all."""
        reason = MonitorReason.IDLE_ESCALATION
        if outcome.moot:
            self._record(outcome.task_id, f"advisor stopped: {outcome.failure}")
            return
        failure = outcome.failure
        if outcome.advice is not None:
            live = live_children.get(outcome.task_id)
            delivered = (
                live is not None
                and live.handle.child_id == outcome.child_id
                and live.handle.steer(f"{STEER_PREFIX} {outcome.advice}")
            )
            if delivered and live is not None:
                live.advised_at = self._context.clock.monotonic()
                self._record(
                    outcome.task_id, f"steered by the advisor ({reason}): {outcome.advice}"
                )
                return
            failure = "its advice could not be delivered"
        text = f"{outcome.escalation}; the advisor failed: {failure}"
        if self._record(outcome.task_id, f"escalated ({reason}): {text}"):
            context = self._context
            context.notify(
                Notice(
                    "escalation", context.squad_id, f"{outcome.task_id}: {text}", outcome.task_id
                )
            )

    def _record(self, task_id: str, note: str, *, fail: MonitorAction | None = None) -> bool:
        """``note`` into the task's history and onto ``Task.monitor`` (``fail``: the task
        fails too, if still in progress); ``False`` if the task is gone."""
        context = self._context
        now = context.clock.now()
        with context.store.transaction(context.squad_id) as tx:
            task = tx.tasks.get(task_id)
            if task is None:
                return False
            tx.append_message(
                task.id, context.squad_message(MessageKind.SYSTEM, f"monitor: {note}", now)
            )
            if fail is not None and task.status is TaskStatus.IN_PROGRESS:
                task = move_task(task, TaskStatus.FAILED, error=fail.text)
            tx.put_task(attrs.evolve(task, monitor=note))
        return True
