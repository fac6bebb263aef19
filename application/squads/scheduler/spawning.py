"""Starting children: ready tasks up to the squad's concurrency, each under the isolation this
runtime enforces, with its pending mail delivered in the first prompt."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from application.child.session import ChildSession
from application.ports import (
    AgentDirectory,
    ChildEvent,
    ChildRuntime,
    IsolationSupport,
    SquadSnapshot,
)
from application.spawn_request import spawn_request
from application.squads.scheduler.budgets import RetryBudgets
from application.squads.scheduler.context import SchedulerContext
from application.squads.scheduler.live_children import LiveChild
from domain.agents import AgentUnavailable
from domain.attestation.grounding import SpawnObserved
from domain.errors import IsolationTooWeak, IsolationUnavailable
from domain.isolation_level import layers_after_spawn, signal_isolation_problem
from domain.squad.graph import is_ready
from domain.squad.messages import MessageKind
from domain.squad.model import SquadStatus, TaskStatus
from domain.squad.monitor import watch_started
from domain.squad.transitions import move_task, start_task

NO_ISOLATION = IsolationSupport(mode="none", abi=None, reason="no isolation configured")


@attrs.define(eq=False, kw_only=True)
class Spawner:
    _context: SchedulerContext
    _runtime: ChildRuntime
    _agents: AgentDirectory
    _budgets: RetryBudgets
    # The scheduler's own live children (the same dict), which each spawn joins.
    _live: dict[str, LiveChild]
    # Where the children deliver their events.
    _sink: Callable[[ChildEvent], None]
    _isolation: IsolationSupport
    _require_isolation: bool
    _default_provider: str | None
    _default_model: str | None

    def schedule(self, snapshot: SquadSnapshot) -> int:
        """Spawn ready tasks, in task-id order, into the free slots; how many were spawned.
        ``snapshot`` is the squad as last committed (each spawn re-reads it under the lock)."""
        context = self._context
        squad = snapshot.squad
        spawned = 0
        if squad.status is not SquadStatus.RUNNING or squad.quarantine is not None:
            return spawned
        free = squad.config.max_concurrency - len(self._live)
        now_mono = context.clock.monotonic()
        for task_id in sorted(snapshot.tasks):
            if free <= 0:
                break
            task = snapshot.tasks[task_id]
            if task_id in self._live or not is_ready(snapshot.tasks, task):
                continue
            if not self._budgets.take_due(task_id, now_mono):
                continue
            if self._spawn(task_id):
                free -= 1
                spawned += 1
        return spawned

    def _spawn(self, task_id: str) -> bool:
        context = self._context
        store = context.store
        now = context.clock.now()
        confined = self._isolation.mode == "landlock"
        level = self._isolation.level
        if self._require_isolation:
            if not confined:
                raise IsolationUnavailable(self._isolation.reason or "no isolation available")
            problem = signal_isolation_problem(level)
            if problem is not None:
                raise IsolationTooWeak(problem)
        with store.transaction(context.squad_id) as tx:
            squad = tx.squad
            task = tx.tasks.get(task_id)
            # Re-read under the lock: another process may have taken or changed it.
            if (
                task is None
                or squad.status is not SquadStatus.RUNNING
                or not is_ready(tx.tasks, task)
            ):
                return False
            try:
                agent = self._agents.catalog(squad.cwd).resolve(task.agent)
            except AgentUnavailable as exc:
                tx.put_task(move_task(task, TaskStatus.FAILED, error=f"Spawn failed: {exc}"))
                return False
            mail = tuple(entry for entry in tx.mailbox(task_id) if entry.pending)
            request = spawn_request(
                squad,
                task,
                agent,
                tx.tasks,
                mail=mail,
                ledger_dir=store.task_dir(squad.id, task.id),
                squad_root=store.root if confined else None,
                default_provider=self._default_provider,
                default_model=self._default_model,
            )
            # Sticky: one child that ran unconfined could have written any squad record.
            isolation = "landlock" if confined and squad.isolation != "none" else "none"
            # What held for every child: the weakest level any ran under (the meet).
            layers = layers_after_spawn(squad.isolation, squad.isolation_layers, level)
            if (squad.isolation, squad.isolation_layers) != (isolation, layers):
                tx.put_squad(attrs.evolve(squad, isolation=isolation, isolation_layers=layers))
            tx.put_task(start_task(task, now))
            tx.put_mailbox(
                task_id,
                tuple(
                    attrs.evolve(e, delivered_at=now) if e in mail else e
                    for e in tx.mailbox(task_id)
                ),
            )
            tx.append_message(
                task_id,
                context.squad_message(MessageKind.STATUS, f"Agent {task.agent} starting work", now),
            )
        session = ChildSession(self._runtime, context.clock)
        try:
            handle = session.start(request, self._sink)
            # Parent-owned: the first spawn bounds every deliveredAt this task can claim.
            store.record_observation(
                context.squad_id, task_id, SpawnObserved(at=now, child_id=handle.child_id)
            )
        except Exception as exc:
            session.kill()  # the child, if it started
            with store.transaction(context.squad_id) as tx:
                current = tx.tasks[task_id]
                if current.status is TaskStatus.IN_PROGRESS:
                    tx.put_task(move_task(current, TaskStatus.FAILED, error=f"Spawn failed: {exc}"))
            return False
        # The monitor's watch starts at the spawn: the runtime ceiling counts from here.
        watch = watch_started(self._context.clock.monotonic())
        self._live[task_id] = LiveChild(
            session=session, task_id=task_id, agent=task.agent, watch=watch
        )
        return True
