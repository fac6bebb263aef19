"""The squad scheduler: what runs, what is accepted, and recovery (upstream §4, contract §10).

One ``Scheduler`` drives one squad from one process. It holds the children it spawned and
processes their events on the caller's thread (``pump``); the durable truth is the store, so
every decision re-reads it inside a squad transaction and a restarted process carries on from
there. Completion is never accepted without ``validate_task_attestation``.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Mapping
from datetime import datetime

import attrs

from application.attestation_check import AttestationAuditor
from application.canonical import CanonicalIntegrityError, CanonicalSpec
from application.grounding import observed_delivery
from application.ports import (
    AgentDirectory,
    AssistantText,
    ChildEvent,
    ChildHandle,
    ChildRuntime,
    Clock,
    Exited,
    Ids,
    IsolationSupport,
    SessionBound,
    Settled,
    SquadTransaction,
    Store,
    ToolCallsRequested,
    ToolResultSeen,
    ToolStarted,
)
from application.qa import plan_rework
from application.spawn_request import READER_TOOL, spawn_request
from application.squad_state import reopen_with_descendants, unblock_ready
from domain.agents import AgentUnavailable
from domain.attestation.grounding import SpawnObserved
from domain.errors import IsolationUnavailable, SquadIntegrityError
from domain.squad.graph import deps_done, is_ready
from domain.squad.messages import Message, MessageKind
from domain.squad.model import (
    Review,
    ReviewStatus,
    SessionBinding,
    Squad,
    SquadStatus,
    Task,
    TaskStatus,
)
from domain.squad.state import BUDGETS_RESET
from domain.squad.transitions import move_squad, move_task, reopen_task, start_task

DEFAULT_BACKOFF = (2.0, 10.0, 30.0, 60.0, 120.0)
NO_ISOLATION = IsolationSupport(mode="none", abi=None, reason="no isolation configured")
MAX_ATTESTATION_REJECTIONS = 3
REJECTION_PREFIX = "Completion rejected"


@attrs.frozen
class Notice:
    """Something the orchestrator should hear about (delivered into the main session)."""

    kind: str
    squad_id: str
    text: str
    task_id: str | None = None


@attrs.define
class LiveChild:
    handle: ChildHandle
    task_id: str
    agent: str
    # What the parent itself saw on this child's stream: its session, and the raw arguments of
    # every tool call it made (grounding, domain/attestation/grounding.py).
    session_file: str | None = None
    raw_arguments: dict[str, object] = attrs.field(factory=dict)


class Scheduler:
    def __init__(
        self,
        *,
        squad_id: str,
        store: Store,
        auditor: AttestationAuditor,
        runtime: ChildRuntime,
        agents: AgentDirectory,
        clock: Clock,
        ids: Ids,
        notices: Callable[[Notice], None] | None = None,
        backoff: tuple[float, ...] = DEFAULT_BACKOFF,
        reconcile_interval: float = 5.0,
        default_provider: str | None = None,
        default_model: str | None = None,
        isolation: IsolationSupport = NO_ISOLATION,
        require_isolation: bool = False,
    ) -> None:
        self.squad_id = squad_id
        self._store = store
        self._auditor = auditor
        self._runtime = runtime
        self._agents = agents
        self._clock = clock
        self._ids = ids
        self._notify = notices or (lambda _notice: None)
        self._backoff = backoff
        self._events: queue.Queue[ChildEvent] = queue.Queue()
        self.live: dict[str, LiveChild] = {}
        self._exits: dict[str, int] = {}
        self._rejections: dict[str, int] = {}
        self._not_before: dict[str, float] = {}
        self._escalated: set[str] = set()
        self._budget_since: dict[str, datetime] = {}
        self._reconcile_interval = reconcile_interval
        self._default_provider = default_provider
        self._default_model = default_model
        self._next_reconcile = 0.0
        self._canonical: CanonicalSpec | None = None
        self._isolation = isolation
        self._require_isolation = require_isolation
        self._records_quarantine: str | None = None

    # -- events -------------------------------------------------------------------------------

    def sink(self, event: ChildEvent) -> None:
        """Where children deliver events, from any thread."""
        self._events.put(event)

    def pump(self, timeout: float = 0.0) -> int:
        """Handle every queued event (waiting up to ``timeout`` for the first); reconcile after."""
        handled = 0
        try:
            event = self._events.get(timeout=timeout) if timeout > 0 else self._events.get_nowait()
        except queue.Empty:
            # Reconcile on the periodic tick, or as soon as a held retry becomes due.
            due = min(self._next_reconcile, *self._not_before.values(), float("inf"))
            if self._clock.monotonic() >= due:
                self.reconcile()
            return 0
        try:
            while True:
                self.handle(event)
                handled += 1
                try:
                    event = self._events.get_nowait()
                except queue.Empty:
                    break
        except SquadIntegrityError as exc:
            self.quarantine_records(exc)
            return handled
        self.reconcile()
        return handled

    def _current(self, task_id: str, child_id: str) -> LiveChild | None:
        live = self.live.get(task_id)
        return live if live is not None and live.handle.child_id == child_id else None

    def handle(self, event: ChildEvent) -> None:
        live = self._current(event.task_id, event.child_id)
        if isinstance(event, SessionBound):
            if live is not None:
                live.session_file = event.session_file
            self._bind_session(event)
        elif live is None:
            return  # a replaced or killed child: its late events change nothing
        elif isinstance(event, AssistantText):
            self._record_text(event)
        elif isinstance(event, ToolCallsRequested):
            for call in event.calls:
                live.raw_arguments.setdefault(call.tool_call_id, call.arguments)
        elif isinstance(event, ToolResultSeen):
            self._observe_result(live, event)
        elif isinstance(event, ToolStarted):
            self._append(event.task_id, MessageKind.TOOL, live.agent, event.tool_name)
        elif isinstance(event, Settled):
            del self.live[event.task_id]
            self._settle(event)
        elif isinstance(event, Exited):
            del self.live[event.task_id]
            if event.unexpected:
                self._unexpected_exit(event)

    def _observe_result(self, live: LiveChild, event: ToolResultSeen) -> None:
        """Record a verified reader delivery in the parent-owned record of the task."""
        if event.tool_name != READER_TOOL or event.is_error:
            return
        canonical = self._verified_canonical()
        if canonical is None:
            return
        observed = observed_delivery(
            event,
            live.raw_arguments.get(event.tool_call_id),
            canonical=canonical,
            squad_id=self.squad_id,
            session_file=live.session_file,
            at=self._clock.now(),
        )
        if observed is not None:
            self._store.record_observation(self.squad_id, event.task_id, observed)

    def _verified_canonical(self) -> CanonicalSpec | None:
        """The canonical spec as verified once by this scheduler (the integrity pass re-reads
        it every reconcile and quarantines on a mismatch)."""
        if self._canonical is None:
            squad = self._store.snapshot(self.squad_id).squad
            if squad.spec is None:
                return None
            try:
                self._canonical = self._auditor.read_canonical(squad)
            except CanonicalIntegrityError:
                return None
        return self._canonical

    def _message(self, sender: str, kind: MessageKind, text: str, at: datetime) -> Message:
        return Message(id=self._ids.uuid4_hex(), ts=at, sender=sender, kind=kind, text=text)

    def _append(self, task_id: str, kind: MessageKind, sender: str, text: str) -> None:
        now = self._clock.now()
        with self._store.transaction(self.squad_id) as tx:
            if task_id in tx.tasks:
                tx.append_message(task_id, self._message(sender, kind, text, now))

    def _bind_session(self, event: SessionBound) -> None:
        with self._store.transaction(self.squad_id) as tx:
            task = tx.tasks.get(event.task_id)
            if task is None:
                return
            bound = task.session
            if bound is not None and bound.file != event.session_file:
                # Write-once: a task keeps its first session; a different one is not adopted.
                tx.append_message(
                    task.id,
                    self._message(
                        "squad",
                        MessageKind.SYSTEM,
                        "Session rebinding refused: the task stays on its bound session.",
                        self._clock.now(),
                    ),
                )
                return
            if bound is None or (bound.session_id is None and event.session_id is not None):
                tx.put_task(
                    attrs.evolve(
                        task,
                        session=SessionBinding(
                            file=event.session_file, session_id=event.session_id
                        ),
                    )
                )

    def _record_text(self, event: AssistantText) -> None:
        now = self._clock.now()
        with self._store.transaction(self.squad_id) as tx:
            task = tx.tasks.get(event.task_id)
            if task is None:
                return
            tx.put_task(
                attrs.evolve(
                    task,
                    usage=task.usage.plus(
                        input_tokens=event.input_tokens,
                        output_tokens=event.output_tokens,
                        cost=event.cost,
                    ),
                )
            )
            if event.text.strip():
                tx.append_message(
                    task.id, self._message(task.agent, MessageKind.TEXT, event.text, now)
                )

    # -- settlement ---------------------------------------------------------------------------

    def _settle(self, event: Settled) -> None:
        snapshot = self._store.snapshot(self.squad_id)
        task = snapshot.tasks.get(event.task_id)
        if task is None or task.status in {TaskStatus.CANCELLED, TaskStatus.SUSPENDED}:
            return
        if task.status is not TaskStatus.IN_PROGRESS:
            return
        squad = snapshot.squad
        check = self._auditor.validate_task_attestation(squad, task)
        if not check.valid:
            if check.ungrounded:
                # Never trusted by the parent, so never by the task's next child either.
                self._auditor.ledger(squad, task.id).set_aside_ungrounded()
            self._reject(task, check.reason or "attestation invalid")
            return
        if any(entry.pending for entry in self._store.mailbox(self.squad_id, task.id)):
            self._reopen_for_mail(task)
            return
        output = self._candidate_output(task)
        if event.turn_count < 1 or (event.tool_call_count == 0 and not output):
            self._unexpected_exit(
                Exited(task.id, event.child_id, None, "settled without any work", unexpected=True)
            )
            return
        self._accept(task, output)

    def _candidate_output(self, task: Task) -> str:
        """The agent's text since the last rejection; never copied anywhere unless accepted."""
        history = self._store.messages(self.squad_id, task.id)
        start = 0
        for position, message in enumerate(history):
            if message.kind is MessageKind.SYSTEM and message.text.startswith(REJECTION_PREFIX):
                start = position + 1
        texts = [
            m.text
            for m in history[start:]
            if m.sender == task.agent and m.kind in {MessageKind.TEXT, MessageKind.DONE}
        ]
        return "\n".join(texts).strip()

    def _reject(self, task: Task, reason: str) -> None:
        count = self._rejections.get(task.id, 0) + 1
        self._rejections[task.id] = count
        now = self._clock.now()
        self._budget_since.setdefault(task.id, now)
        text = f"{REJECTION_PREFIX}: missing or invalid spec-read attestation: {reason}"
        with self._store.transaction(self.squad_id) as tx:
            current = tx.tasks[task.id]
            if current.status is not TaskStatus.IN_PROGRESS:
                return
            if count >= MAX_ATTESTATION_REJECTIONS:
                error = f"Attestation rejected {count}x: {reason}"
                tx.put_task(move_task(current, TaskStatus.SUSPENDED, error=error, completed=None))
            else:
                # Same task-owned session: the binding is kept, so the next spawn resumes it.
                tx.put_task(move_task(current, TaskStatus.PENDING, error=text, completed=None))
            tx.append_message(task.id, self._message("squad", MessageKind.SYSTEM, text, now))
        if count >= MAX_ATTESTATION_REJECTIONS and task.id not in self._escalated:
            self._escalated.add(task.id)
            self._notify(
                Notice(
                    "escalation",
                    self.squad_id,
                    f"Task {task.id} settled {count} times without a valid spec-read "
                    f"attestation and is suspended: {reason}. Resume it with resume_task.",
                    task.id,
                )
            )

    def _reopen_for_mail(self, task: Task) -> None:
        with self._store.transaction(self.squad_id) as tx:
            current = tx.tasks[task.id]
            if current.status is TaskStatus.IN_PROGRESS:
                tx.put_task(move_task(current, TaskStatus.PENDING))

    def _accept(self, task: Task, output: str) -> None:
        now = self._clock.now()
        with self._store.transaction(self.squad_id) as tx:
            current = tx.tasks[task.id]
            if current.status is not TaskStatus.IN_PROGRESS:
                return
            done = move_task(
                current,
                TaskStatus.DONE,
                completed=now,
                error=None,
                output=output or "Task completed",
            )
            tx.put_task(done)
            tx.append_message(
                task.id, self._message("squad", MessageKind.DONE, "Task completed", now)
            )
            self.reset_budgets(task.id)
            rework = plan_rework(tx.squad, dict(tx.tasks), done, now=now)
            for new_task in rework.tasks:
                tx.put_task(new_task)
            if rework.failure is not None:
                tx.put_task(
                    move_task(done, TaskStatus.FAILED, error=rework.failure, completed=None)
                )
            for text in rework.escalations:
                self._notify(Notice("escalation", self.squad_id, text, task.id))
            if not rework.tasks:
                unblock_ready(tx)

    def _unblock_dependents(self, tx: SquadTransaction) -> None:
        unblock_ready(tx)

    def _unexpected_exit(self, event: Exited) -> None:
        attempts = self._exits.get(event.task_id, 0) + 1
        self._exits[event.task_id] = attempts
        now = self._clock.now()
        self._budget_since.setdefault(event.task_id, now)
        with self._store.transaction(self.squad_id) as tx:
            task = tx.tasks.get(event.task_id)
            if task is None or task.status is not TaskStatus.IN_PROGRESS:
                return
            detail = event.stderr_tail.strip()[-2000:] if event.stderr_tail else ""
            if attempts <= len(self._backoff):
                delay = self._backoff[attempts - 1]
                self._not_before[task.id] = self._clock.monotonic() + delay
                text = (
                    f"Agent exited unexpectedly (code {event.exit_code}); retry {attempts} of "
                    f"{len(self._backoff)} in {delay:g} s on the same session. {detail}".strip()
                )
                tx.put_task(move_task(task, TaskStatus.PENDING))
            else:
                text = (
                    f"Agent exited unexpectedly {attempts} times; giving up. Use resume_task to "
                    f"try again. {detail}".strip()
                )
                tx.put_task(move_task(task, TaskStatus.FAILED, error=text))
                self._notify(Notice("task_failed", self.squad_id, text, task.id))
            tx.append_message(task.id, self._message("squad", MessageKind.SYSTEM, text, now))

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
        for live in list(self.live.values()):
            live.handle.kill()
        self.live.clear()
        error = f"Task records failed the integrity check: {failure.reason}"
        self._store.quarantine(self.squad_id, error)
        if self._records_quarantine != error:
            self._records_quarantine = error
            self._notify(Notice("quarantine", self.squad_id, error))

    def _reconcile(self) -> None:
        snapshot = self._store.snapshot(self.squad_id)
        self._kill_orphans(snapshot.tasks)
        self._apply_durable_budget_resets()
        if snapshot.squad.spec is not None and not self._integrity(snapshot.squad):
            return
        with self._store.transaction(self.squad_id) as tx:
            self._audit_done_tasks(tx)
            self._recover_mail(tx)
            self._recover_zombies(tx)
            if tx.squad.config.auto_unblock:
                unblock_ready(tx)
            self._heal(tx)
        # Children whose tasks this pass re-blocked or reopened stop now, freeing their slots.
        self._kill_orphans(self._store.snapshot(self.squad_id).tasks)
        self._schedule()
        self._check_completion()

    def _kill_orphans(self, tasks: Mapping[str, Task]) -> None:
        """Children whose task another process paused, cancelled or re-blocked are stopped."""
        for task_id, live in list(self.live.items()):
            task = tasks.get(task_id)
            if task is None or task.status is not TaskStatus.IN_PROGRESS:
                live.handle.kill()
                del self.live[task_id]

    def _integrity(self, squad: Squad) -> bool:
        problem = self._auditor.integrity_problem(squad)
        if problem is None:
            if squad.quarantine is not None:
                with self._store.transaction(self.squad_id) as tx:
                    tx.put_squad(attrs.evolve(tx.squad, quarantine=None))
            return True
        for live in list(self.live.values()):
            live.handle.kill()
        self.live.clear()
        error = f"Canonical spec integrity failure: {problem}"
        with self._store.transaction(self.squad_id) as tx:
            for task in tx.tasks.values():
                if task.status in {TaskStatus.DONE, TaskStatus.IN_PROGRESS}:
                    tx.put_task(move_task(task, TaskStatus.PENDING, error=error, completed=None))
            if tx.squad.quarantine != error:
                tx.put_squad(attrs.evolve(tx.squad, quarantine=error))
                self._notify(Notice("quarantine", self.squad_id, error))
        return False

    def _audit_done_tasks(self, tx: SquadTransaction) -> None:
        """A done task whose attestation no longer verifies is reopened with its descendants."""
        squad = tx.squad
        if squad.spec is None:
            return
        try:
            canonical = self._auditor.read_canonical(squad)
        except CanonicalIntegrityError:
            return  # the integrity pass that runs first quarantines; nothing to audit against
        for task in list(tx.tasks.values()):
            if task.status is not TaskStatus.DONE:
                continue
            check = self._auditor.validate_task_attestation(squad, task, canonical)
            if not check.valid:
                self._reopen_with_descendants(
                    tx, task.id, f"{REJECTION_PREFIX}: attestation no longer valid: {check.reason}"
                )

    def _reopen_with_descendants(self, tx: SquadTransaction, task_id: str, error: str) -> None:
        reopen_with_descendants(tx, task_id, error, self._ids, self._clock.now())

    def _recover_mail(self, tx: SquadTransaction) -> None:
        for task in list(tx.tasks.values()):
            if task.status in {TaskStatus.CANCELLED, TaskStatus.SUSPENDED, TaskStatus.IN_PROGRESS}:
                continue
            if task.id in self.live or not any(e.pending for e in tx.mailbox(task.id)):
                continue
            if task.status is TaskStatus.DONE:
                self._reopen_with_descendants(tx, task.id, "Reopened for new mail.")
            elif task.status in {TaskStatus.FAILED}:
                tasks = dict(tx.tasks)
                tx.put_task(reopen_task(task, deps_done=deps_done(tasks, task)))

    def _recover_zombies(self, tx: SquadTransaction) -> None:
        now = self._clock.now()
        for task in list(tx.tasks.values()):
            if task.status is TaskStatus.IN_PROGRESS and task.id not in self.live:
                text = "Agent process lost. Resuming on the same durable session."
                tx.put_task(move_task(task, TaskStatus.PENDING))
                tx.append_message(task.id, self._message("squad", MessageKind.SYSTEM, text, now))

    def _heal(self, tx: SquadTransaction) -> None:
        squad = tx.squad
        tasks = dict(tx.tasks)
        runnable = any(is_ready(tasks, t) for t in tasks.values())
        if squad.status is SquadStatus.FAILED and runnable and squad.cancelled_at is None:
            tx.put_squad(move_squad(squad, SquadStatus.RUNNING))

    # -- spawning -----------------------------------------------------------------------------

    def _schedule(self) -> None:
        snapshot = self._store.snapshot(self.squad_id)
        squad = snapshot.squad
        if squad.status is not SquadStatus.RUNNING or squad.quarantine is not None:
            return
        free = squad.config.max_concurrency - len(self.live)
        now_mono = self._clock.monotonic()
        for task_id in sorted(snapshot.tasks):
            if free <= 0:
                break
            task = snapshot.tasks[task_id]
            if task_id in self.live or not is_ready(snapshot.tasks, task):
                continue
            if self._not_before.get(task_id, 0.0) > now_mono:
                continue
            self._not_before.pop(task_id, None)
            if self._spawn(task_id):
                free -= 1

    def _spawn(self, task_id: str) -> bool:
        now = self._clock.now()
        confined = self._isolation.mode == "landlock"
        if self._require_isolation and not confined:
            raise IsolationUnavailable(self._isolation.reason or "no isolation available")
        with self._store.transaction(self.squad_id) as tx:
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
                ledger_dir=self._store.task_dir(squad.id, task.id),
                squad_root=self._store.root if confined else None,
                default_provider=self._default_provider,
                default_model=self._default_model,
            )
            # Sticky: one child that ran unconfined could have written any squad record.
            isolation = "landlock" if confined and squad.isolation != "none" else "none"
            if squad.isolation != isolation:
                tx.put_squad(attrs.evolve(squad, isolation=isolation))
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
                self._message(
                    "squad", MessageKind.STATUS, f"Agent {task.agent} starting work", now
                ),
            )
        handle: ChildHandle | None = None
        try:
            handle = self._runtime.spawn(request, self.sink)
            # Parent-owned: the first spawn bounds every deliveredAt this task can claim.
            self._store.record_observation(
                self.squad_id, task_id, SpawnObserved(at=now, child_id=handle.child_id)
            )
        except Exception as exc:
            if handle is not None:
                handle.kill()
            with self._store.transaction(self.squad_id) as tx:
                current = tx.tasks[task_id]
                if current.status is TaskStatus.IN_PROGRESS:
                    tx.put_task(move_task(current, TaskStatus.FAILED, error=f"Spawn failed: {exc}"))
            return False
        self.live[task_id] = LiveChild(handle=handle, task_id=task_id, agent=task.agent)
        return True

    # -- completion ---------------------------------------------------------------------------

    def _check_completion(self) -> None:
        now = self._clock.now()
        notice: Notice | None = None
        with self._store.transaction(self.squad_id) as tx:
            squad = tx.squad
            tasks = dict(tx.tasks)
            relevant = [t for t in tasks.values() if t.status is not TaskStatus.CANCELLED]
            if squad.status is SquadStatus.RUNNING and all(
                t.status is TaskStatus.DONE for t in relevant
            ):
                # Every done task was audited this pass; only then may review begin.
                review = Review(status=ReviewStatus.PENDING, requested_at=now)
                tx.put_squad(move_squad(squad, SquadStatus.REVIEW, review=review))
                notice = Notice("review_required", squad.id, review_gate_text(squad, tasks))
            elif squad.status is SquadStatus.RUNNING and self._has_failed(tasks):
                tx.put_squad(move_squad(squad, SquadStatus.FAILED))
                notice = Notice("squad_failed", squad.id, f"Squad {squad.id} failed.")
        if notice is not None:
            self._notify(notice)

    @staticmethod
    def _has_failed(tasks: Mapping[str, Task]) -> bool:
        statuses = [t.status for t in tasks.values() if t.status is not TaskStatus.CANCELLED]
        if TaskStatus.FAILED not in statuses:
            return False
        if any(s in {TaskStatus.PENDING, TaskStatus.IN_PROGRESS} for s in statuses):
            return False
        return all(s in {TaskStatus.DONE, TaskStatus.BLOCKED, TaskStatus.FAILED} for s in statuses)

    # -- budgets ------------------------------------------------------------------------------

    def reset_budgets(self, task_id: str) -> None:
        """``resume_task`` gives a task fresh spawn-retry and attestation-rejection budgets."""
        self._exits.pop(task_id, None)
        self._rejections.pop(task_id, None)
        self._not_before.pop(task_id, None)
        self._escalated.discard(task_id)
        self._budget_since.pop(task_id, None)

    def _apply_durable_budget_resets(self) -> None:
        """Another process's ``resume_task`` leaves a durable marker in the task's history; only
        tasks that have spent budget here are checked, so this stays cheap."""
        for task_id, since in list(self._budget_since.items()):
            for message in reversed(self._store.messages(self.squad_id, task_id)):
                if message.ts <= since:
                    break
                if message.kind is MessageKind.SYSTEM and message.text.startswith(BUDGETS_RESET):
                    self.reset_budgets(task_id)
                    break

    # -- stopping -----------------------------------------------------------------------------

    def stop(self) -> None:
        """Kill every child; their tasks become suspended (resumable on the same session)."""
        live_ids = list(self.live)
        for live in self.live.values():
            live.handle.kill()
        self.live.clear()
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


def review_gate_text(squad: Squad, tasks: Mapping[str, Task]) -> str:
    """The review gate. In file mode it names only the spec identity and task records."""
    lines = [f"Squad {squad.id} is awaiting orchestrator review."]
    if squad.spec is not None:
        lines.append(f"Canonical spec: {squad.spec.path} (SHA-256 {squad.spec.sha256}).")
        for task_id in sorted(tasks):
            lines.append(f"- {task_id}: {tasks[task_id].status} (task.json in the squad directory)")
    else:
        for task_id in sorted(tasks):
            task = tasks[task_id]
            lines.append(f"- {task_id} ({task.agent}): {task.title} [{task.status}]")
    lines.append("Record a verdict with squad_review (pass, pass_with_issues or fail).")
    return "\n".join(lines)
