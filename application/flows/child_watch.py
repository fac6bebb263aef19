"""One flow child on its ``ChildSession``, as ``ChildDispatcher`` runs it: the events its hooks,
budgets and live view see, and what its end comes to (a completed run with its last answer, or
a failed one with the catalogue code of why)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Protocol

from application.child.session import ChildSession
from application.flows.budgets import FlowBudgets, Governed
from application.ports import AssistantText, ChildEvent, ChildHandle, SpawnRequest, ToolStarted
from domain.errors import ErrorCode
from domain.flows.child_limits import Stop, provider_error_message
from domain.flows.runs import ChildJob, RunResult, RunStatus
from domain.usage import Usage

# Told what a running child is doing (its run's key, then "tool <name>" or its latest message).
Activity = Callable[[str, str], None]

CANCELLED = "the flow was cancelled"


class RunHooks(Protocol):
    """What a kind of flow adds to each child it runs (an attested flow's proof): the request
    it is started with, what its stream shows, and how its settled run is judged."""

    def request(self, job: ChildJob, request: SpawnRequest, *, read_only: bool) -> SpawnRequest: ...

    def spawned(self, job: ChildJob, handle: ChildHandle) -> None: ...

    def observe(self, job: ChildJob, event: ChildEvent) -> None: ...

    def settle(self, job: ChildJob, result: RunResult) -> RunResult: ...


def watched(
    job: ChildJob,
    session: ChildSession,
    *,
    hooks: RunHooks | None,
    activity: Activity | None,
    budgets: FlowBudgets | None,
    governed: Governed | None,
) -> Callable[[ChildEvent], None]:
    """Where the child's events go: the run's hooks first (an attested flow's proof), the live
    view, the session, then the budgets, whose crossed ceiling stops the session's wait."""

    def deliver(event: ChildEvent) -> None:
        if hooks is not None:
            # Fail closed without killing the runtime's reader: an observation not recorded
            # proves nothing, so the run's attestation cannot be grounded on it.
            with contextlib.suppress(Exception):
                hooks.observe(job, event)
        if activity is not None:
            if isinstance(event, ToolStarted):
                activity(job.key, f"tool {event.tool_name}")
            elif isinstance(event, AssistantText) and event.text.strip():
                activity(job.key, event.text.strip().splitlines()[0][:120])
        session.record(event)
        if budgets is not None and governed is not None and budgets.observe(governed, event):
            session.stop(Stop.BUDGET)

    return deliver


def failed(
    job: ChildJob, code: ErrorCode, message: str, session: ChildSession | None = None
) -> RunResult:
    return RunResult(
        job.key,
        job.role.agent,
        RunStatus.FAILED,
        usage=session.usage if session is not None else Usage(),
        duration_ms=session.elapsed_ms() if session is not None else 0,
        error_code=code,
        error=message,
    )


def ended(
    job: ChildJob, session: ChildSession, stop: Stop | None, timeout: float, cancelled: bool
) -> RunResult:
    """What the run came to once ``session.wait`` returned ``stop`` (a budget's stop is judged
    by the budgets: see ``application.flows.budgets.stopped``); the child is killed first
    when a limit stopped it."""
    if stop is Stop.PROVIDER_ERROR:
        session.kill()
        message = provider_error_message(session.provider_error or "")
        return failed(job, ErrorCode.CHILD_PROVIDER_ERROR, message, session)
    if stop is Stop.TIMEOUT:
        session.kill()
        message = f"stopped after timeoutMs {round(timeout * 1000)}"
        return failed(job, ErrorCode.CHILD_TIMEOUT, message, session)
    if session.provider_error is not None and not cancelled:
        # Settled (or exited) on the error itself: no answer came after it.
        message = provider_error_message(session.provider_error)
        return failed(job, ErrorCode.CHILD_PROVIDER_ERROR, message, session)
    if session.settled is None:
        if cancelled:
            return failed(job, ErrorCode.CHILD_ABORTED, CANCELLED, session)
        exited = session.exited
        assert exited is not None
        message = f"the child ended before it settled (exit code {exited.exit_code})"
        return failed(job, ErrorCode.CHILD_EXIT_NONZERO, message, session)
    if not session.texts:
        message = "the child settled without an assistant message"
        return failed(job, ErrorCode.CHILD_PROTOCOL_ERROR, message, session)
    return RunResult(
        job.key,
        job.role.agent,
        RunStatus.COMPLETED,
        # Kept whole: the next chain step or graph node needs it; the report applies
        # ``recordContent`` to what the caller gets.
        output=session.texts[-1],
        usage=session.usage,
        duration_ms=session.elapsed_ms(),
    )
