"""The advisor at work (``domain/squad/advisor.py``): one short-lived child per escalation,
spawned through the scheduler's own ``ChildRuntime`` and never waited on.

Its events reach the scheduler's queue wrapped (:class:`AdvisorEvent`), so nothing of them is
ever taken for the stuck task's own (its session, text or usage); the pump hands them here.
The advisor runs with no tools, no spec environment (a legacy child: pi-squad registers
nothing in it) and a session in a private temporary directory, removed when it ends. Its
answer, a timeout, or its exit each end it: :meth:`Advisors.event` and :meth:`Advisors.tick`
return what came of it, and the monitor records and delivers that.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence

import attrs

from application.child.session import ChildSession, Stop
from application.ports import (
    ChildEvent,
    ChildRuntime,
    Exited,
    NewSession,
    Settled,
    SpawnRequest,
    TempDirs,
)
from application.spawn_request import child_request
from application.squads.scheduler.context import SchedulerContext
from application.squads.scheduler.live_children import LiveChild
from domain.squad.advisor import (
    ADVISOR_SYSTEM_PROMPT,
    AdvisorSettings,
    advice_from,
    advisor_prompt,
)
from domain.squad.messages import Message
from domain.squad.model import Task


def advisor_request(
    squad_id: str,
    task: Task,
    *,
    cwd: str,
    session_dir: str,
    history: Sequence[Message],
    quiet_seconds: float,
    settings: AdvisorSettings,
) -> SpawnRequest:
    """The advisor child for ``task``: no tools, only ``PI_SQUAD_CHILD=1`` (a legacy child, in
    which pi-squad registers nothing), a new session in ``session_dir``, the prompt of
    :func:`advisor_prompt` (facts only, never spec content)."""
    return child_request(
        owner=squad_id,
        task_id=task.id,
        cwd=cwd,
        session=NewSession(session_dir),
        system_prompt=ADVISOR_SYSTEM_PROMPT,
        first_prompt=advisor_prompt(task, history, quiet_seconds),
        model=settings.model,
        provider=settings.provider,
        tools=(),
    )


@attrs.frozen
class AdvisorEvent:
    """An advisor child's event, as the scheduler's queue carries it."""

    event: ChildEvent


@attrs.frozen
class AdviceOutcome:
    """What came of asking: ``advice`` (the steering sentence) or ``failure`` (why not)."""

    task_id: str
    child_id: str
    """The stuck child the advice is for: a child that replaced it never receives it."""
    escalation: str
    """What the monitor would have told the orchestrator (said if the advisor fails)."""
    advice: str | None = None
    failure: str | None = None
    moot: bool = False
    """The stuck child ended first: there is nobody to advise, nor anything to escalate."""


@attrs.define(eq=False)
class _Asked:
    task_id: str
    child_id: str
    escalation: str
    # The advisor child, fed its events on the scheduler's thread (``Advisors.event``).
    child: ChildSession
    deadline: float
    # Its session directory, removed when it ends.
    directory: contextlib.ExitStack


@attrs.define(eq=False)
class Advisors:
    _context: SchedulerContext
    _runtime: ChildRuntime
    _settings: AdvisorSettings
    _temp_dirs: TempDirs
    _sink: Callable[[AdvisorEvent], None]
    _asked: dict[str, _Asked] = attrs.field(init=False, factory=dict)

    @property
    def name(self) -> str:
        return self._settings.name

    def asking(self, task_id: str) -> bool:
        return task_id in self._asked

    def ask(self, live: LiveChild, escalation: str, quiet_seconds: float) -> str | None:
        """Spawn the advisor for ``live``'s task; ``None`` when asked, else why it could not
        be (the caller falls back to the plain escalation)."""
        context = self._context
        snapshot = context.store.snapshot(context.squad_id)
        task = snapshot.tasks.get(live.task_id)
        if task is None:
            return "the task is gone"
        history = context.store.messages(context.squad_id, task.id)
        directory = contextlib.ExitStack()
        child = ChildSession(self._runtime, context.clock)
        try:
            session_dir = directory.enter_context(
                self._temp_dirs.temporary_dir("pi-squad-advisor-")
            )
            request = advisor_request(
                context.squad_id,
                task,
                cwd=snapshot.squad.cwd,
                session_dir=session_dir,
                history=history,
                quiet_seconds=quiet_seconds,
                settings=self._settings,
            )
            child.start(request, lambda event: self._sink(AdvisorEvent(event)))
        except Exception as exc:  # any failure to start is a fallback, never a crash
            directory.close()
            return f"the advisor did not start: {exc}"
        self._asked[task.id] = _Asked(
            task_id=task.id,
            child_id=live.handle.child_id,
            escalation=escalation,
            child=child,
            deadline=context.clock.monotonic() + self._settings.timeout,
            directory=directory,
        )
        return None

    def event(self, wrapped: AdvisorEvent) -> AdviceOutcome | None:
        event = wrapped.event
        asked = self._asked.get(event.task_id)
        handle = asked.child.handle if asked is not None else None
        if asked is None or handle is None or handle.child_id != event.child_id:
            return None  # a finished advisor's late event
        asked.child.record(event)
        if isinstance(event, Settled):
            said = asked.child.last_words()
            advice = advice_from(said) if said is not None else None
            if advice is None:
                return self._end(asked, failure="the advisor said nothing")
            return self._end(asked, advice=advice)
        if isinstance(event, Exited):
            return self._end(asked, failure=f"the advisor exited (code {event.exit_code})")
        return None

    def tick(self, live_children: Mapping[str, LiveChild]) -> list[AdviceOutcome]:
        """Advisors past their timeout fail; one whose stuck child is gone is dropped (the
        outcome says so; nobody is left to advise)."""
        outcomes: list[AdviceOutcome] = []
        for asked in list(self._asked.values()):
            live = live_children.get(asked.task_id)
            if live is None or live.handle.child_id != asked.child_id:
                outcomes.append(
                    self._end(asked, failure="the child it was asked about ended", moot=True)
                )
            elif asked.child.due(asked.deadline) is Stop.TIMEOUT:
                seconds = self._settings.timeout
                outcomes.append(self._end(asked, failure=f"the advisor timed out ({seconds:g} s)"))
        return outcomes

    def next_deadline(self) -> float:
        return min((asked.deadline for asked in self._asked.values()), default=float("inf"))

    def close(self) -> None:
        """Stop every advisor (the scheduler stops)."""
        for asked in list(self._asked.values()):
            self._end(asked, failure="the scheduler stopped")

    def _end(
        self,
        asked: _Asked,
        *,
        advice: str | None = None,
        failure: str | None = None,
        moot: bool = False,
    ) -> AdviceOutcome:
        del self._asked[asked.task_id]
        try:
            asked.child.kill()
        finally:
            asked.directory.close()
        return AdviceOutcome(asked.task_id, asked.child_id, asked.escalation, advice, failure, moot)
