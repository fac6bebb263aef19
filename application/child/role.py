"""The Python side of a file-spec child's Pi extension (contract §6-§9).

Only ``squad_spec_read`` is registered. Executing it creates an untrusted pending record keyed
by ``toolCallId``; a chunk counts once Pi's finalised, successful tool-result ``message_end``
for that call arrives and both blocks equal, byte for byte, a fresh canonical read made after
it arrived. ``message_end`` only matches the result to its execution; the deliveries it accepts
are committed in groups (``application.child.deliveries``) at Pi's ``context`` event (before
every model call), in the bootstrap and at ``session_shutdown`` (never at end of input).
The guard counts committed coverage only. Until the
task's attestation is complete and valid, the guard allows nothing else. Every failure blocks.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from application.canonical import (
    CanonicalIdentity,
    CanonicalIntegrityError,
    CanonicalReader,
    CanonicalSpec,
)
from application.child.bootstrap import bootstrap_prompt
from application.child.closed import FailedClosedRole, InertRole, closed_role_for
from application.child.deliveries import DeliveryQueue
from application.child.prepared_reads import PreparedReads
from application.child.reader import (
    READER_INPUT_REASON,
    READER_TOOL,
    ChunkRendering,
    ChunkRenderings,
    PendingRead,
    chunk_metadata,
    compact_json,
    is_delivery_of,
    reader_index,
    reader_tool_spec,
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
)
from application.spec_reads import AttestationStatus, TaskReadLedger
from domain.attestation import CoverageState
from domain.attestation.grounding import strict_reader_index
from domain.child_environment import ProcessRole, SpecChild

# Re-exported: the reader's parts and the closed roles are named from here by their callers.
__all__ = [
    "GUARD_REASON",
    "READER_INPUT_REASON",
    "READER_TOOL",
    "FailedClosedRole",
    "InertRole",
    "SpecChildRole",
    "child_role_for",
    "chunk_metadata",
    "compact_json",
    "reader_index",
    "reader_tool_spec",
]

GUARD_REASON = (
    "Read every canonical squad spec chunk with squad_spec_read before using other tools."
)
# Raw arguments are remembered per call until then; a bound keeps a runaway child's state small.
_MAX_REMEMBERED_CALLS = 4096


# How long a settle waits for a group another settle is committing (a whole-file SHA-256 of at
# most the spec size limit and one durable write: milliseconds). It bounds that wait only: the
# commit itself is bounded by the task lock's timeout. A ``context`` the shim stops waiting for
# (its 10 s) is logged there; its group still commits or fails, and the guard counts it once
# committed.
_SETTLE_SECONDS = 8.0

# The matched pending read, its tool call ID, and when its finalised result was observed (the
# chunk's ``deliveredAt``: the delivery, not the later commit that makes it count).
_Delivery = tuple[PendingRead, str, datetime]


GuardKey = tuple[FileIdentity | None, FileIdentity | None, FileIdentity | None]


class SpecChildRole:
    """``PiEvents`` for a child of a file squad."""

    def __init__(
        self,
        child: SpecChild,
        *,
        fs: FileSystem,
        locks: LockFactory,
        clock: Clock,
        ids: Ids,
        read_ahead: bool = False,
    ) -> None:
        """``read_ahead``: a reader call's fresh read begins at its preflight, on a worker
        thread (``application.child.prepared_reads``); the bridge's child asks for it."""
        self._child = child
        self._fs = fs
        self._clock = clock
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
        self._renderings = ChunkRenderings(child.squad_id, child.task_id)
        # A read the guard allows starts at its preflight; its execution takes the result.
        self._prepared: PreparedReads[ChunkRendering] | None = (
            PreparedReads(self._verified_rendering) if read_ahead else None
        )
        self._pending: dict[str, PendingRead] = {}
        self._raw_arguments: dict[str, object] = {}
        self._state_lock = threading.Lock()
        self._open_at: GuardKey | None = None
        self._startup_failure: str | None = None
        # Matched deliveries, committed in groups by ``context`` (and the bootstrap, shutdown).
        self._deliveries: DeliveryQueue[_Delivery] = DeliveryQueue(self._commit_group)

    @property
    def ledger(self) -> TaskReadLedger:
        return self._ledger

    def registrations(self) -> Registrations:
        return Registrations(
            tools=(reader_tool_spec(),), guard=True, message_end=True, bootstrap=True, context=True
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
                index = reader_index(tool_input)
                if index is None or self._coerced(tool_call_id):
                    return ToolDecision(block=True, reason=READER_INPUT_REASON)
                if self._prepared is not None:
                    self._prepared.begin(tool_call_id, index)
                return ALLOW
            # Only committed coverage counts: deliveries of this model turn are committed by the
            # ``context`` before the next model call, so a tool asked for beside the last read
            # (even when Pi runs the message's calls one after another) stays blocked (§8).
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
        prepared = self._prepared
        rendering = None if prepared is None else prepared.take(tool_call_id, index)
        if rendering is None:
            rendering = self._verified_rendering(index)
        pending = PendingRead(
            index=index,
            metadata_text=rendering.metadata_text,
            chunk_text=rendering.chunk_text,
            details=rendering.details,
        )
        with self._state_lock:
            self._pending[tool_call_id] = pending
        return ToolResult(
            texts=(rendering.metadata_text, rendering.chunk_text),
            details=rendering.details,
            utf8=(None, rendering.chunk_utf8),
        )

    def _verified_rendering(self, index: int) -> ChunkRendering:
        """A fresh canonical read (whole-file length and SHA-256 verified), then chunk
        ``index`` of those bytes rendered."""
        try:
            canonical = self._canonical.read()
        except CanonicalIntegrityError as exc:
            raise ToolFailure(f"canonical spec integrity failure: {exc.reason}") from None
        count = canonical.table.chunk_count
        if index >= count:
            raise ToolFailure(
                f"chunk index {index} is out of range: valid indices are 0..{count - 1}"
            )
        return self._renderings.of(canonical, index)

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
        if pending is None or not is_delivery_of(message, pending):
            return
        self._deliveries.put((pending, tool_call_id, self._clock.now()))

    def context(self) -> None:
        """Pi's ``context`` event, before every model call: every delivery received so far is
        committed (or refused) first, so the model's next turn comes after its reads count."""
        self._deliveries.settle(_SETTLE_SECONDS)

    def _commit_group(self, group: Sequence[_Delivery]) -> None:
        """One fresh canonical read, made after every delivery of ``group`` arrived; the ones
        whose blocks it renders byte for byte are committed with one durable write."""
        canonical = self._canonical.read()
        verified = [
            (pending.index, tool_call_id, delivered_at)
            for pending, tool_call_id, delivered_at in group
            if self._renders(canonical, pending)
        ]
        if verified:
            self._ledger.commit(verified, canonical)

    def _renders(self, canonical: CanonicalSpec, pending: PendingRead) -> bool:
        rendering = self._renderings.of(canonical, pending.index)
        return (
            rendering.metadata_text == pending.metadata_text
            and rendering.chunk_text == pending.chunk_text
        )

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
        # The prompt lists the chunks still missing: deliveries received count first. A group
        # that failed leaves its chunks missing, which is what the prompt then says (and
        # ``context`` reports it).
        with contextlib.suppress(Exception):
            self._deliveries.settle(_SETTLE_SECONDS, report=False)
        return bootstrap_prompt(self._child, self._canonical, self._ledger)


def child_role_for(
    role: ProcessRole,
    *,
    fs: FileSystem,
    locks: LockFactory,
    clock: Clock,
    ids: Ids,
) -> PiEvents:
    """The ``PiEvents`` implementation a child-side Pi process runs for its environment."""
    if isinstance(role, SpecChild):
        return SpecChildRole(role, fs=fs, locks=locks, clock=clock, ids=ids)
    return closed_role_for(role)


_spec_conforms: type[PiEvents] = SpecChildRole
_closed_conforms: type[PiEvents] = FailedClosedRole
_inert_conforms: type[PiEvents] = InertRole
