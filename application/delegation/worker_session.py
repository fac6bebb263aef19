"""One delegated attempt as a child on its ``ChildSession`` (docs/delegation.md, "Workers on
real Pi"): started in a private directory (``TempDirs``), stopped at the job's deadline on the
``Clock``, reported to the host exactly once.

The child is a fresh session whose worker instructions are appended to Pi's system prompt and
whose first prompt holds the exact packet bytes (``packetDigest`` is their hash) followed by the
task's text for reading; its only tools are the evidence broker's. A start that failed before
its first prompt was written is retried once, in a fresh directory, while the deadline leaves
time. The host gets one report: the last assistant message's text as raw bytes, its stop
reason, each model request's usage and their sum, and how many requests it counted. A message
past the output ceiling kills the worker and nothing is parsed; a message from another model
than the bound route fails it; the request past the attempt's held requests kills it, whatever
its turn called (docs/delegation.md, "The parent's count").
What is Pi's or the system's (the worker's own Pi agent directory, its process id, which start
failures may be retried) is the ``WorkerSetup`` the adapter gives.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from application.child.session import ChildSession, Stop
from application.child.worker import REQUEST_LIMIT_REASON
from application.delegation.broker import BROKER_TOOLS
from application.ports import (
    AssistantText,
    ChildEvent,
    ChildHandle,
    ChildRuntime,
    Clock,
    Confinement,
    Exited,
    NewSession,
    OutputProgress,
    ProviderRecovery,
    Settled,
    SpawnRequest,
    TempDirs,
    ToolResultSeen,
    WorkerLease,
    WorkerOutcome,
    WorkerStart,
)
from application.spawn_request import child_request
from domain.child_environment import WORKER_DIR_PREFIX, delegation_worker_environ
from domain.delegation.instructions import first_prompt, worker_instructions
from domain.usage import Usage

START_ATTEMPTS = 2
# The stop reason of an assistant message whose tool calls Pi runs before its next request.
TOOL_USE = "toolUse"
# A retry needs time for Pi to start (about a second) and to answer.
START_RETRY_MIN_SECONDS = 10.0


class WorkerHost(Protocol):
    def authorize_request(self, lease: WorkerLease) -> bool: ...

    def record_worker(self, lease: WorkerLease, pid: int) -> None: ...

    def report(self, lease: WorkerLease, outcome: WorkerOutcome) -> dict[str, Any]: ...


class WorkerSetup(Protocol):
    """What a worker's start needs from the platform it runs on."""

    def prepare(self, directory: str) -> Mapping[str, str]:
        """Make the worker's own Pi agent directory in its private ``directory``; the
        environment that points its Pi there."""
        ...

    def confinement(self, directory: str, lease: WorkerLease) -> Confinement | None:
        """What the worker's process tree may write where the kernel confines children, as a
        squad child's is (defence in depth behind its tool list); ``None`` where it cannot."""
        ...

    def restartable(self, error: Exception) -> bool:
        """``error`` is a start that failed before the first prompt was written: no model
        request can have been sent, so starting again bills nothing twice."""
        ...

    def process_id(self, handle: ChildHandle) -> int | None:
        """The worker's process, recorded so that a later host recognises it."""
        ...


@attrs.frozen
class WorkerPorts:
    """What every attempt of one runtime runs over: the children it starts, the clock its
    deadline is read on, its private directories and the platform's setup."""

    children: ChildRuntime
    clock: Clock
    temp_dirs: TempDirs
    setup: WorkerSetup


def receipt_usage(message: Usage) -> Usage:
    """A request's usage as the receipt keeps it: one that reported nothing is every category
    unknown and no reported request, never a made-up zero."""
    return message if message.reported else Usage()


def announces_request(event: ChildEvent) -> bool:
    """``event`` means Pi sends one more model request: a message that called tools (its
    follow-up goes out once they ran, whatever they were), or a retry or compaction."""
    if isinstance(event, ProviderRecovery):
        return True
    return isinstance(event, AssistantText) and event.stop_reason == TOOL_USE


class WorkerAttempt:
    """One attempt: ``run`` on its own thread; ``stop`` from any thread."""

    def __init__(
        self,
        start: WorkerStart,
        ports: WorkerPorts,
        *,
        host: WorkerHost,
        ended: Callable[[str], None],
    ) -> None:
        self._start = start
        self.lease = start.lease
        self._ports = ports
        self._host = host
        self._ended = ended
        self._lock = threading.Lock()
        self._reported = False
        self._directory: contextlib.ExitStack | None = None
        self._start_retries = 0
        # Model requests, as this parent counts them on the worker's stream (what the receipt
        # trusts): those admitted and announced (the first, each follow-up of a message with
        # tool calls, each retry or compaction), and how many it may send.
        self._requests = 0
        self.allowance = (
            start.requests if start.requests is not None else start.envelope.limits.max_requests
        )
        self._wake = threading.Event()  # a stop during the retry backoff
        self.done = threading.Event()
        self._session = ChildSession(
            ports.children,
            ports.clock,
            output_ceiling=start.envelope.limits.max_output_bytes,
            on_event=self._on_event,
        )

    # -- running --------------------------------------------------------------------------------

    def run(self) -> None:
        if self._start.delay_ms > 0 and self._wake.wait(self._start.delay_ms / 1000):
            # Stopped during a retry's backoff: nothing was started or sent.
            self._report(
                stop_reason="aborted", failure="aborted", problem="stopped before it started"
            )
            self._cleanup()
            return
        try:
            admitted = self._host.authorize_request(self.lease)
            if admitted:
                self._requests = 1
            if not admitted:
                self._report(
                    stop_reason="aborted",
                    failure="request_limit",
                    problem="no model request was admitted",
                )
                self._cleanup()
                return
            handle = self._spawn()
        except Exception as error:  # it never started: a failure, reported once
            problem = f"the worker did not start ({error})"
            self._report(stop_reason="error", failure="start_failed", problem=problem)
            self._cleanup()
            return
        pid = self._ports.setup.process_id(handle)
        if pid is not None and not self._session.killed:
            # Recorded for recovery: a later host recognises this exact process if we die.
            with contextlib.suppress(Exception):
                self._host.record_worker(self.lease, pid)
        deadline = self._ports.clock.monotonic() + self._seconds_left()
        if self._session.wait(deadline, until=self.done) is Stop.TIMEOUT:
            self._session.kill()
            problem = "the job deadline passed"
            self._report(stop_reason="aborted", failure="deadline", problem=problem)

    def _seconds_left(self) -> float:
        deadline_s = self._start.envelope.limits.deadline_at_ms / 1000
        return max(deadline_s - self._ports.clock.now().timestamp(), 0.0)

    def _spawn(self) -> ChildHandle:
        """Start the child; only a start ``WorkerSetup.restartable`` calls so is tried again,
        once, while the deadline leaves time (the request admitted for it is reused)."""
        for attempt in range(1, START_ATTEMPTS + 1):
            directory = self._fresh_directory()
            request = self._request(directory, self._ports.setup.prepare(directory))
            try:
                return self._session.start(request)
            except Exception as error:
                if (
                    not self._ports.setup.restartable(error)
                    or attempt == START_ATTEMPTS
                    or self._seconds_left() < START_RETRY_MIN_SECONDS
                    or self._session.killed
                ):
                    raise
                self._start_retries += 1
        raise AssertionError("unreachable")  # the loop returns or raises

    def _request(self, directory: str, platform: Mapping[str, str]) -> SpawnRequest:
        envelope, lease = self._start.envelope, self.lease
        route = envelope.model_route
        return child_request(
            owner="delegation",
            task_id=lease.attempt_id,
            cwd=directory,
            session=NewSession(directory),
            system_prompt=worker_instructions(envelope),
            first_prompt=first_prompt(envelope, self._start.packet),
            environment={**delegation_worker_environ(lease), **platform},
            model=route.model,
            provider=route.provider,
            thinking=route.thinking,
            tools=BROKER_TOOLS,
            observe_output=True,
            closed_context=True,
            confinement=self._ports.setup.confinement(directory, lease),
        )

    def _fallback(self, event: AssistantText) -> str | None:
        """A message from another model or provider than the bound route (seed §8: no silent
        fallback): the attempt fails. A route part left open (``None``) is not checked."""
        route = self._start.envelope.model_route
        for part, bound, used in (
            ("model", route.model, event.model),
            ("provider", route.provider, event.provider),
        ):
            if bound is not None and used is not None and used != bound:
                return f"the worker was answered by {part} {used}, not the bound {bound}"
        return None

    def _admit_next(self) -> bool:
        """The next request counted; ``False`` (and the worker killed at once) past the
        allowance: the guard refuses it too, but a turn that called only tools Pi does not
        have never reaches the guard, and a compaction never does."""
        with self._lock:
            self._requests += 1
            over = self._requests > self.allowance
        if over:
            self._session.kill()
            self._report(
                stop_reason="aborted",
                failure="request_limit",
                problem="the model-request limit is reached",
            )
        return not over

    def _on_event(self, event: ChildEvent) -> None:
        session = self._session
        if announces_request(event) and not self._admit_next():
            return
        if isinstance(event, OutputProgress | AssistantText):
            fallback = self._fallback(event) if isinstance(event, AssistantText) else None
            if fallback is not None:
                session.kill()
                self._report(stop_reason="error", failure="model_fallback", problem=fallback)
            elif session.overflow is not None:
                # The session killed it at the ceiling: nothing of the message is parsed.
                self._report(stop_reason="overflow", overflow=True, received=session.overflow)
        elif isinstance(event, ToolResultSeen):
            if event.is_error and any(REQUEST_LIMIT_REASON in (t or "") for t in event.texts):
                session.kill()
                self._report(
                    stop_reason="aborted",
                    failure="request_limit",
                    problem="the model-request limit is reached",
                )
        elif isinstance(event, Settled):
            last = session.last
            stop = (last.stop_reason if last is not None else None) or "stop"
            self._report(
                raw=(last.text if last is not None else "").encode("utf-8"),
                stop_reason=stop,
                failure={"error": "provider_error", "aborted": "aborted"}.get(stop),
            )
        elif isinstance(event, Exited):
            self._report(
                stop_reason="error",
                # A worker this host stopped did not die on its own: never a transient exit.
                failure="aborted" if session.killed else "exited",
                problem=f"the worker exited before it settled (status {event.exit_code})",
            )
            self._cleanup()

    # -- ending ---------------------------------------------------------------------------------

    def _report(
        self,
        *,
        raw: bytes = b"",
        stop_reason: str,
        overflow: bool = False,
        received: int | None = None,
        problem: str | None = None,
        failure: str | None = None,
    ) -> None:
        with self._lock:
            if self._reported:
                return
            self._reported = True
        session = self._session
        per_request = tuple(receipt_usage(usage) for usage in list(session.per_message))
        outcome = WorkerOutcome(
            raw=raw,
            overflow=overflow,
            stop_reason=stop_reason,
            usage=functools.reduce(Usage.plus, per_request, Usage()),
            per_request=per_request,
            received_bytes=received,
            problem=problem,
            provider_retries=session.recoveries,
            start_retries=self._start_retries,
            failure=failure,
            error_message=session.last_provider_error,
            responses=session.responses,
            # Every request that reached the provider: each message answered one, and a refused
            # one is counted too (Pi may have sent it before the kill landed).
            requests=max(self._requests, len(per_request) + session.recoveries),
        )
        try:
            self._host.report(self.lease, outcome)
        finally:
            self.done.set()
            session.wake()

    def _cleanup(self) -> None:
        """The worker is gone: its directory is removed and the runtime forgets it."""
        self._close_directory()
        self._ended(self.lease.attempt_id)

    def stop(self) -> bool:
        """Kill the child; ``True`` once it is reaped (or never started)."""
        self._session.kill()
        self._wake.set()
        handle = self._session.handle
        return handle is None or not handle.alive()

    def _fresh_directory(self) -> str:
        self._close_directory()
        directory = contextlib.ExitStack()
        path = directory.enter_context(self._ports.temp_dirs.temporary_dir(WORKER_DIR_PREFIX))
        with self._lock:
            self._directory = directory
        return path

    def _close_directory(self) -> None:
        with self._lock:
            directory, self._directory = self._directory, None
        if directory is not None:
            directory.close()
