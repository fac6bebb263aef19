"""``DelegationHost``: the `delegate` operations over one session (docs/delegation.md).

Each operation is one load → decide → save transaction (``transactions.py``): the decision is
the domain's (``domain/delegation/``: admission, bindings, collection, resolution, the worker
side), the host supplies the time, the ids and what only a port can read, and starts workers
after the transaction, never under the lock.
"""

from __future__ import annotations

from typing import Any, TypeVar

from application.delegation.capture import capture_sources, changed_sources
from application.delegation.transactions import Decide, SessionPorts, SessionTransactions
from application.ports import Ids, WorkerLease, WorkerOutcome, WorkerStart
from domain.delegation.admission import admit_follow_up, admit_run
from domain.delegation.bindings import bound, idempotent
from domain.delegation.collection import collect_once
from domain.delegation.decision import Decision, unchanged
from domain.delegation.envelope import ModelRoute
from domain.delegation.errors import DelegationError
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
from domain.delegation.resolution import resolve_result
from domain.delegation.revocation import cancel, navigate
from domain.delegation.session import SessionState
from domain.delegation.upkeep import GrantUse, renewed
from domain.delegation.views import status, still_settling
from domain.delegation.worker_side import (
    admit_request,
    admit_tool,
    publish,
    record_worker_process,
    start_failed,
    start_ready,
)
from domain.errors import ErrorCode

T = TypeVar("T")
Answer = dict[str, Any]
MAX_WAIT_MS = 30_000
# How often a waiting ``collect`` re-reads the store: another process may have written it.
POLL_SECONDS = 0.25


class DelegationHost:
    def __init__(
        self,
        *,
        session: str,
        ports: SessionPorts,
        ids: Ids,
        cwd: str,
        dispatching: bool = True,
        worker_context: bool = False,
    ) -> None:
        self._session = session
        self._ports = ports
        self._transactions = SessionTransactions(session, ports)
        self._ids = ids
        self._cwd = cwd
        # A process without workers (the CLI in part 1) admits and reports but never starts.
        self._dispatching = dispatching
        # This process is itself a delegated worker: it may not delegate again.
        self._worker_context = worker_context

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}-{self._ids.uuid4_hex()}"

    def _transact(self, decide: Decide[T], use: GrantUse = GrantUse.HOST) -> T:
        return self._transactions.run(decide, use)

    def _no_recursion(self) -> None:
        if self._worker_context:
            raise DelegationError(
                ErrorCode.DELEGATE_POLICY_DENIED,
                "recursive delegation: a delegated worker cannot delegate",
            )

    # -- the operations --------------------------------------------------------------------

    def handle(self, document: object) -> Answer:
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

    def _keyed(self, key: str | None, document: Answer, decide: Decide[Answer]) -> Answer:
        """One transaction whose answer a key replays (``bindings.idempotent``)."""
        return self._transact(
            lambda state, grant, now: idempotent(
                state, grant, key, document, lambda: decide(state, grant, now)
            ),
            GrantUse.REQUEST,
        )

    def run(self, request: RunRequest, document: Answer) -> Answer:
        self._no_recursion()

        def admit(state: SessionState, grant: Grant, now: int) -> Decision[Answer]:
            model = grant.model
            route = ModelRoute(model.provider, model.model, model.thinking, state.policy_generation)
            return admit_run(
                state, request, grant=grant, now_ms=now, new_id=self._new_id, route=route
            )

        outcome = self._keyed(request.idempotency_key, document, admit)
        self.dispatch()
        return outcome

    def follow_up(self, request: FollowUpRequest, document: Answer) -> Answer:
        self._no_recursion()

        def admit(state: SessionState, grant: Grant, now: int) -> Decision[Answer]:
            batch, job = bound(state, request)
            return admit_follow_up(
                state, request, batch=batch, job=job, grant=grant, now_ms=now, new_id=self._new_id
            )

        outcome = self._keyed(request.idempotency_key, document, admit)
        self.dispatch()
        return outcome

    def resolve(self, request: ResolveRequest, document: Answer) -> Answer:
        def decide(state: SessionState, _grant: Grant, now: int) -> Decision[Answer]:
            batch, job = bound(state, request)
            return resolve_result(state, batch, job, request, now)

        outcome = self._keyed(request.idempotency_key, document, decide)
        self._ports.wakeup.notify()
        return outcome

    def cancel(self, request: CancelRequest, document: Answer) -> Answer:
        outcome = self._keyed(
            request.idempotency_key,
            document,
            lambda state, _grant, now: cancel(state, request.batch_id, request.job_id, now),
        )
        after = self._ports.store.snapshot(self._session)
        batch = after.batches.get(request.batch_id) if after is not None else None
        self.dispatch()
        return {**outcome, "stillSettling": still_settling(batch)}

    def capture(self, request: CaptureRequest) -> Answer:
        def decide(state: SessionState, grant: Grant, now: int) -> Decision[Answer]:
            decision = capture_sources(
                state,
                request,
                grant=grant,
                fs=self._ports.fs,
                store=self._ports.store,
                cwd=self._cwd,
                now_ms=now,
                new_id=self._new_id,
            )
            return unchanged(decision.state, decision.answer.answer)

        return self._transact(decide, GrantUse.REQUEST)

    def status(self, request: StatusRequest) -> Answer:
        outcome = self._transact(
            lambda state, _grant, _now: unchanged(state, status(state, request.batch_id)),
            GrantUse.READ,
        )
        self.dispatch()  # a deadline noticed here may have freed a slot
        return outcome

    def collect(self, request: CollectRequest) -> Answer:
        remaining = min(request.wait_ms, MAX_WAIT_MS) / 1000
        end = self._ports.clock.monotonic() + remaining
        while True:
            outcome = self._transact(
                lambda state, grant, now: collect_once(state, grant, request, now), GrantUse.READ
            )
            self.dispatch()
            remaining = end - self._ports.clock.monotonic()
            if outcome["items"] or outcome["expired"] or remaining <= 0:
                return outcome
            self._ports.wakeup.wait(min(remaining, POLL_SECONDS))

    def renew(self) -> Answer:
        """A person adopts the grant of this call (the policy files and its flags) as a new
        policy generation, renewing the allowance (``upkeep.renewed``): the one way a session's
        grant changes. Never from a worker, and not an op of the tool."""
        self._no_recursion()

        def renew(state: SessionState, grant: Grant, now: int) -> Decision[Answer]:
            decision = renewed(state, grant, now)
            after = decision.state
            return decision.then(unchanged(after, {**status(after, None), "op": "renew"}))

        outcome = self._transact(renew, GrantUse.RENEW)
        self.dispatch()
        return outcome

    def snapshot(self) -> SessionState | None:
        """The session as last committed, read without a transaction and changing nothing (what
        Pi's live row draws, docs/delegation.md "In Pi")."""
        return self._ports.store.snapshot(self._session)

    def now_ms(self) -> int:
        return self._transactions.now_ms()

    def upkeep(self, use: GrantUse = GrantUse.HOST) -> None:
        """Deadlines, lost hosts and changed sources applied, nothing else decided (a worker
        process's poll); ``GrantUse.REQUEST`` first refuses a process under another grant."""
        self._transact(lambda state, _grant, _now: unchanged(state, None), use)
        self.dispatch()  # a deadline noticed here may have freed a slot

    def navigate(self, reason: str) -> int:
        """The task changed (navigation, a new requirement revision): a new task generation,
        active work cancelled, ready results stale. Ordinary parent turns never call this."""
        return self._transact(lambda state, _grant, now: navigate(state, now, reason))

    # -- the worker side (domain/delegation/worker_side.py) --------------------------------

    def dispatch(self) -> list[WorkerStart]:
        if not self._dispatching:
            return []
        starts = self._transact(
            lambda state, grant, now: start_ready(
                state,
                grant,
                now,
                token=self._ids.uuid4_hex,
                changed=changed_sources(self._ports.fs, state.sources),
                host=self._transactions.me,
            )
        )
        for start in starts:
            try:
                self._ports.runtime.start(start)
            except Exception as error:  # it never started: record it as a failure
                self._start_failed(start.lease, type(error).__name__)
        return starts

    def _start_failed(self, lease: WorkerLease, why: str) -> None:
        self._transact(lambda state, _grant, now: start_failed(state, lease, why, now))

    def authorize_request(self, lease: WorkerLease) -> bool:
        """Called by a worker runtime before every model request (per-turn admission)."""
        return self._transact(lambda state, _grant, _now: admit_request(state, lease))

    def authorize_tool(self, lease: WorkerLease, tool: str) -> tuple[bool, str]:
        """Called by a worker runtime before every complete tool call executes."""
        return self._transact(lambda state, _grant, _now: admit_tool(state, lease, tool))

    def report(self, lease: WorkerLease, outcome: WorkerOutcome) -> Answer:
        """A worker's final output; published only while its lease is live."""

        def read_source(sha256: str) -> bytes:
            return self._ports.store.read_source(self._session, sha256)

        result = self._transact(
            lambda state, _grant, now: publish(
                state, lease, outcome, now, read_source=read_source, new_id=self._new_id
            )
        )
        self._ports.wakeup.notify()
        self.dispatch()
        return result

    def record_worker(self, lease: WorkerLease, pid: int) -> None:
        """The runtime started the attempt's worker process: its identity is recorded, so a
        later host can recognise it (and only it) if this host dies."""
        processes = self._ports.processes
        record = processes.identify(pid) if processes is not None else None
        if record is not None:
            self._transact(lambda state, _grant, _now: record_worker_process(state, lease, record))
