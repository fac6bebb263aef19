"""One error hierarchy for the whole project.

Every rejection carries a stable ``code`` (never renamed; later work only adds codes) and a
message written for a person: which field, what was measured, what is allowed. Messages never
quote specification content: they name JSON paths, IDs that already passed their pattern, and
numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import ClassVar, TypeVar

_Status = TypeVar("_Status", bound=StrEnum)


class ErrorCode(StrEnum):
    SPEC_MALFORMED = "SPEC_MALFORMED"
    SPEC_HASH_MISMATCH = "SPEC_HASH_MISMATCH"
    SPEC_UNSTABLE = "SPEC_UNSTABLE"
    SPEC_TOO_LARGE = "SPEC_TOO_LARGE"
    PLAN_INVALID = "PLAN_INVALID"
    ARTIFACT_PATH_INVALID = "ARTIFACT_PATH_INVALID"
    ARTIFACT_MISSING = "ARTIFACT_MISSING"
    ARTIFACT_UNSTABLE = "ARTIFACT_UNSTABLE"
    ARTIFACT_SIZE_MISMATCH = "ARTIFACT_SIZE_MISMATCH"
    ARTIFACT_HASH_MISMATCH = "ARTIFACT_HASH_MISMATCH"
    PUBLISH_FAILED = "PUBLISH_FAILED"
    SQUAD_NOT_FOUND = "SQUAD_NOT_FOUND"
    # A squad id prefix that more than one squad starts with.
    SQUAD_AMBIGUOUS = "SQUAD_AMBIGUOUS"
    SQUAD_BUSY = "SQUAD_BUSY"
    USAGE = "USAGE"
    # Squad operations (modify, review, mailbox): refusals of a request against a squad's state.
    TASK_NOT_FOUND = "TASK_NOT_FOUND"
    TASK_EXISTS = "TASK_EXISTS"
    TASK_INPUT_INVALID = "TASK_INPUT_INVALID"
    INVALID_TASK_ID = "INVALID_TASK_ID"
    DEPENDENCY_INVALID = "DEPENDENCY_INVALID"
    DEPENDENCY_CYCLE = "DEPENDENCY_CYCLE"
    AGENT_UNAVAILABLE = "AGENT_UNAVAILABLE"
    OPERATION_REFUSED = "OPERATION_REFUSED"
    RUNTIME_UNAVAILABLE = "RUNTIME_UNAVAILABLE"
    ATTESTATION_INVALID = "ATTESTATION_INVALID"
    REVIEW_INVALID = "REVIEW_INVALID"
    MESSAGE_INVALID = "MESSAGE_INVALID"
    # A pinned task's record is missing, unreadable or names another task: fail closed.
    SQUAD_INTEGRITY = "SQUAD_INTEGRITY"
    # Child processes: write isolation was required but this machine cannot enforce it.
    ISOLATION_UNAVAILABLE = "ISOLATION_UNAVAILABLE"
    # A confined child's write grants would contain the squad root or a sibling's records.
    ISOLATION_UNSAFE = "ISOLATION_UNSAFE"
    # A record pi-squad itself wrote (squad.json, task.json, mailbox.json) does not decode.
    RECORD_CORRUPT = "RECORD_CORRUPT"
    # The operating system refused a file operation (permission, disk full, ...).
    IO_FAILED = "IO_FAILED"
    # Flows (docs/flows.md): pi-flows' own catalogue codes, so its users' habits carry over.
    # Cause, fix and retryability of each live in ``domain.flows.catalogue``.
    FLOW_INVALID = "FLOW_INVALID"
    INVALID_MODE = "INVALID_MODE"
    WHY_REQUIRED = "WHY_REQUIRED"
    INVALID_CONCURRENCY = "INVALID_CONCURRENCY"
    TOO_MANY_TASKS = "TOO_MANY_TASKS"
    PARALLEL_SIZING_REQUIRED = "PARALLEL_SIZING_REQUIRED"
    INVALID_SCOPE = "INVALID_SCOPE"
    UNKNOWN_AGENT = "UNKNOWN_AGENT"
    GRAPH_INVALID = "GRAPH_INVALID"
    GRAPH_CYCLE = "GRAPH_CYCLE"
    ROUTE_UNRESOLVED = "ROUTE_UNRESOLVED"
    LOOP_DID_NOT_CONVERGE = "LOOP_DID_NOT_CONVERGE"
    TOO_FEW_VOTERS = "TOO_FEW_VOTERS"
    DEBATE_TOO_FEW_PARTICIPANTS = "DEBATE_TOO_FEW_PARTICIPANTS"
    DOSSIER_TOO_FEW_SECTIONS = "DOSSIER_TOO_FEW_SECTIONS"
    MONITOR_INVALID = "MONITOR_INVALID"
    MONITOR_NOT_TRIGGERED = "MONITOR_NOT_TRIGGERED"
    WORKFLOW_INVALID = "WORKFLOW_INVALID"
    WORKFLOW_STATE_INVALID = "WORKFLOW_STATE_INVALID"
    WORKFLOW_GATE_FAILED = "WORKFLOW_GATE_FAILED"
    WORKFLOW_APPROVAL_REQUIRED = "WORKFLOW_APPROVAL_REQUIRED"
    WORKFLOW_APPROVAL_DENIED = "WORKFLOW_APPROVAL_DENIED"
    APPROVAL_RECEIPT_INVALID = "APPROVAL_RECEIPT_INVALID"
    APPROVAL_RECEIPT_STALE = "APPROVAL_RECEIPT_STALE"
    APPROVAL_RECEIPT_EXPIRED = "APPROVAL_RECEIPT_EXPIRED"
    APPROVAL_RECEIPT_CONSUMED = "APPROVAL_RECEIPT_CONSUMED"
    WORKTREE_NOT_GIT = "WORKTREE_NOT_GIT"
    WORKTREE_DIRTY_SOURCE = "WORKTREE_DIRTY_SOURCE"
    WORKTREE_SETUP_FAILED = "WORKTREE_SETUP_FAILED"
    WORKTREE_INTEGRATION_FAILED = "WORKTREE_INTEGRATION_FAILED"
    WORKTREE_VERIFY_FAILED = "WORKTREE_VERIFY_FAILED"
    CHECK_COMMAND_FAILED = "CHECK_COMMAND_FAILED"
    SEARCH_NO_CANDIDATES = "SEARCH_NO_CANDIDATES"
    ORCHESTRATE_NO_SUBTASKS = "ORCHESTRATE_NO_SUBTASKS"
    DECOMPOSITION_INVALID = "DECOMPOSITION_INVALID"
    DECOMPOSITION_CYCLE = "DECOMPOSITION_CYCLE"
    DECOMPOSITION_REVIEW_FAILED = "DECOMPOSITION_REVIEW_FAILED"
    BUDGET_HEADROOM_EXCEEDED = "BUDGET_HEADROOM_EXCEEDED"
    ORCHESTRATE_VERIFY_FAILED = "ORCHESTRATE_VERIFY_FAILED"
    PROJECT_AGENT_APPROVAL_REQUIRED = "PROJECT_AGENT_APPROVAL_REQUIRED"
    UNKNOWN_PRESET = "UNKNOWN_PRESET"
    PRESET_TASK_REQUIRED = "PRESET_TASK_REQUIRED"
    PRESET_OVERRIDE_INVALID = "PRESET_OVERRIDE_INVALID"
    PRESET_EXPANSION_INVALID = "PRESET_EXPANSION_INVALID"
    PROJECT_PRESET_APPROVAL_REQUIRED = "PROJECT_PRESET_APPROVAL_REQUIRED"
    CHECKPOINT_APPROVAL_REQUIRED = "CHECKPOINT_APPROVAL_REQUIRED"
    CHECKPOINT_APPROVAL_DENIED = "CHECKPOINT_APPROVAL_DENIED"
    BASH_READONLY_UNENFORCEABLE = "BASH_READONLY_UNENFORCEABLE"
    MODEL_SCOPE_UNSATISFIABLE = "MODEL_SCOPE_UNSATISFIABLE"
    SHARED_WRITE_CWD = "SHARED_WRITE_CWD"
    HANDOFF_POLICY_VIOLATION = "HANDOFF_POLICY_VIOLATION"
    CHILD_EXIT_NONZERO = "CHILD_EXIT_NONZERO"
    CHILD_TIMEOUT = "CHILD_TIMEOUT"
    CHILD_ABORTED = "CHILD_ABORTED"
    CHILD_PROTOCOL_ERROR = "CHILD_PROTOCOL_ERROR"
    TRACE_INCOMPLETE = "TRACE_INCOMPLETE"
    CHILD_PROVIDER_ERROR = "CHILD_PROVIDER_ERROR"
    # Delegation contracts and return envelopes (docs/flows.md, "Contracts and return envelopes").
    INVALID_DELEGATION_CONTRACT = "INVALID_DELEGATION_CONTRACT"
    RETURN_ENVELOPE_INVALID = "RETURN_ENVELOPE_INVALID"
    RETURN_CONTRACT_MISMATCH = "RETURN_CONTRACT_MISMATCH"
    RETURN_DIGEST_MISMATCH = "RETURN_DIGEST_MISMATCH"
    RETURN_ENVELOPE_INCOMPLETE = "RETURN_ENVELOPE_INCOMPLETE"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    BUDGET_UNOBSERVABLE = "BUDGET_UNOBSERVABLE"
    # `pi-squad flow status ID`: no flow run record has that id (docs/flows.md).
    FLOW_RUN_NOT_FOUND = "FLOW_RUN_NOT_FOUND"
    # Delegation (docs/delegation.md): the `delegate` protocol host's refusals.
    DELEGATE_INVALID = "DELEGATE_INVALID"
    DELEGATE_VERSION_UNSUPPORTED = "DELEGATE_VERSION_UNSUPPORTED"
    DELEGATE_FORGED_FIELD = "DELEGATE_FORGED_FIELD"
    DELEGATE_POLICY_DENIED = "DELEGATE_POLICY_DENIED"
    DELEGATE_CAPACITY_EXHAUSTED = "DELEGATE_CAPACITY_EXHAUSTED"
    DELEGATE_SOURCE_UNKNOWN = "DELEGATE_SOURCE_UNKNOWN"
    DELEGATE_SOURCE_REFUSED = "DELEGATE_SOURCE_REFUSED"
    DELEGATE_NOT_FOUND = "DELEGATE_NOT_FOUND"
    DELEGATE_STATE_REFUSED = "DELEGATE_STATE_REFUSED"
    DELEGATE_BINDING_STALE = "DELEGATE_BINDING_STALE"
    DELEGATE_EVIDENCE_UNKNOWN = "DELEGATE_EVIDENCE_UNKNOWN"
    DELEGATE_IDEMPOTENCY_CONFLICT = "DELEGATE_IDEMPOTENCY_CONFLICT"
    DELEGATE_CURSOR_INVALID = "DELEGATE_CURSOR_INVALID"
    DELEGATE_POLICY_INVALID = "DELEGATE_POLICY_INVALID"
    DELEGATE_GRANT_CHANGED = "DELEGATE_GRANT_CHANGED"


class PiSquadError(Exception):
    """Base of every error the project raises on purpose."""

    family_codes: ClassVar[frozenset[ErrorCode]] = frozenset(ErrorCode)

    def __init__(self, code: ErrorCode, message: str) -> None:
        if code not in self.family_codes:
            raise ValueError(f"{type(self).__name__} cannot carry code {code}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class SpecError(PiSquadError):
    """The specification file, its hash, its decoding, its schema, its limits or its plan."""

    family_codes = frozenset(
        {
            ErrorCode.SPEC_MALFORMED,
            ErrorCode.SPEC_HASH_MISMATCH,
            ErrorCode.SPEC_UNSTABLE,
            ErrorCode.SPEC_TOO_LARGE,
            ErrorCode.PLAN_INVALID,
        }
    )


class ArtifactError(PiSquadError):
    """An artifact reference: its path, presence, stability, length or hash."""

    family_codes = frozenset(
        {
            ErrorCode.ARTIFACT_PATH_INVALID,
            ErrorCode.ARTIFACT_MISSING,
            ErrorCode.ARTIFACT_UNSTABLE,
            ErrorCode.ARTIFACT_SIZE_MISMATCH,
            ErrorCode.ARTIFACT_HASH_MISMATCH,
        }
    )


class PublishError(PiSquadError):
    """Publishing a validated squad failed; nothing discoverable was left behind."""

    family_codes = frozenset({ErrorCode.PUBLISH_FAILED})


class NotFoundError(PiSquadError):
    family_codes = frozenset({ErrorCode.SQUAD_NOT_FOUND, ErrorCode.SQUAD_AMBIGUOUS})


class SquadOperationError(PiSquadError):
    """An operation on a published squad (drive, modify, review, mailbox) was refused; nothing
    was changed unless the message says which work was reopened."""

    family_codes = frozenset(
        {
            ErrorCode.SQUAD_BUSY,
            ErrorCode.TASK_NOT_FOUND,
            ErrorCode.TASK_EXISTS,
            ErrorCode.TASK_INPUT_INVALID,
            ErrorCode.INVALID_TASK_ID,
            ErrorCode.DEPENDENCY_INVALID,
            ErrorCode.DEPENDENCY_CYCLE,
            ErrorCode.AGENT_UNAVAILABLE,
            ErrorCode.OPERATION_REFUSED,
            ErrorCode.RUNTIME_UNAVAILABLE,
            ErrorCode.ATTESTATION_INVALID,
            ErrorCode.REVIEW_INVALID,
            ErrorCode.MESSAGE_INVALID,
        }
    )


class SquadIntegrityError(PiSquadError):
    """A record the squad's pinned task set names is missing, unreadable or names another
    task. Never read as "no such task": the squad is quarantined and nothing is accepted."""

    family_codes = frozenset({ErrorCode.SQUAD_INTEGRITY})

    def __init__(self, squad_id: str, reason: str) -> None:
        super().__init__(
            ErrorCode.SQUAD_INTEGRITY,
            f"squad '{squad_id}' failed its integrity check: {reason}. The squad is quarantined: "
            "no task is accepted and no review recorded until the record is restored from a "
            f"backup; `pi-squad verify {squad_id}` repeats this check",
        )
        self.squad_id = squad_id
        self.reason = reason


class IsolationUnavailable(PiSquadError):
    """Child write isolation was asked for (``ChildIsolation.confine``) where none is available:
    ``reason`` says what is missing (``IsolationSupport.reason``)."""

    family_codes = frozenset({ErrorCode.ISOLATION_UNAVAILABLE})

    def __init__(self, reason: str) -> None:
        super().__init__(
            ErrorCode.ISOLATION_UNAVAILABLE,
            f"child processes cannot be confined to their writable directories: {reason}; "
            "run on Linux >= 6.2 with Landlock enabled (landlock in the lsm= boot parameter) "
            "and PI_SQUAD_ISOLATION unset, or unset PI_SQUAD_REQUIRE_ISOLATION to run "
            "children unconfined",
        )
        self.reason = reason


class IsolationTooWeak(PiSquadError):
    """Isolation was required (``--require-isolation``) and children would be confined, but at
    a level that cannot stop a child signalling its siblings (``domain.isolation_level``):
    ``reason`` names the level and the way out."""

    family_codes = frozenset({ErrorCode.ISOLATION_UNAVAILABLE})

    def __init__(self, reason: str) -> None:
        super().__init__(
            ErrorCode.ISOLATION_UNAVAILABLE,
            f"children cannot be isolated from each other's processes: {reason}; or unset "
            "PI_SQUAD_REQUIRE_ISOLATION (and drop --require-isolation) to run them as they are",
        )
        self.reason = reason


class RecordError(PiSquadError):
    """A squad's own record (``squad.json``, ``task.json``, ``mailbox.json``) is unreadable as
    that record: truncated, not JSON, or not its shape. Nothing was changed."""

    family_codes = frozenset({ErrorCode.RECORD_CORRUPT})


class SystemFailure(PiSquadError):
    """The operating system refused a file operation; nothing was half-written (every record
    write is atomic)."""

    family_codes = frozenset({ErrorCode.IO_FAILED})

    @classmethod
    def of(cls, error: OSError) -> SystemFailure:
        where = f" on {error.filename}" if error.filename else ""
        return cls(
            ErrorCode.IO_FAILED,
            f"the operating system refused a file operation{where}: "
            f"{error.strerror or type(error).__name__} (errno {error.errno}); nothing was "
            "half-written. Check the permissions and free space of the squad root "
            "($PI_SQUAD_ROOT); inside a confined squad child, squad records are read-only by "
            "design",
        )


class IllegalTransition(RuntimeError):
    """A status change a model's transition table does not have (a squad's or task's status, a
    delegation attempt's lifecycle or settlement): a bug in the caller, never bad input, so it is
    no coded error. Use cases check preconditions first and refuse with a coded error."""


def legal_transition(
    table: Mapping[_Status, frozenset[_Status]], source: _Status, target: _Status, subject: str
) -> _Status:
    """``target``, when ``table`` has the edge ``source -> target``; else ``IllegalTransition``
    naming ``subject`` (``task t1``, ``attempt lifecycle``) and the edge."""
    if target not in table.get(source, frozenset()):
        raise IllegalTransition(f"{subject}: {source} -> {target} is not a legal transition")
    return target
