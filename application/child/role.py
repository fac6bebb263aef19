"""The Python side of a file-spec child's Pi extension (contract §6-§9).

Only ``squad_spec_read`` is registered. Executing it creates an untrusted pending record keyed
by ``toolCallId``; a chunk counts once Pi's finalised, successful tool-result ``message_end``
for that call arrives and both blocks equal, byte for byte, a fresh canonical read. Until the
task's attestation is complete and valid, the guard allows nothing else. Every failure blocks.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import attrs

from application.canonical import (
    CanonicalIdentity,
    CanonicalIntegrityError,
    CanonicalReader,
    CanonicalSpec,
)
from application.ports import (
    ALLOW,
    Clock,
    FileIdentity,
    FileSystem,
    Ids,
    LockFactory,
    PiEvents,
    Registrations,
    ToolDecision,
    ToolFailure,
    ToolResult,
    ToolSpec,
)
from application.spec_reads import AttestationStatus, TaskReadLedger
from domain.attestation import CoverageState
from domain.attestation.grounding import strict_reader_index
from domain.child_environment import FailedClosedChild, ProcessRole, SpecChild
from domain.spec.documents import tool_parameters

READER_TOOL = "squad_spec_read"
GUARD_REASON = (
    "Read every canonical squad spec chunk with squad_spec_read before using other tools."
)
READER_INPUT_REASON = (
    'squad_spec_read takes exactly {"index": <integer >= 0>}: a JSON integer, not a string, '
    "boolean or null."
)
# Raw arguments are remembered per call until then; a bound keeps a runaway child's state small.
_MAX_REMEMBERED_CALLS = 4096


def reader_tool_spec() -> ToolSpec:
    return ToolSpec(
        name=READER_TOOL,
        label="Read squad spec chunk",
        description=(
            "Read one chunk of this squad's canonical specification by index. Every chunk must "
            "be read (any order, several per message allowed) before any other tool can run."
        ),
        parameters=tool_parameters("spec-read-call"),
    )


def reader_index(params: object) -> int | None:
    """The index of a well-formed reader input, exactly ``{"index": int >= 0}``; else ``None``
    (the same rule the parent applies to the model's raw arguments)."""
    return strict_reader_index(params)


def chunk_metadata(
    squad_id: str, task_id: str, canonical: CanonicalSpec, index: int
) -> dict[str, Any]:
    """The §7 metadata of one chunk, keys in the contract's fixed order."""
    table = canonical.table
    ref = table.chunk(index)
    return {
        "version": 1,
        "squadId": squad_id,
        "taskId": task_id,
        "index": ref.index,
        "chunkCount": table.chunk_count,
        "startByte": ref.start_byte,
        "endByteExclusive": ref.end_byte_exclusive,
        "chunkBytes": table.chunk_bytes,
        "chunkSha256": ref.sha256,
        "specBytes": table.spec_bytes,
        "specSha256": table.spec_sha256,
    }


def compact_json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@attrs.frozen
class PendingRead:
    """What an execution returned: untrusted until its finalised ``message_end`` matches."""

    index: int
    metadata_text: str
    chunk_text: str
    details: Mapping[str, Any]


GuardKey = tuple[FileIdentity | None, FileIdentity | None, FileIdentity | None]


class SpecChildRole:
    """``PiEvents`` for a child of a file squad."""

    def __init__(
        self, child: SpecChild, *, fs: FileSystem, locks: LockFactory, clock: Clock, ids: Ids
    ) -> None:
        self._child = child
        self._fs = fs
        self._canonical = CanonicalReader(
            fs,
            CanonicalIdentity(
                path=child.spec_path,
                sha256=child.spec_sha256,
                bytes=child.spec_bytes,
                chunk_bytes=child.chunk_bytes,
                chunk_count=None,
            ),
            # The same location rule as the parent's reads: no symlinked squad or spec/ dir.
            squad_dir=child.squad_dir,
        )
        self._ledger = TaskReadLedger(
            fs=fs,
            locks=locks,
            clock=clock,
            ids=ids,
            canonical=self._canonical,
            squad_id=child.squad_id,
            task_id=child.task_id,
            squad_dir=child.squad_dir,
        )
        self._pending: dict[str, PendingRead] = {}
        self._raw_arguments: dict[str, object] = {}
        self._state_lock = threading.Lock()
        self._open_at: GuardKey | None = None
        self._startup_failure: str | None = None

    @property
    def ledger(self) -> TaskReadLedger:
        return self._ledger

    def registrations(self) -> Registrations:
        return Registrations(
            tools=(reader_tool_spec(),), guard=True, message_end=True, bootstrap=True
        )

    def session_start(self) -> None:
        try:
            self._ledger.recover()
            self._startup_failure = None
        except CanonicalIntegrityError as exc:
            self._startup_failure = exc.reason

    # -- guard ----------------------------------------------------------------------------------

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision:
        try:
            if tool_name == READER_TOOL:
                if reader_index(tool_input) is None or self._coerced(tool_call_id):
                    return ToolDecision(block=True, reason=READER_INPUT_REASON)
                return ALLOW
            return ALLOW if self._guard_open() else ToolDecision(block=True, reason=GUARD_REASON)
        except Exception:
            return ToolDecision(block=True, reason=GUARD_REASON)

    def _guard_key(self) -> GuardKey:
        paths = self._ledger.paths
        return (
            self._fs.identity(self._child.spec_path),
            self._fs.identity(paths.attestation),
            self._fs.identity(paths.state),
        )

    def _guard_open(self) -> bool:
        """Open only with a valid complete attestation; re-verified fully whenever any of the
        canonical, attestation or progress files changed identity since the last full check."""
        key = self._guard_key()
        if key == self._open_at and None not in key:
            return True
        self._open_at = None
        canonical = self._canonical.read()
        if self._ledger.current(canonical).state is CoverageState.INVALID:
            return False
        if self._ledger.attestation_verdict(canonical).status is not AttestationStatus.VALID:
            return False
        self._open_at = key
        return True

    # -- reader ---------------------------------------------------------------------------------

    def execute_tool(self, tool_call_id: str, tool_name: str, params: object) -> ToolResult:
        if tool_name != READER_TOOL:
            raise ToolFailure(f"tool {tool_name!r} is not provided by pi-squad")
        index = reader_index(params)
        if index is None:
            raise ToolFailure(READER_INPUT_REASON)
        try:
            canonical = self._canonical.read()
        except CanonicalIntegrityError as exc:
            raise ToolFailure(f"canonical spec integrity failure: {exc.reason}") from None
        count = canonical.table.chunk_count
        if index >= count:
            raise ToolFailure(
                f"chunk index {index} is out of range: valid indices are 0..{count - 1}"
            )
        details = chunk_metadata(self._child.squad_id, self._child.task_id, canonical, index)
        pending = PendingRead(
            index=index,
            metadata_text=compact_json(details),
            chunk_text=canonical.chunk_text(index),
            details=details,
        )
        with self._state_lock:
            self._pending[tool_call_id] = pending
        return ToolResult(texts=(pending.metadata_text, pending.chunk_text), details=details)

    # -- delivery -------------------------------------------------------------------------------

    def message_end(self, message: Mapping[str, Any]) -> None:
        if message.get("role") == "assistant":
            self._remember_raw_arguments(message)
            return
        if message.get("role") != "toolResult":
            return
        tool_call_id = message.get("toolCallId")
        if not isinstance(tool_call_id, str):
            return
        with self._state_lock:
            pending = self._pending.pop(tool_call_id, None)
        if pending is None or not _is_delivery_of(message, pending):
            return
        canonical = self._canonical.read()
        fresh = chunk_metadata(self._child.squad_id, self._child.task_id, canonical, pending.index)
        if compact_json(fresh) != pending.metadata_text:
            return
        if canonical.chunk_text(pending.index) != pending.chunk_text:
            return
        self._ledger.commit(pending.index, tool_call_id, canonical)

    def _remember_raw_arguments(self, message: Mapping[str, Any]) -> None:
        """The reader calls of a finalised assistant message, with the arguments the model
        sent (Pi coerces them before ``tool_call``: ``"1"`` arrives as ``1``)."""
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if (
                isinstance(block, Mapping)
                and block.get("type") == "toolCall"
                and block.get("name") == READER_TOOL
                and isinstance(block.get("id"), str)
            ):
                with self._state_lock:
                    if len(self._raw_arguments) >= _MAX_REMEMBERED_CALLS:
                        self._raw_arguments.pop(next(iter(self._raw_arguments)))
                    self._raw_arguments[block["id"]] = block.get("arguments")

    def _coerced(self, tool_call_id: str) -> bool:
        """True when the model's raw arguments for this call were not exactly one integer."""
        with self._state_lock:
            if tool_call_id not in self._raw_arguments:
                return False
            raw = self._raw_arguments[tool_call_id]
        return strict_reader_index(raw) is None

    def pending_calls(self) -> tuple[str, ...]:
        with self._state_lock:
            return tuple(self._pending)

    # -- bootstrap ------------------------------------------------------------------------------

    def before_agent_start(self) -> str | None:
        child = self._child
        head = [
            "# pi-squad file-spec task",
            f"Squad: {child.squad_id}",
            f"Task: {child.task_id}",
            f"Canonical spec: {child.spec_bytes} bytes, SHA-256 {child.spec_sha256}",
        ]
        try:
            canonical = self._canonical.read()
            coverage = self._ledger.current(canonical)
            attested = self._ledger.attestation_verdict(canonical).status is AttestationStatus.VALID
        except CanonicalIntegrityError as exc:
            return "\n".join(
                [
                    *head,
                    f"The canonical spec failed verification ({exc.reason}).",
                    "Every tool is blocked. Stop and report this to the orchestrator.",
                ]
            )
        count = canonical.table.chunk_count
        head.append(f"Chunks: {count} (at most {canonical.table.chunk_bytes} bytes each)")
        if coverage.state is CoverageState.INVALID:
            return "\n".join(
                [
                    *head,
                    f"Read coverage is invalid ({coverage.invalid_reason}).",
                    "Every tool except squad_spec_read is blocked. "
                    "Report this to the orchestrator.",
                ]
            )
        if attested and coverage.state is CoverageState.COMPLETE:
            return "\n".join(
                [
                    *head,
                    "Every chunk has been delivered and attested: all tools are available.",
                    "squad-spec-missing: none",
                ]
            )
        missing = coverage.missing_indices()
        listed = ", ".join(str(i) for i in missing)
        return "\n".join(
            [
                *head,
                "Before any other tool, read every chunk of the canonical spec with "
                'squad_spec_read {"index": N}. Any order works, and several reads may go in one '
                "message. Other tools stay blocked until every chunk has been delivered.",
                f"Missing chunk indices: [{listed}]",
                f"squad-spec-chunks: {count}",
                f"squad-spec-missing: {','.join(str(i) for i in missing)}",
            ]
        )


def _is_delivery_of(message: Mapping[str, Any], pending: PendingRead) -> bool:
    """The finalised result carries exactly what the execution returned, and succeeded."""
    if message.get("toolName") != READER_TOOL or message.get("isError") is not False:
        return False
    content = message.get("content")
    expected = [
        {"type": "text", "text": pending.metadata_text},
        {"type": "text", "text": pending.chunk_text},
    ]
    return content == expected and message.get("details") == dict(pending.details)


class FailedClosedRole:
    """Spec variables present but unusable: block everything, register no reader."""

    def __init__(self, failure: FailedClosedChild) -> None:
        self._reason = failure.reason

    @property
    def block_reason(self) -> str:
        return f"pi-squad file-spec child failed closed ({self._reason}); every tool is blocked."

    def registrations(self) -> Registrations:
        return Registrations(guard=True, bootstrap=True)

    def session_start(self) -> None:
        return None

    def before_agent_start(self) -> str | None:
        return (
            f"File-spec bootstrap failed closed: {self._reason}. Every tool is blocked; stop and "
            "report this to the orchestrator."
        )

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision:
        return ToolDecision(block=True, reason=self.block_reason)

    def execute_tool(self, tool_call_id: str, tool_name: str, params: object) -> ToolResult:
        raise ToolFailure(self.block_reason)

    def message_end(self, message: Mapping[str, Any]) -> None:
        return None


class InertRole:
    """A legacy child or a process with nothing to register for this role."""

    def registrations(self) -> Registrations:
        return Registrations()

    def session_start(self) -> None:
        return None

    def before_agent_start(self) -> str | None:
        return None

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision:
        return ALLOW

    def execute_tool(self, tool_call_id: str, tool_name: str, params: object) -> ToolResult:
        raise ToolFailure(f"tool {tool_name!r} is not provided by pi-squad")

    def message_end(self, message: Mapping[str, Any]) -> None:
        return None


def child_role_for(
    role: ProcessRole, *, fs: FileSystem, locks: LockFactory, clock: Clock, ids: Ids
) -> PiEvents:
    """The ``PiEvents`` implementation a child-side Pi process runs for its environment."""
    if isinstance(role, SpecChild):
        return SpecChildRole(role, fs=fs, locks=locks, clock=clock, ids=ids)
    if isinstance(role, FailedClosedChild):
        return FailedClosedRole(role)
    return InertRole()


_spec_conforms: type[PiEvents] = SpecChildRole
_closed_conforms: type[PiEvents] = FailedClosedRole
_inert_conforms: type[PiEvents] = InertRole
