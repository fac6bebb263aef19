"""``PiWorkerRuntime``: the `delegate` host's workers as ``pi --mode rpc`` children
(docs/delegation.md, "Workers on real Pi").

Each started attempt is one child over the ``ChildRuntime`` port: a fresh session and its own
Pi agent directory (Pi's retries off) in a private temporary directory (removed when the worker
ends: the host keeps no transcript), the worker instructions appended to Pi's system prompt,
and a first prompt holding the exact packet bytes (``packetDigest`` is their hash) followed by
the task's text for reading. Its only tools are the evidence broker's (``--tools``), served by
its own bridge (``DelegationWorkerChild``).

The host is told before every model request the runtime sees coming (the first one here; the
later ones in the worker's bridge), and gets one report per attempt: the last assistant
message's text as raw bytes, its stop reason, each request's usage and their sum. The output
ceiling is checked on every finalised assistant message: over it, the worker is killed and
nothing is parsed. Cancellation and the job deadline kill the child (SIGTERM, then SIGKILL)
and return once it is reaped.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from adapters.delegation.worker_setup import usage_of, worker_agent_variables, write_worker_settings
from adapters.isolation.scratch import WORKER_PREFIX, make_scratch
from adapters.pi_rpc import SpawnFailed
from application.child.worker import REQUEST_LIMIT_REASON
from application.delegation.broker import BROKER_TOOLS
from application.delegation.instructions import first_prompt, worker_instructions
from application.ports import (
    AssistantText,
    ChildEvent,
    ChildHandle,
    ChildRuntime,
    Exited,
    NewSession,
    OutputProgress,
    ProviderError,
    ProviderRecovery,
    Settled,
    SpawnRequest,
    ToolResultSeen,
    WorkerLease,
    WorkerOutcome,
    WorkerStart,
)
from domain.child_environment import DelegationWorkerChild, delegation_worker_environ
from domain.delegation.session import Usage

SQUAD_ROOT = "PI_SQUAD_ROOT"
START_ATTEMPTS = 2
# A retry needs time for Pi to start (about a second) and to answer.
START_RETRY_MIN_SECONDS = 10.0


class WorkerHost(Protocol):
    def authorize_request(self, lease: WorkerLease) -> bool: ...

    def record_worker(self, lease: WorkerLease, pid: int) -> None: ...

    def report(self, lease: WorkerLease, outcome: WorkerOutcome) -> dict[str, Any]: ...


class _Worker:
    def __init__(self, runtime: PiWorkerRuntime, start: WorkerStart) -> None:
        self._runtime = runtime
        self._start = start
        self._lease = start.lease
        self._lock = threading.Lock()
        self._handle: ChildHandle | None = None
        self._stopping = False
        self._reported = False
        self._per_request: list[Usage] = []
        self._last: AssistantText | None = None
        self._session_dir: str | None = None
        self._retries = 0
        self._start_retries = 0
        self._error_message: str | None = None
        self._responses = 0  # assistant messages that did not stop with error/aborted
        self._wake = threading.Event()  # a stop during the retry backoff
        self.done = threading.Event()

    # -- running ------------------------------------------------------------------------------

    def run(self) -> None:
        host = self._runtime.host
        if self._start.delay_ms > 0 and self._wake.wait(self._start.delay_ms / 1000):
            # Stopped during a retry's backoff: nothing was started or sent.
            self._report(
                stop_reason="aborted", failure="aborted", problem="stopped before it started"
            )
            self._cleanup()
            return
        try:
            if not host.authorize_request(self._lease):
                self._report(
                    stop_reason="aborted",
                    failure="request_limit",
                    problem="no model request was admitted",
                )
                self._cleanup()
                return
            handle = self._spawn()
        except Exception as error:  # it never started: a failure, reported once
            self._report(
                stop_reason="error",
                failure="start_failed",
                problem=f"the worker did not start ({error})",
            )
            self._cleanup()
            return
        with self._lock:
            self._handle = handle
            stopping = self._stopping
        pid = getattr(handle, "pid", None)
        if isinstance(pid, int) and not stopping:
            # Recorded for recovery: a later host recognises this exact process if we die.
            with contextlib.suppress(Exception):
                host.record_worker(self._lease, pid)
        if stopping:  # cancelled while Pi was starting
            handle.kill()
        deadline = self._start.envelope.limits.deadline_at_ms / 1000 - time.time()
        if not self.done.wait(max(deadline, 0)):
            self._stop_child()
            self._report(
                stop_reason="aborted", failure="deadline", problem="the job deadline passed"
            )

    def _spawn(self) -> ChildHandle:
        """Start the child. The one classified transient failure, a start that failed before
        the first prompt was written (no model request can have been sent, so nothing is
        billed twice and the request admitted for it is reused), is retried once while the
        deadline leaves time, in a fresh directory; every other failure is final."""
        for attempt in range(1, START_ATTEMPTS + 1):
            self._cleanup_dir()
            self._session_dir = make_scratch(None, prefix=WORKER_PREFIX)
            write_worker_settings(self._session_dir, self._runtime.agent_dir)
            try:
                return self._runtime.children.spawn(self._spawn_request(), self._on_event)
            except SpawnFailed as failure:
                remaining = self._start.envelope.limits.deadline_at_ms / 1000 - time.time()
                with self._lock:
                    stopping = self._stopping
                if (
                    not failure.before_prompt
                    or attempt == START_ATTEMPTS
                    or remaining < START_RETRY_MIN_SECONDS
                    or stopping
                ):
                    raise
                self._start_retries += 1
        raise AssertionError("unreachable")  # the loop returns or raises

    def _spawn_request(self) -> SpawnRequest:
        envelope = self._start.envelope
        lease = self._lease
        worker = DelegationWorkerChild(
            lease.session,
            lease.batch_id,
            lease.job_id,
            lease.attempt_id,
            lease.token,
            lease.packet_digest,
        )
        assert self._session_dir is not None
        route = envelope.model_route
        return SpawnRequest(
            squad_id="delegation",
            task_id=lease.attempt_id,
            cwd=self._session_dir,
            session=NewSession(self._session_dir),
            system_prompt=worker_instructions(envelope),
            first_prompt=first_prompt(envelope, self._start.packet),
            environment={
                **delegation_worker_environ(worker),
                SQUAD_ROOT: self._runtime.squad_root,
                **worker_agent_variables(self._session_dir),
            },
            model=route.model,
            provider=route.provider,
            thinking=route.thinking,
            tools=BROKER_TOOLS,
            observe_output=True,
            closed_context=True,
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

    def _over_ceiling(self, size: int) -> None:
        """Stop reading: kill the worker and report the overflow; nothing is parsed."""
        self._stop_child()
        self._report(stop_reason="overflow", overflow=True, received=size)

    def _on_event(self, event: ChildEvent) -> None:
        if isinstance(event, OutputProgress):
            # The chunk that would cross the ceiling is never appended: the worker is stopped.
            if event.message_bytes > self._start.envelope.limits.max_output_bytes:
                self._over_ceiling(event.message_bytes)
        elif isinstance(event, AssistantText):
            self._per_request.append(usage_of(event))
            self._last = event
            if event.stop_reason not in ("error", "aborted"):
                with self._lock:
                    self._responses += 1
            fallback = self._fallback(event)
            if fallback is not None:
                self._stop_child()
                self._report(stop_reason="error", failure="model_fallback", problem=fallback)
                return
            size = len(event.text.encode("utf-8"))
            if size > self._start.envelope.limits.max_output_bytes:
                self._over_ceiling(size)
        elif isinstance(event, ProviderError):
            with self._lock:
                self._error_message = event.message
        elif isinstance(event, ProviderRecovery):
            with self._lock:
                self._retries += 1
        elif isinstance(event, ToolResultSeen):
            if event.is_error and any(REQUEST_LIMIT_REASON in (t or "") for t in event.texts):
                self._stop_child()
                self._report(
                    stop_reason="aborted",
                    failure="request_limit",
                    problem="the model-request limit is reached",
                )
        elif isinstance(event, Settled):
            last = self._last
            stop = (last.stop_reason if last is not None else None) or "stop"
            self._report(
                raw=(last.text if last is not None else "").encode("utf-8"),
                stop_reason=stop,
                failure={"error": "provider_error", "aborted": "aborted"}.get(stop),
            )
        elif isinstance(event, Exited):
            with self._lock:
                stopped_by_host = self._stopping
            self._report(
                stop_reason="error",
                # A worker this host stopped did not die on its own: never a transient exit.
                failure="aborted" if stopped_by_host else "exited",
                problem=f"the worker exited before it settled (status {event.exit_code})",
            )
            self._cleanup()

    # -- ending -------------------------------------------------------------------------------

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
            per_request = tuple(self._per_request)
            retries = self._retries
            start_retries = self._start_retries
            error_message = self._error_message
            responses = self._responses
        total = Usage()
        for usage in per_request:
            total.add(usage)
        outcome = WorkerOutcome(
            raw=raw,
            overflow=overflow,
            stop_reason=stop_reason,
            usage=total,
            per_request=per_request,
            received_bytes=received,
            problem=problem,
            provider_retries=retries,
            start_retries=start_retries,
            failure=failure,
            error_message=error_message,
            responses=responses,
        )
        try:
            self._runtime.host.report(self._lease, outcome)
        finally:
            self.done.set()

    def _stop_child(self) -> None:
        with self._lock:
            self._stopping = True
            handle = self._handle
        self._wake.set()
        if handle is not None:
            handle.kill()  # SIGTERM, SIGKILL after the grace; returns once reaped

    def stop(self) -> bool:
        """Kill the child; ``True`` once it is reaped (or never started)."""
        self._stop_child()
        with self._lock:
            handle = self._handle
        return handle is None or not handle.alive()

    def _cleanup_dir(self) -> None:
        if self._session_dir is not None:
            shutil.rmtree(self._session_dir, ignore_errors=True)
            self._session_dir = None

    def _cleanup(self) -> None:
        self._cleanup_dir()
        self._runtime.forget(self._lease.attempt_id)


class PiWorkerRuntime:
    """A ``WorkerRuntime`` over real Pi children (``agent_dir``: the user's Pi agent directory,
    which each worker's own copies). ``bind`` the host before the first start."""

    def __init__(self, children: ChildRuntime, *, squad_root: str, agent_dir: str) -> None:
        self.children = children
        self.squad_root = squad_root
        self.agent_dir = agent_dir
        self._host: WorkerHost | None = None
        self._lock = threading.Lock()
        self._workers: dict[str, _Worker] = {}
        self._idle = threading.Condition(self._lock)
        self.started: list[str] = []  # attempt IDs, in start order

    def bind(self, host: WorkerHost) -> None:
        self._host = host

    @property
    def host(self) -> WorkerHost:
        assert self._host is not None, "PiWorkerRuntime.bind was not called"
        return self._host

    def start(self, start: WorkerStart) -> None:
        worker = _Worker(self, start)
        with self._lock:
            self._workers[start.lease.attempt_id] = worker
            self.started.append(start.lease.attempt_id)
        threading.Thread(
            target=worker.run, name=f"delegate-worker-{start.lease.attempt_id[:10]}", daemon=True
        ).start()

    def cancel(self, lease: WorkerLease) -> bool:
        """``True`` once this process's worker of ``lease`` is stopped (or already ended). A
        lease this process never started runs elsewhere, if anywhere: nothing here confirms it
        stopped, so its slot stays settling."""
        with self._lock:
            worker = self._workers.get(lease.attempt_id)
            ours = lease.attempt_id in self.started
        if worker is None:
            return ours
        return worker.stop()

    def forget(self, attempt_id: str) -> None:
        with self._idle:
            self._workers.pop(attempt_id, None)
            self._idle.notify_all()

    def running(self) -> dict[str, WorkerLease]:
        with self._lock:
            return {a: w._lease for a, w in self._workers.items()}

    def wait_idle(self, seconds: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: not self._workers, timeout=seconds)

    def stop_all(self) -> None:
        """Shutdown: every worker killed (their leases stay the host's to settle)."""
        for lease in list(self.running().values()):
            with contextlib.suppress(Exception):
                self.cancel(lease)


def sweep_revoked(
    runtime: PiWorkerRuntime, live: Callable[[WorkerLease], bool]
) -> list[WorkerLease]:
    """Kill the workers whose lease another process revoked (a ``cancel`` from the CLI):
    this process learns it only from the store."""
    stopped = []
    for lease in runtime.running().values():
        if not live(lease):
            runtime.cancel(lease)
            stopped.append(lease)
    return stopped
