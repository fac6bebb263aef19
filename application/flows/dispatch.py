"""``ChildDispatcher``: the one place a flow child is spawned.

Every mode dispatches through it (``domain.flows.runs.Dispatch``), so the bounds hold whatever
the mode: at most ``maxParallelTasks`` jobs per batch, at most ``concurrency`` children alive
at once, each stopped at ``timeoutMs``; each child gets ``PI_SQUAD_CHILD=1`` (the bridge gives
it no squad or flow tools, so it cannot nest), its own session directory, and exactly the
admitted role's model, thinking, tools and working directory. Parts 2 and 3 add budgets,
contracts and isolation here, not in the modes.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import attrs

from application.child.session import ChildSession
from application.flows.budgets import FlowBudgets, Governed, Refusal, refused, stopped, trace_budget
from application.flows.child_watch import CANCELLED, Activity, RunHooks, ended, failed, watched
from application.flows.trace_handoffs import consume, validation
from application.flows.tracing import FlowTrace
from application.ports import (
    ChildRuntime,
    Clock,
    Confinement,
    FileSystem,
    NewSession,
    SpanRef,
    SpawnRequest,
)
from application.spawn_request import child_request
from domain.child_environment import flow_child_environ
from domain.errors import ErrorCode
from domain.flows.call import MAX_PARALLEL_TASKS
from domain.flows.call_roles import FlowTask
from domain.flows.child_limits import DEFAULT_ERROR_GRACE_MS
from domain.flows.errors import refuse
from domain.flows.roles import ResolvedRole
from domain.flows.runs import ChildJob, RunResult, RunStatus

__all__ = ["ChildDispatcher", "DispatchSettings", "Observer", "RunHooks"]

SESSION_DIR_MODE = 0o700
# Told when a run starts (``None``) and when it settles (its result): the live views' feed.
Observer = Callable[[ChildJob, RunResult | None], None]


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
        self._live: dict[str, ChildSession] = {}
        self._lock = threading.Lock()
        self.spawned = 0

    def cancel(self) -> None:
        """Stop every live child (each run ends ``CHILD_ABORTED``); runs not yet started are
        never spawned. Safe from any thread, any number of times."""
        self._cancelled.set()
        with self._lock:
            live = list(self._live.values())
        for session in live:
            session.kill()

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
            return failed(job, ErrorCode.CHILD_ABORTED, CANCELLED)
        request = self._request(job, role)
        if isinstance(governed, Refusal):
            return refused(job, governed, self._budgets, self._trace)
        if self._hooks is not None:
            request = self._hooks.request(job, request, read_only=role.tools.read_only_bash)
        assert isinstance(request.session, NewSession)
        self._fs.ensure_dir(request.session.session_dir, SESSION_DIR_MODE)
        budgets = self._budgets if governed is not None else None
        session = ChildSession(
            self._runtime, self._clock, error_grace=self._settings.error_grace_seconds
        )
        deliver = watched(
            job,
            session,
            hooks=self._hooks,
            activity=self._activity,
            budgets=budgets,
            governed=governed,
        )
        try:
            handle = session.start(request, deliver)
        except Exception as error:  # any start failure is this run's failure, not the flow's
            if governed is not None and self._budgets is not None:
                self._budgets.release(governed)
            message = f"could not start: {error}"
            return failed(job, ErrorCode.CHILD_EXIT_NONZERO, message, session)
        self.spawned += 1
        if governed is not None and self._budgets is not None:
            # Steered now if a shared ceiling is already inside its wrap-up window.
            self._budgets.attach(governed, handle)
        if self._hooks is not None:
            self._hooks.spawned(job, handle)
        with self._lock:
            self._live[job.key] = session
        if self._cancelled.is_set():
            # Cancelled while this child started: ``cancel`` may not have seen it.
            session.kill()
        timeout = self._settings.timeout_seconds
        if governed is not None:
            timeout = governed.timeout_seconds(timeout)
        try:
            stop = session.wait(session.deadline(timeout), self._cancelled)
        finally:
            with self._lock:
                self._live.pop(job.key, None)
            if governed is not None and self._budgets is not None:
                self._budgets.release(governed)
        if governed is not None and governed.stop is not None:
            # Latched at the response that crossed: it decides, whatever raced it.
            session.kill()
            return stopped(job, governed, session.texts, session.usage, session.elapsed_ms())
        return ended(job, session, stop, timeout, self._cancelled.is_set())

    def _request(self, job: ChildJob, role: ResolvedRole) -> SpawnRequest:
        session_dir = posixpath.join(self._settings.flow_dir, job.key)
        return child_request(
            owner=self._settings.flow_id,
            task_id=job.key,
            cwd=job.cwd or role.cwd,
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
