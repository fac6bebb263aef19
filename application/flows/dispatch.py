"""``ChildDispatcher``: the one place a flow child is spawned.

Every mode dispatches through it (``domain.flows.runs.Dispatch``), so the bounds hold whatever
the mode: at most ``maxParallelTasks`` jobs per batch, at most ``concurrency`` children alive
at once, each stopped at ``timeoutMs``; each child gets ``PI_SQUAD_CHILD=1`` (the bridge gives
it no squad or flow tools, so it cannot nest), its own session directory, and exactly the
admitted role's model, thinking, tools and working directory. Parts 2 and 3 add budgets,
contracts and isolation here, not in the modes.
"""

from __future__ import annotations

import contextlib
import posixpath
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import attrs

from application.flows.budgets import FlowBudgets, Governed, Refusal, refused, stopped, trace_budget
from application.flows.child_watch import Activity, ChildWatch
from application.flows.trace_handoffs import consume, validation
from application.flows.tracing import FlowTrace
from application.ports import (
    ChildEvent,
    ChildHandle,
    ChildRuntime,
    Clock,
    Confinement,
    FileSystem,
    NewSession,
    SpanRef,
    SpawnRequest,
)
from domain.child_environment import flow_child_environ
from domain.errors import ErrorCode
from domain.flows.call import MAX_PARALLEL_TASKS, FlowTask
from domain.flows.child_limits import (
    DEFAULT_ERROR_GRACE_MS,
    Stop,
    provider_error_message,
)
from domain.flows.errors import refuse
from domain.flows.roles import ResolvedRole
from domain.flows.runs import ChildJob, RunResult, RunStatus, Usage

SESSION_DIR_MODE = 0o700
# Told when a run starts (``None``) and when it settles (its result): the live views' feed.
Observer = Callable[[ChildJob, RunResult | None], None]


class RunHooks(Protocol):
    """What a kind of flow adds to each child it runs (an attested flow's proof): the request
    it is started with, what its stream shows, and how its settled run is judged."""

    def request(self, job: ChildJob, request: SpawnRequest, *, read_only: bool) -> SpawnRequest: ...

    def spawned(self, job: ChildJob, handle: ChildHandle) -> None: ...

    def observe(self, job: ChildJob, event: ChildEvent) -> None: ...

    def settle(self, job: ChildJob, result: RunResult) -> RunResult: ...


@attrs.frozen
class DispatchSettings:
    flow_id: str
    # ``<squad root>/.flows/<flowId>``: one session directory per run below it.
    flow_dir: str
    concurrency: int
    timeout_seconds: float
    # The squad root: a confined (bash-ro) child may write nothing under it but its session.
    squad_root: str = ""
    # How bash-ro is enforced here (``domain.flows.tools.bash_ro_enforcement``): a ``sandbox``
    # layer confines the child with Landlock; the allowlist runs in every bash-ro child.
    bash_ro_enforcement: str = "sandbox+allowlist"
    # A child whose provider failed and that stays silent this long is stopped.
    error_grace_seconds: float = DEFAULT_ERROR_GRACE_MS / 1000


class ChildDispatcher:
    def __init__(
        self,
        runtime: ChildRuntime,
        clock: Clock,
        fs: FileSystem,
        settings: DispatchSettings,
        *,
        resolve: Callable[[FlowTask], ResolvedRole],
        observer: Observer | None = None,
        activity: Activity | None = None,
        cancelled: threading.Event | None = None,
        hooks: RunHooks | None = None,
        trace: FlowTrace | None = None,
        budgets: FlowBudgets | None = None,
    ) -> None:
        self._runtime = runtime
        # The flow's shared budgets (docs/flows.md "Budgets"): charged at every response.
        self._budgets = budgets if budgets is not None and budgets.active else None
        self._hooks = hooks
        self._clock = clock
        self._fs = fs
        self._settings = settings
        self._resolve = resolve
        self._observer = observer
        self._activity = activity
        self._cancelled = cancelled if cancelled is not None else threading.Event()
        self._trace = trace
        self._live: dict[str, tuple[ChildHandle, ChildWatch]] = {}
        self._lock = threading.Lock()
        self.spawned = 0

    def cancel(self) -> None:
        """Stop every live child (each run ends ``CHILD_ABORTED``); runs not yet started are
        never spawned. Safe from any thread, any number of times."""
        self._cancelled.set()
        with self._lock:
            live = list(self._live.values())
        for handle, watch in live:
            handle.kill()
            watch.wake()

    def __call__(self, jobs: Sequence[ChildJob]) -> tuple[RunResult, ...]:
        if len(jobs) > MAX_PARALLEL_TASKS:
            # Admission already bounds every mode; this holds for a mode that forgets.
            raise refuse(
                ErrorCode.TOO_MANY_TASKS,
                "$",
                f"a batch of {len(jobs)} children exceeds maxParallelTasks",
                measured=len(jobs),
                allowed=MAX_PARALLEL_TASKS,
            )
        # One batch is one stage of the trace (a chain step, a graph wave, a fan-out).
        stage = self._trace.stage(jobs) if self._trace is not None else None
        results: tuple[RunResult, ...] = ()
        try:
            if len(jobs) <= 1:
                results = tuple(self._run(job, stage) for job in jobs)
            else:
                workers = min(self._settings.concurrency, len(jobs))
                with ThreadPoolExecutor(
                    max_workers=workers, thread_name_prefix="flow-child"
                ) as pool:
                    results = tuple(pool.map(lambda job: self._run(job, stage), jobs))
        finally:
            if self._trace is not None and stage is not None:
                self._trace.end_stage(stage, results)
        return results

    def _run(self, job: ChildJob, stage: SpanRef | None = None) -> RunResult:
        # Admitted first: a child the flow's cancellation or a reached budget keeps from
        # spawning consumed nothing, so no handoff is recorded as accepted for it.
        admission: Governed | Refusal | None = None
        if not self._cancelled.is_set() and self._budgets is not None:
            admission = self._budgets.admit(job)
        spawns = not self._cancelled.is_set() and not isinstance(admission, Refusal)
        span = None
        if self._trace is not None:
            # The handoffs its prompt carries are written first: its span links through them.
            through = consume(self._trace, job) if spawns else {}
            span = self._trace.start_child(job, stage, self._resolve(job.role), through)
        if self._observer is not None:
            self._observer(job, None)
        result = self._run_child(job, admission)
        if self._resolve(job.role).tools.read_only_bash:
            result = attrs.evolve(result, enforcement=self._settings.bash_ro_enforcement)
        if self._hooks is not None and result.status is not RunStatus.SKIPPED:
            result = self._hooks.settle(job, result)
        if self._observer is not None:
            self._observer(job, result)
        if self._trace is not None and span is not None:
            budget = None
            if self._budgets is not None:
                budget = trace_budget(self._budgets, self._trace, job.key)
            self._trace.end_child(span, result, budget)
            validation(self._trace, job, result)
        return result

    def _run_child(self, job: ChildJob, governed: Governed | Refusal | None) -> RunResult:
        role = self._resolve(job.role)
        if self._cancelled.is_set():
            if isinstance(governed, Governed) and self._budgets is not None:
                self._budgets.release(governed)
            return self._failed(job, ErrorCode.CHILD_ABORTED, "the flow was cancelled", None)
        session_dir = posixpath.join(self._settings.flow_dir, job.key)
        request = SpawnRequest(
            squad_id=self._settings.flow_id,
            task_id=job.key,
            cwd=role.cwd,
            session=NewSession(session_dir),
            system_prompt=role.system_prompt,
            first_prompt=job.prompt,
            # bash-ro: the child's bridge screens its bash calls (the allowlist layer).
            environment=flow_child_environ(read_only_bash=role.tools.read_only_bash),
            model=role.model,
            thinking=role.thinking,
            tools=role.tools.child_tools(),
            # bash-ro: the kernel lets the child's whole process tree write only its own session
            # directory (and the runtime's private temp and Pi's agent directory), so nothing
            # under its cwd; where Landlock is unavailable the allowlist stands alone.
            confinement=(
                Confinement(self._settings.squad_root, session_dir, session_dir)
                if role.tools.read_only_bash and "sandbox" in self._settings.bash_ro_enforcement
                else None
            ),
        )
        if isinstance(governed, Refusal):
            return refused(job, governed, self._budgets, self._trace)
        if self._hooks is not None:
            request = self._hooks.request(job, request, read_only=role.tools.read_only_bash)
        assert isinstance(request.session, NewSession)
        self._fs.ensure_dir(request.session.session_dir, SESSION_DIR_MODE)
        watch = ChildWatch(self._clock, job.key, self._activity)
        started = self._clock.monotonic()
        try:
            handle = self._runtime.spawn(request, self._sink(job, watch, governed))
        except Exception as error:  # any start failure is this run's failure, not the flow's
            if governed is not None and self._budgets is not None:
                self._budgets.release(governed)
            return self._failed(
                job, ErrorCode.CHILD_EXIT_NONZERO, f"could not start: {error}", started
            )
        self.spawned += 1
        if governed is not None and self._budgets is not None:
            # Steered now if a shared ceiling is already inside its wrap-up window.
            self._budgets.attach(governed, handle)
        if self._hooks is not None:
            self._hooks.spawned(job, handle)
        with self._lock:
            self._live[job.key] = (handle, watch)
        if self._cancelled.is_set():
            # Cancelled while this child started: ``cancel`` may not have seen it.
            handle.kill()
        timeout = self._settings.timeout_seconds
        if governed is not None:
            timeout = governed.timeout_seconds(timeout)
        try:
            stop = watch.wait(
                started + timeout, self._settings.error_grace_seconds, self._cancelled
            )
        finally:
            with self._lock:
                self._live.pop(job.key, None)
            if governed is not None and self._budgets is not None:
                self._budgets.release(governed)
        if governed is not None and governed.stop is not None:
            # Latched at the response that crossed: it decides, whatever raced it.
            handle.kill()
            return stopped(job, governed, watch.texts, watch.usage, self._elapsed_ms(started))
        if stop is Stop.PROVIDER_ERROR:
            handle.kill()
            message = provider_error_message(watch.provider_error or "")
            return self._failed(job, ErrorCode.CHILD_PROVIDER_ERROR, message, started, watch)
        if stop is Stop.TIMEOUT:
            handle.kill()
            return self._failed(
                job,
                ErrorCode.CHILD_TIMEOUT,
                f"stopped after timeoutMs {round(timeout * 1000)}",
                started,
                watch,
            )
        return self._settled(job, watch, started)

    def _sink(
        self, job: ChildJob, watch: ChildWatch, governed: Governed | None = None
    ) -> Callable[[ChildEvent], None]:
        hooks = self._hooks
        budgets = self._budgets if governed is not None else None
        if hooks is None and budgets is None:
            return watch.sink

        def sink(event: ChildEvent) -> None:
            if hooks is not None:
                # Fail closed without killing the runtime's reader: an observation not recorded
                # proves nothing, so the run's attestation cannot be grounded on it.
                with contextlib.suppress(Exception):
                    hooks.observe(job, event)
            watch.sink(event)
            if budgets is not None and governed is not None and budgets.observe(governed, event):
                watch.stop_for_budget()

        return sink

    def _settled(self, job: ChildJob, watch: ChildWatch, started: float) -> RunResult:
        if watch.provider_error is not None and not self._cancelled.is_set():
            # Settled (or exited) on the error itself: no answer came after it.
            message = provider_error_message(watch.provider_error)
            return self._failed(job, ErrorCode.CHILD_PROVIDER_ERROR, message, started, watch)
        if watch.settled is None:
            if self._cancelled.is_set():
                return self._failed(
                    job, ErrorCode.CHILD_ABORTED, "the flow was cancelled", started, watch
                )
            exited = watch.exited
            assert exited is not None
            return self._failed(
                job,
                ErrorCode.CHILD_EXIT_NONZERO,
                f"the child ended before it settled (exit code {exited.exit_code})",
                started,
                watch,
            )
        if not watch.texts:
            return self._failed(
                job,
                ErrorCode.CHILD_PROTOCOL_ERROR,
                "the child settled without an assistant message",
                started,
                watch,
            )
        return RunResult(
            job.key,
            job.role.agent,
            RunStatus.COMPLETED,
            # Kept whole: the next chain step or graph node needs it; the report applies
            # ``recordContent`` to what the caller gets.
            output=watch.texts[-1],
            usage=watch.usage,
            duration_ms=self._elapsed_ms(started),
        )

    def _failed(
        self,
        job: ChildJob,
        code: ErrorCode,
        message: str,
        started: float | None,
        watch: ChildWatch | None = None,
    ) -> RunResult:
        return RunResult(
            job.key,
            job.role.agent,
            RunStatus.FAILED,
            usage=watch.usage if watch is not None else Usage(),
            duration_ms=self._elapsed_ms(started) if started is not None else 0,
            error_code=code,
            error=message,
        )

    def _elapsed_ms(self, started: float) -> int:
        return max(0, round((self._clock.monotonic() - started) * 1000))
