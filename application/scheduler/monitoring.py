"""The monitor at work in one squad's scheduler: every event of a live child resets its quiet
time, every tool call it requests is checked for repeats, and every pump checks the quiet and
the runtime ceiling. Each action (steer, escalation, stop) is written into the task's history
and onto its record (``Task.monitor``, shown by status), and an escalation or a stop is told to
the orchestrator."""

from __future__ import annotations

import attrs

from application.ports import ToolCallsRequested
from application.scheduler.context import Notice, SchedulerContext
from application.scheduler.live_children import LiveChild
from domain.squad.messages import MessageKind
from domain.squad.model import TaskStatus
from domain.squad.monitor import (
    ChildWatch,
    MonitorAction,
    MonitorMove,
    MonitorPolicy,
    next_deadline,
    on_call,
    on_event,
    on_tick,
    watch_started,
)
from domain.squad.transitions import move_task


@attrs.define(eq=False)
class ChildMonitor:
    _context: SchedulerContext
    _policy: MonitorPolicy

    def _watch(self, live: LiveChild, now: float) -> ChildWatch:
        if live.watch is None:
            live.watch = watch_started(now)
        return live.watch

    def event(self, live: LiveChild) -> None:
        now = self._context.clock.monotonic()
        live.watch = on_event(self._watch(live, now), now)

    def calls(self, live: LiveChild, event: ToolCallsRequested) -> None:
        now = self._context.clock.monotonic()
        watch = self._watch(live, now)
        for call in event.calls:
            watch, action = on_call(watch, call.tool_name, call.arguments, now, self._policy)
            live.watch = watch
            if action is not None:
                self._act(live, action)

    def tick(self, live_children: dict[str, LiveChild]) -> None:
        now = self._context.clock.monotonic()
        for task_id, live in list(live_children.items()):
            watch, action = on_tick(self._watch(live, now), now, self._policy)
            live.watch = watch
            if action is None:
                continue
            if action.move is MonitorMove.STOP:
                # Forgotten first: its exit is then a stopped child's, never retried.
                live.handle.kill()
                del live_children[task_id]
            self._act(live, action)

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
        return earliest

    def _act(self, live: LiveChild, action: MonitorAction) -> None:
        context = self._context
        if action.move is MonitorMove.STEER:
            delivered = live.handle.steer(action.text)
            note = f"steered ({action.reason})" + ("" if delivered else ", not delivered")
        elif action.move is MonitorMove.ESCALATE:
            note = f"escalated ({action.reason}): {action.text}"
        else:
            note = f"stopped ({action.reason}): {action.text}"
        now = context.clock.now()
        with context.store.transaction(context.squad_id) as tx:
            task = tx.tasks.get(live.task_id)
            if task is None:
                return
            tx.append_message(
                task.id, context.squad_message(MessageKind.SYSTEM, f"monitor: {note}", now)
            )
            if action.move is MonitorMove.STOP and task.status is TaskStatus.IN_PROGRESS:
                task = move_task(task, TaskStatus.FAILED, error=action.text)
            tx.put_task(attrs.evolve(task, monitor=note))
        if action.move is MonitorMove.ESCALATE:
            context.notify(
                Notice(
                    "escalation", context.squad_id, f"{live.task_id}: {action.text}", live.task_id
                )
            )
        elif action.move is MonitorMove.STOP:
            context.notify(
                Notice(
                    "task_failed", context.squad_id, f"{live.task_id}: {action.text}", live.task_id
                )
            )
