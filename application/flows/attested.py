"""Attested flows: every child of the flow reads the caller's brief in full before any other
tool, and each run's result says whether the parent can prove it did (issue 15 item 6).

The brief is published once, the way a file squad is (one staging directory renamed into
place, its canonical copy read-only, one task record per run the call may spawn), so the
child role, the reader and its guard, the ledger, the parent's grounding and ``pi-squad
verify`` are the squads' own: a flow child is a spec child of that squad. The flow holds the
squad's driver lock while it runs, so no squad driver ever spawns those tasks; at the end
the squad is ``done`` (every run completed with a valid, grounded attestation) or ``failed``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime

import attrs

from application.attestation_check import AttestationAuditor
from application.canonical import CanonicalSpec
from application.grounding import observed_delivery
from application.load_spec import read_spec_file, resolve_spec_path
from application.ports import (
    ChildEvent,
    ChildHandle,
    Clock,
    Confinement,
    LockFactory,
    NewSession,
    SessionBound,
    SpawnRequest,
    Store,
    ToolCallsRequested,
    ToolResultSeen,
)
from application.session_check import session_problem
from application.spawn_request import READER_TOOL
from application.spec_reads import AttestationStatus
from application.squads.create_squad import Publisher, publish_brief_squad
from domain.attestation.grounding import SpawnObserved
from domain.child_environment import ChildEnvironment
from domain.chunks import ChunkTable, sha256_hex
from domain.errors import ErrorCode, SpecError
from domain.flows.call import FlowCall, FlowSpec
from domain.flows.errors import refuse
from domain.flows.mode_parts import FlowOutcome
from domain.flows.modes import planned_runs
from domain.flows.runs import ChildJob, RunResult, RunStatus
from domain.isolation_level import IsolationLevel, layers_after_spawn
from domain.spec.limits import MAX_SPEC_BYTES
from domain.spec.model import SquadConfig
from domain.squad.ids import TASK_ID_PATTERN
from domain.squad.layout import SESSION_DIR
from domain.squad.model import SessionBinding, SpecRef, Squad, SquadStatus, Task, TaskStatus
from domain.squad.transitions import move_squad, move_task, start_task

_SPEC = "$.spec"
# An attested flow's squad: concurrency and retries are the flow's, never a squad driver's.
_FLOW_SQUAD_CONFIG = SquadConfig(max_concurrency=8, auto_unblock=False, max_retries=0)


@attrs.frozen
class FlowBrief:
    """The brief's exact bytes, hashed to the caller's pin and cut into chunks."""

    raw: bytes = attrs.field(repr=False)
    sha256: str
    chunks: ChunkTable = attrs.field(repr=False)

    @property
    def byte_length(self) -> int:
        return len(self.raw)


def read_brief(publisher: Publisher, spec: FlowSpec, cwd: str) -> FlowBrief:
    """The pinned brief, or the refusal naming ``$.spec.*`` (the actual digest is never said:
    the pin is only worth what its author checked)."""
    try:
        path = resolve_spec_path(publisher.fs, spec.spec_file, cwd)
        read = read_spec_file(publisher.fs, path)
    except SpecError as error:
        measured = allowed = None
        if error.code is ErrorCode.SPEC_TOO_LARGE:
            allowed = MAX_SPEC_BYTES
        raise refuse(
            error.code, f"{_SPEC}.specFile", error.message, measured=measured, allowed=allowed
        ) from None
    if sha256_hex(read.data) != spec.spec_sha256:
        raise refuse(
            ErrorCode.SPEC_HASH_MISMATCH,
            f"{_SPEC}.specSha256",
            f"the SHA-256 of {path} ({len(read.data)} bytes) is not the pinned one",
        )
    if not read.data:
        raise refuse(
            ErrorCode.SPEC_MALFORMED, f"{_SPEC}.specFile", "the brief is empty", measured=0
        )
    try:
        read.data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as error:
        raise refuse(
            ErrorCode.SPEC_MALFORMED,
            f"{_SPEC}.specFile",
            f"the brief is not UTF-8 (byte {error.start})",
            measured=error.start,
        ) from None
    return FlowBrief(raw=read.data, sha256=spec.spec_sha256, chunks=ChunkTable.of(read.data))


def run_task_ids(call: FlowCall) -> dict[str, str]:
    """Each run key's task id: the key itself when it is a valid task id, else ``run-<n>``
    (a graph node id may hold capitals, dots or underscores)."""
    found: dict[str, str] = {}
    for index, (key, _role) in enumerate(planned_runs(call)):
        found[key] = key if TASK_ID_PATTERN.match(key) else f"run-{index}"
    return found


@attrs.define(eq=False)
class AttestedFlows:
    """Publishes an attested flow's brief and hands the dispatcher its ``AttestedRuns``."""

    publisher: Publisher
    store: Store
    auditor: AttestationAuditor
    locks: LockFactory

    def publish(
        self, call: FlowCall, *, flow_id: str, cwd: str, squad_root: str, level: IsolationLevel
    ) -> AttestedRuns:
        """``level``: the layers each child runs under (confined where it has Landlock)."""
        assert call.spec is not None
        brief = read_brief(self.publisher, call.spec, cwd)
        task_ids = run_task_ids(call)
        agents = {key: role.agent for key, role in planned_runs(call)}
        now = self.publisher.clock.now()

        def values(squad_id: str, canonical: str) -> tuple[Squad, tuple[Task, ...]]:
            squad = Squad(
                id=squad_id,
                goal=f"attested flow {flow_id} ({call.mode})",
                status=SquadStatus.RUNNING,
                created=now,
                cwd=cwd,
                config=_FLOW_SQUAD_CONFIG,
                spec=SpecRef(
                    sha256=brief.sha256,
                    bytes=brief.byte_length,
                    path=canonical,
                    chunk_count=brief.chunks.chunk_count,
                ),
                task_ids=tuple(task_ids.values()),
                flow_id=flow_id,
            )
            tasks = tuple(
                Task(
                    id=task_id,
                    title=f"{key} ({agents[key]})",
                    description=f"run {key} of flow {flow_id}",
                    agent=agents[key],
                    status=TaskStatus.PENDING,
                    depends=(),
                    created=now,
                )
                for key, task_id in task_ids.items()
            )
            return squad, tasks

        published = publish_brief_squad(
            self.publisher, base_id=f"flow-{flow_id}", brief=brief, values=values
        )
        return AttestedRuns(
            store=self.store,
            auditor=self.auditor,
            locks=self.locks,
            clock=self.publisher.clock,
            squad=published.squad,
            task_ids=task_ids,
            canonical=CanonicalSpec(data=brief.raw, table=brief.chunks),
            squad_root=squad_root,
            level=level,
        )


@attrs.define(eq=False)
class _Child:
    """What the parent saw of one run's child: its session and its reader calls' arguments."""

    spawned_at: datetime
    child_id: str | None = None
    session_file: str | None = None
    raw_arguments: dict[str, object] = attrs.field(factory=dict)


class AttestedRuns:
    """The dispatcher's hooks for an attested flow: each child is started as a spec child of
    the flow's squad, what it reads is observed into the parent-owned record, and its run is
    judged by the audited attestation when it settles."""

    def __init__(
        self,
        *,
        store: Store,
        auditor: AttestationAuditor,
        locks: LockFactory,
        clock: Clock,
        squad: Squad,
        task_ids: Mapping[str, str],
        canonical: CanonicalSpec,
        squad_root: str,
        level: IsolationLevel,
    ) -> None:
        self._store = store
        self._auditor = auditor
        self._locks = locks
        self._clock = clock
        self._squad = squad
        self._task_ids = dict(task_ids)
        self._canonical = canonical
        self._squad_root = squad_root
        self._confine = level.landlock_abi is not None
        self._level = level
        self._children: dict[str, _Child] = {}
        self._guard = threading.Lock()

    @property
    def squad_id(self) -> str:
        return self._squad.id

    def document(self) -> dict[str, object]:
        """The flow report's ``spec`` object."""
        spec = self._squad.spec
        assert spec is not None
        return {
            "squadId": self._squad.id,
            "sha256": spec.sha256,
            "bytes": spec.bytes,
            "chunks": spec.chunk_count,
            "isolation": "landlock" if self._confine else "none",
            "isolationLayers": self._level.label,
            "verify": f"pi-squad verify {self._squad.id}",
        }

    @contextmanager
    def driving(self) -> Iterator[None]:
        """Hold the squad's driver lock for the flow: no squad driver spawns these tasks."""
        with self._locks.try_lock(self._store.layout(self._squad.id).driver_lock) as taken:
            if not taken:
                raise refuse(
                    ErrorCode.FLOW_INVALID,
                    _SPEC,
                    f"the flow's squad {self._squad.id} is being driven by another process",
                )
            yield

    def request(self, job: ChildJob, request: SpawnRequest, *, read_only: bool) -> SpawnRequest:
        """``request`` as a spec child of the flow's squad, and its task now in progress."""
        task_id = self._task_ids[job.key]
        ledger = self._store.layout(self._squad.id).ledger_dir(task_id)
        tools = request.tools
        if tools is not None and READER_TOOL not in tools:
            # A tool list would hide the reader; the guard, not the list, is authoritative.
            tools = (*tools, READER_TOOL)
        now = self._clock.now()
        with self._store.transaction(self._squad.id) as tx:
            tx.put_task(start_task(tx.tasks[task_id], now))
            # Sticky, as for squads: one child that ran unconfined could have written any record.
            isolation = "landlock" if self._confine and tx.squad.isolation != "none" else "none"
            layers = layers_after_spawn(tx.squad.isolation, tx.squad.isolation_layers, self._level)
            if (tx.squad.isolation, tx.squad.isolation_layers) != (isolation, layers):
                tx.put_squad(attrs.evolve(tx.squad, isolation=isolation, isolation_layers=layers))
        with self._guard:
            self._children[job.key] = _Child(spawned_at=now)
        return attrs.evolve(
            request,
            squad_id=self._squad.id,
            task_id=task_id,
            session=NewSession(f"{ledger}/{SESSION_DIR}"),
            environment=ChildEnvironment.for_task(self._squad, task_id).to_environ(),
            tools=tools,
            # As a squad child: its ledger (and the project, unless bash-ro) and nothing else
            # of the squad root; a child that could write records could forge its proof.
            confinement=(
                Confinement(self._squad_root, ledger, ledger if read_only else request.cwd)
                if self._confine
                else None
            ),
        )

    def spawned(self, job: ChildJob, handle: ChildHandle) -> None:
        """Parent-owned: the spawn bounds every delivery this child can claim."""
        with self._guard:
            child = self._children[job.key]
            child.child_id = handle.child_id
            at = child.spawned_at
        self._store.record_observation(
            self._squad.id,
            self._task_ids[job.key],
            SpawnObserved(at=at, child_id=handle.child_id),
        )

    def observe(self, job: ChildJob, event: ChildEvent) -> None:
        """What the child's stream proves: its session, and each verified reader delivery."""
        with self._guard:
            child = self._children.get(job.key)
        if child is None:
            return
        task_id = self._task_ids[job.key]
        if isinstance(event, SessionBound):
            fs, layout = self._auditor.fs, self._store.layout(self._squad.id)
            if session_problem(fs, layout, task_id, event.session_file, must_exist=False):
                return  # only the task's own session is bound and observed: never attested
            child.session_file = event.session_file
            with self._store.transaction(self._squad.id) as tx:
                task = tx.tasks[task_id]
                if task.session is None:
                    binding = SessionBinding(file=event.session_file, session_id=event.session_id)
                    tx.put_task(attrs.evolve(task, session=binding))
        elif isinstance(event, ToolCallsRequested):
            for call in event.calls:
                child.raw_arguments.setdefault(call.tool_call_id, call.arguments)
        elif isinstance(event, ToolResultSeen):
            observed = observed_delivery(
                event,
                child.raw_arguments.get(event.tool_call_id),
                canonical=self._canonical,
                squad_id=self._squad.id,
                session_file=child.session_file,
                at=self._clock.now(),
            )
            if observed is not None:
                self._store.record_observation(self._squad.id, task_id, observed)

    def settle(self, job: ChildJob, result: RunResult) -> RunResult:
        """The run as the audited attestation allows: a completed run whose child holds no
        valid, grounded attestation fails with ``ATTESTATION_INVALID``."""
        task_id = self._task_ids[job.key]
        task = self._store.snapshot(self._squad.id).tasks[task_id]
        check = self._auditor.validate_task_attestation(self._squad, task)
        valid = check.status is AttestationStatus.VALID
        judged = attrs.evolve(
            result, attestation=str(check.status), attestation_reason=check.reason
        )
        if result.ok and not valid:
            judged = attrs.evolve(
                judged,
                status=RunStatus.FAILED,
                error_code=ErrorCode.ATTESTATION_INVALID,
                error="the child answered without a valid full-read attestation of the brief: "
                f"{check.reason or check.status}",
            )
        with self._store.transaction(self._squad.id) as tx:
            current = tx.tasks[task_id]
            if current.status is TaskStatus.IN_PROGRESS:
                now = self._clock.now()
                tx.put_task(
                    move_task(current, TaskStatus.DONE, completed=now)
                    if judged.ok
                    else move_task(current, TaskStatus.FAILED, error=judged.error, completed=now)
                )
        return judged

    def finish(self, outcome: FlowOutcome) -> FlowOutcome:
        """Runs never spawned are ``missing`` an attestation and their tasks cancelled; the
        squad ends ``done`` when every run is attested and completed, else ``failed``."""
        results = tuple(
            result
            if result.attestation is not None
            else attrs.evolve(result, attestation=str(AttestationStatus.MISSING))
            for result in outcome.results
        )
        with self._store.transaction(self._squad.id) as tx:
            for task_id in self._task_ids.values():
                task = tx.tasks[task_id]
                if task.status in (TaskStatus.PENDING, TaskStatus.IN_PROGRESS):
                    tx.put_task(move_task(task, TaskStatus.CANCELLED))
            squad = tx.squad
            if squad.status is SquadStatus.RUNNING:
                if all(result.ok for result in results):
                    squad = move_squad(move_squad(squad, SquadStatus.REVIEW), SquadStatus.DONE)
                else:
                    squad = move_squad(squad, SquadStatus.FAILED)
                tx.put_squad(squad)
        return attrs.evolve(outcome, results=results)


__all__ = ["AttestedFlows", "AttestedRuns", "FlowBrief", "read_brief", "run_task_ids"]
