"""What a child's stream tells the parent, recorded in the squad: the task's session, its
token usage and text, the tools it started, and each verified reader delivery (grounding)."""

from __future__ import annotations

from datetime import datetime

import attrs

from application.attestation_check import AttestationAuditor
from application.canonical import CanonicalIntegrityError, CanonicalSpec
from application.grounding import observed_delivery
from application.ports import (
    AssistantText,
    SessionBound,
    SquadTransaction,
    ToolCallsRequested,
    ToolResultSeen,
    ToolStarted,
)
from application.session_check import session_problem
from application.spawn_request import READER_TOOL
from application.squads.scheduler.context import Notice, SchedulerContext
from application.squads.scheduler.live_children import LiveChild
from domain.squad.messages import MessageKind
from domain.squad.model import SessionBinding
from domain.usage import Usage


def _kept_usage(event: AssistantText) -> Usage:
    """What a task's record keeps of one message's usage: its tokens, its cost, one turn."""
    return Usage(
        input_tokens=event.input_tokens,
        output_tokens=event.output_tokens,
        cost=event.cost,
        turns=1,
    )


@attrs.define(eq=False)
class ChildEventRecorder:
    _context: SchedulerContext
    _auditor: AttestationAuditor
    _canonical: CanonicalSpec | None = attrs.field(init=False, default=None)

    def bind_session(self, event: SessionBound) -> bool:
        """Record the session the child reported as the task's, once; whether the task is now
        bound to exactly that session (its reads are then observed in it). The report comes
        from the child's own stream: a path that is not a file directly in the task's own
        session directory, or anything but a regular file there, is refused with a reason, and
        the task stays unbound (no delivery can be attributed to it, so it is not accepted)."""
        context = self._context
        problem = session_problem(
            self._auditor.fs,
            context.store.layout(context.squad_id),
            event.task_id,
            event.session_file,
            must_exist=False,
        )
        with context.store.transaction(context.squad_id) as tx:
            task = tx.tasks.get(event.task_id)
            if task is None:
                return False
            bound = task.session
            refusal = None
            if problem is not None:
                refusal = f"Session binding refused: {problem}."
            elif bound is not None and bound.file != event.session_file:
                # Write-once: a task keeps its first session; a different one is not adopted.
                refusal = "Session rebinding refused: the task stays on its bound session."
            if refusal is not None:
                now = context.clock.now()
                tx.append_message(task.id, context.squad_message(MessageKind.SYSTEM, refusal, now))
                return False
            if bound is None or (bound.session_id is None and event.session_id is not None):
                tx.put_task(
                    attrs.evolve(
                        task,
                        session=SessionBinding(
                            file=event.session_file, session_id=event.session_id
                        ),
                    )
                )
            return True

    def record_text(self, event: AssistantText) -> None:
        context = self._context
        now = context.clock.now()
        reply: Notice | None = None
        with context.store.transaction(context.squad_id) as tx:
            task = tx.tasks.get(event.task_id)
            if task is None:
                return
            if event.text.strip():
                reply = self._forward_reply(tx, task.id, task.agent, event.text, now)
            tx.put_task(attrs.evolve(task, usage=task.usage.plus(_kept_usage(event))))
            if event.text.strip():
                tx.append_message(
                    task.id, context.message(task.agent, MessageKind.TEXT, event.text, now)
                )
        if reply is not None:
            context.notify(reply)

    def _forward_reply(
        self, tx: SquadTransaction, task_id: str, agent: str, text: str, now: datetime
    ) -> Notice | None:
        """The child's first text after a delivered message that asked for a reply is that
        reply: marked on the entry and forwarded to the orchestrator, whole."""
        entries = tx.mailbox(task_id)
        waiting = [entry for entry in entries if entry.awaiting_reply]
        if not waiting:
            return None
        asked = {entry.id for entry in waiting}
        tx.put_mailbox(
            task_id,
            tuple(
                attrs.evolve(entry, replied_at=now) if entry.id in asked else entry
                for entry in entries
            ),
        )
        return Notice(
            "agent_reply",
            self._context.squad_id,
            f"Reply from task '{task_id}' ({agent}) to your message:\n{text}",
            task_id,
        )

    @staticmethod
    def remember_arguments(live: LiveChild, event: ToolCallsRequested) -> None:
        """The raw arguments as the parent saw them, for grounding the reader's deliveries."""
        for call in event.calls:
            live.raw_arguments.setdefault(call.tool_call_id, call.arguments)

    def tool_started(self, live: LiveChild, event: ToolStarted) -> None:
        context = self._context
        now = context.clock.now()
        with context.store.transaction(context.squad_id) as tx:
            if event.task_id in tx.tasks:
                tx.append_message(
                    event.task_id,
                    context.message(live.agent, MessageKind.TOOL, event.tool_name, now),
                )

    def observe_result(self, live: LiveChild, event: ToolResultSeen) -> None:
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
            squad_id=self._context.squad_id,
            session_file=live.session_file,
            at=self._context.clock.now(),
        )
        if observed is not None:
            self._context.store.record_observation(self._context.squad_id, event.task_id, observed)

    def _verified_canonical(self) -> CanonicalSpec | None:
        """The canonical spec as verified once by this scheduler (the integrity pass re-reads
        it every reconcile and quarantines on a mismatch)."""
        if self._canonical is None:
            squad = self._context.store.snapshot(self._context.squad_id).squad
            if squad.spec is None:
                return None
            try:
                self._canonical = self._auditor.read_canonical(squad)
            except CanonicalIntegrityError:
                return None
        return self._canonical
