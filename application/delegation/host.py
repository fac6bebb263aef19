"""``DelegationHost``: the `delegate` operations over one session (docs/delegation.md).

Every operation is one transaction of the session store (its lock, the state loaded, one
atomic write): the grant is synchronised first (a changed policy is a new generation), then
deadlines and source changes are applied, then the operation. A refusal raises before the
write, so a refused request reserves and records nothing. Calls into the worker runtime
(start, cancel) happen after the transaction, never under the lock; a lease is revoked in the
state before its worker is asked to stop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from application.delegation.admission import admit_follow_up, admit_run
from application.delegation.bindings import bound, idempotent, locate
from application.delegation.capture import capture_sources, changed_sources
from application.delegation.ledger import (
    apply_deadlines,
    apply_source_changes,
    invalidate,
    new_state,
    record_settlement,
    settling,
    stop,
    sync_policy,
)
from application.delegation.recovery import record_stopped, recover_lost_hosts
from application.delegation.views import batch_status, session_status
from application.delegation.workers import (
    admit_request,
    admit_tool,
    publish,
    record_worker_process,
    start_failed,
    start_ready,
)
from application.ports import (
    Clock,
    DelegationStore,
    FileSystem,
    GrantSource,
    Ids,
    Processes,
    Wakeup,
    WorkerLease,
    WorkerOutcome,
    WorkerRuntime,
    WorkerStart,
)
from domain.delegation.envelope import ModelRoute
from domain.delegation.errors import DelegationError
from domain.delegation.lifecycle import ACTIVE, Settlement, State
from domain.delegation.policy import Grant
from domain.delegation.request import (
    CancelRequest,
    CaptureRequest,
    CollectRequest,
    FollowUpRequest,
    ResolveRequest,
    RunRequest,
    StatusRequest,
    parse_request,
)
from domain.delegation.session import ProcessRecord, SessionState
from domain.errors import ErrorCode

T = TypeVar("T")
Step = Callable[[SessionState, Grant, int, list[WorkerLease]], T]
MAX_WAIT_MS = 30_000
# How often a waiting ``collect`` re-reads the store: another process may have written it.
POLL_SECONDS = 0.25


class DelegationHost:
    def __init__(
        self,
        *,
        session: str,
        store: DelegationStore,
        runtime: WorkerRuntime,
        grants: GrantSource,
        fs: FileSystem,
        clock: Clock,
        ids: Ids,
        wakeup: Wakeup,
        cwd: str,
        dispatching: bool = True,
        worker_context: bool = False,
        processes: Processes | None = None,
    ) -> None:
        self._session = session
        self._store = store
        self._runtime = runtime
        self._grants = grants
        self._fs = fs
        self._clock = clock
        self._ids = ids
        self._wakeup = wakeup
        self._cwd = cwd
        # A process without workers (the CLI in part 1) admits and reports but never starts.
        self._dispatching = dispatching
        # This process is itself a delegated worker: it may not delegate again.
        self._worker_context = worker_context
        # Recognises a lost host's attempts (recovery.py); None: no recovery.
        self._processes = processes
        self._me: ProcessRecord | None = processes.me() if processes is not None else None

    # -- helpers ---------------------------------------------------------------------------

    def _now_ms(self) -> int:
        return int(self._clock.now().timestamp() * 1000)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-{self._ids.uuid4_hex()}"

    def _transact(self, step: Step[T]) -> T:
        grant = self._grants.grant()
        revoked: list[WorkerLease] = []
        with self._store.transaction(self._session) as transaction:
            state = transaction.state or new_state(self._session, grant)
            now = self._now_ms()
            sync_policy(state, grant, now, revoked)
            apply_deadlines(state, now, revoked)
            survivors = (
                recover_lost_hosts(state, now, self._processes, self._me)
                if self._processes is not None
                else []
            )
            apply_source_changes(state, changed_sources(self._fs, state), now)
            outcome = step(state, grant, now, revoked)
            transaction.save(state)
        self._settle_revoked(revoked)
        self._stop_survivors(survivors)
        return outcome

    def _stop_survivors(self, survivors: list[tuple[str, ProcessRecord]]) -> None:
        """A lost host's worker still running, its identity exactly as recorded: stopped here
        (outside the lock), then its settlement recorded."""
        if self._processes is None:
            return
        for attempt_id, worker in survivors:
            try:
                stopped = self._processes.terminate(worker)
            except Exception:  # not confirmed: the slot stays settling
                stopped = False
            step: Step[None] = functools.partial(record_stopped, attempt_id, stopped)
            self._transact(step)
        if survivors:
            self._wakeup.notify()

    def _settle_revoked(self, revoked: list[WorkerLease]) -> None:
        """Ask each revoked worker to stop; until one confirms, its slot stays settling."""
        for lease in revoked:
            try:
                confirmed = self._runtime.cancel(lease)
            except Exception:  # a runtime that cannot answer has not confirmed anything
                confirmed = False

            self._transact(functools.partial(record_settlement, lease, confirmed))
        if revoked:
            self._wakeup.notify()

    def _no_recursion(self) -> None:
        if self._worker_context:
            raise DelegationError(
                ErrorCode.DELEGATE_POLICY_DENIED,
                "recursive delegation: a delegated worker cannot delegate",
            )

    # -- the operations --------------------------------------------------------------------

    def handle(self, document: object) -> dict[str, Any]:
        """One `delegate` call: parse the closed request, run its operation."""
        request = parse_request(document)
        assert isinstance(document, dict)  # parse_request refused anything else
        if isinstance(request, RunRequest):
            return self.run(request, document)
        if isinstance(request, FollowUpRequest):
            return self.follow_up(request, document)
        if isinstance(request, ResolveRequest):
            return self.resolve(request, document)
        if isinstance(request, CancelRequest):
            return self.cancel(request, document)
        if isinstance(request, CollectRequest):
            return self.collect(request)
        if isinstance(request, CaptureRequest):
            return self.capture(request)
        return self.status(request)

    def run(self, request: RunRequest, document: dict[str, Any]) -> dict[str, Any]:
        self._no_recursion()

        def step(state: SessionState, grant: Grant, now: int, _r: list[WorkerLease]) -> Any:
            route = ModelRoute(
                grant.model.provider,
                grant.model.model,
                grant.model.thinking,
                state.policy_generation,
            )
            return idempotent(
                state,
                grant,
                request.idempotency_key,
                document,
                lambda: admit_run(
                    state, request, grant=grant, now_ms=now, new_id=self._new_id, route=route
                ),
            )

        outcome: dict[str, Any] = self._transact(step)
        self.dispatch()
        return outcome

    def follow_up(self, request: FollowUpRequest, document: dict[str, Any]) -> dict[str, Any]:
        self._no_recursion()

        def step(state: SessionState, grant: Grant, now: int, _r: list[WorkerLease]) -> Any:
            def admit() -> dict[str, Any]:
                batch, job = bound(state, request.binding)
                return admit_follow_up(
                    state,
                    request,
                    batch=batch,
                    job=job,
                    grant=grant,
                    now_ms=now,
                    new_id=self._new_id,
                )

            return idempotent(state, grant, request.idempotency_key, document, admit)

        outcome: dict[str, Any] = self._transact(step)
        self.dispatch()
        return outcome

    def resolve(self, request: ResolveRequest, document: dict[str, Any]) -> dict[str, Any]:
        from application.delegation.resolution import resolve_result  # noqa: PLC0415

        def step(state: SessionState, grant: Grant, now: int, _r: list[WorkerLease]) -> Any:
            def decide() -> dict[str, Any]:
                batch, job = bound(state, request.binding)
                return resolve_result(batch, job, request, now)

            return idempotent(state, grant, request.idempotency_key, document, decide)

        outcome: dict[str, Any] = self._transact(step)
        self._wakeup.notify()
        return outcome

    def cancel(self, request: CancelRequest, document: dict[str, Any]) -> dict[str, Any]:
        def step(state: SessionState, grant: Grant, now: int, revoked: list[WorkerLease]) -> Any:
            def revoke() -> dict[str, Any]:
                batch, only = locate(state, request.batch_id, request.job_id)
                if only is None:
                    batch.cancelled = True  # admission is revoked before anything is awaited
                cancelled = []
                for job in [only] if only is not None else batch.jobs:
                    attempt = job.current
                    if attempt.state in ACTIVE:
                        stop(
                            state,
                            batch,
                            job,
                            attempt,
                            target=State.CANCELLED,
                            reason="cancelled by the parent",
                            now_ms=now,
                            revoked=revoked,
                        )
                        cancelled.append(job.job_id)
                return {"op": "cancel", "batchId": batch.batch_id, "cancelled": cancelled}

            return idempotent(state, grant, request.idempotency_key, document, revoke)

        outcome: dict[str, Any] = self._transact(step)
        after = self._store.snapshot(self._session)
        batch = after.batches[request.batch_id] if after is not None else None
        outcome["stillSettling"] = [
            {"jobId": job.job_id, "attemptId": a.attempt_id, "settlement": str(a.settlement)}
            for job in (batch.jobs if batch is not None else [])
            for a in job.attempts
            if a.settlement in (Settlement.IN_FLIGHT, Settlement.UNCERTAIN)
        ]
        self.dispatch()
        return outcome

    def capture(self, request: CaptureRequest) -> dict[str, Any]:
        def step(state: SessionState, grant: Grant, now: int, _r: list[WorkerLease]) -> Any:
            return capture_sources(
                state,
                request,
                grant=grant,
                fs=self._fs,
                store=self._store,
                cwd=self._cwd,
                now_ms=now,
                new_id=self._new_id,
            )

        outcome: dict[str, Any] = self._transact(step)
        return outcome

    def status(self, request: StatusRequest) -> dict[str, Any]:
        def step(state: SessionState, _g: Grant, _n: int, _r: list[WorkerLease]) -> Any:
            if request.batch_id is not None:
                batch, _ = locate(state, request.batch_id, None)
                return {"op": "status", **batch_status(batch)}
            return {
                "op": "status",
                **session_status(state),
                "settling": settling(state),
                "batches": [batch_status(batch) for batch in state.batches.values()],
            }

        outcome: dict[str, Any] = self._transact(step)
        self.dispatch()  # a deadline noticed here may have freed a slot
        return outcome

    def collect(self, request: CollectRequest) -> dict[str, Any]:
        from application.delegation.collection import collect_once  # noqa: PLC0415

        remaining = min(request.wait_ms, MAX_WAIT_MS) / 1000
        end = self._clock.monotonic() + remaining
        while True:
            outcome: dict[str, Any] = self._transact(
                lambda state, grant, now, _r: collect_once(state, grant, request, now)
            )
            self.dispatch()
            remaining = end - self._clock.monotonic()
            if outcome["items"] or outcome["expired"] or remaining <= 0:
                return outcome
            self._wakeup.wait(min(remaining, POLL_SECONDS))

    def navigate(self, reason: str) -> int:
        """The task changed (navigation, a new requirement revision): a new task generation,
        active work cancelled, ready results stale. Ordinary parent turns never call this."""

        def step(state: SessionState, _g: Grant, now: int, revoked: list[WorkerLease]) -> int:
            state.task_generation += 1
            invalidate(state, now, revoked, f"task navigation: {reason}")
            return state.task_generation

        return self._transact(step)

    # -- the worker side (workers.py) ------------------------------------------------------

    def dispatch(self) -> list[WorkerStart]:
        if not self._dispatching:
            return []
        starts: list[WorkerStart] = self._transact(
            lambda state, grant, now, revoked: start_ready(
                state,
                grant,
                now,
                revoked,
                token=self._ids.uuid4_hex,
                changed=changed_sources(self._fs, state),
                host=self._me,
            )
        )
        for start in starts:
            try:
                self._runtime.start(start)
            except Exception as error:  # it never started: record it as a failure
                self._start_failed(start.lease, type(error).__name__)
        return starts

    def _start_failed(self, lease: WorkerLease, why: str) -> None:
        self._transact(functools.partial(start_failed, lease, why))

    def authorize_request(self, lease: WorkerLease) -> bool:
        """Called by a worker runtime before every model request (per-turn admission)."""
        return self._worker_step(lambda state: admit_request(state, lease))

    def authorize_tool(self, lease: WorkerLease, tool: str) -> tuple[bool, str]:
        """Called by a worker runtime before every complete tool call executes."""
        return self._worker_step(lambda state: admit_tool(state, lease, tool))

    def report(self, lease: WorkerLease, outcome: WorkerOutcome) -> dict[str, Any]:
        """A worker's final output; published only while its lease is live."""
        result: dict[str, Any] = self._transact(
            lambda state, _g, now, _r: publish(
                state, lease, outcome, self._store, now, new_id=self._new_id
            )
        )
        self._wakeup.notify()
        self.dispatch()
        return result

    def record_worker(self, lease: WorkerLease, pid: int) -> None:
        """The runtime started the attempt's worker process: its identity is recorded, so a
        later host can recognise it (and only it) if this host dies."""
        record = self._processes.identify(pid) if self._processes is not None else None
        if record is not None:
            self._worker_step(lambda state: record_worker_process(state, lease, record))

    def _worker_step(self, step: Callable[[SessionState], T]) -> T:
        return self._transact(lambda state, _g, _n, _r: step(state))
