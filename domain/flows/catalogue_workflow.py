"""The catalogue rows of ``workflow``'s codes (``domain.flows.catalogue`` holds them with the
rest): code, cause, fix, and whether the unchanged call could succeed if repeated."""

from __future__ import annotations

from domain.errors import ErrorCode

_RESUME_IN_PI = (
    'run the same call with "resume": true from a Pi session with a UI (start `pi` in the '
    "project and ask for the flow call); the CLI and headless Pi cannot ask a person"
)

WORKFLOW_ROWS: tuple[tuple[ErrorCode, str, str, bool], ...] = (
    (
        ErrorCode.WORKFLOW_INVALID,
        "the workflow is malformed: no phases or more than 12, a phase that is not exactly one "
        "of work (agent and task) or approval (message), a phase id twice, a checkCommand on an "
        "approval phase, a {phase.<id>} naming no earlier work phase, or a field out of bounds",
        "fix the field the error's path names (docs/flows.md, workflow), then call again",
        False,
    ),
    (
        ErrorCode.WORKFLOW_STATE_INVALID,
        "the workflow's state file cannot be used: it is not this schema, records another "
        "workflow (the call changed), already exists while resume is false, or could not be "
        "read or written",
        'add "resume": true to continue the recorded run, or remove the file the message '
        "names (or set another workflow.stateFile) to start over",
        False,
    ),
    (
        ErrorCode.WORKFLOW_GATE_FAILED,
        "a phase's checkCommand exited non-zero, was stopped at its 5-minute bound, or could "
        "not start; the gate's output is in the result and later phases did not run",
        'fix what the gate reports, then run the same call with "resume": true: the completed '
        "phases are kept and the failed phase runs again",
        True,
    ),
    (
        ErrorCode.WORKFLOW_APPROVAL_REQUIRED,
        "an approval phase was reached in a run that can ask nobody (the CLI, a Pi without a "
        "UI); the state is kept",
        _RESUME_IN_PI,
        False,
    ),
    (
        ErrorCode.WORKFLOW_APPROVAL_DENIED,
        "the person declined an approval phase; no phase it gates ran",
        'run the same call with "resume": true when the approval should be given, or change '
        "the workflow",
        False,
    ),
    (
        ErrorCode.APPROVAL_RECEIPT_INVALID,
        "the approval receipt in the state file is malformed or its receiptDigest does not "
        "match its terms (the file was edited or damaged)",
        "remove the state file the message names and run the workflow again from the start",
        False,
    ),
    (
        ErrorCode.APPROVAL_RECEIPT_STALE,
        "the approval was granted for other terms (agentScope, or the resolved handoff policy "
        "of handoffPolicy and modeHandoffPolicy, changed since), so it needs a fresh approval, "
        "and this run can ask nobody",
        _RESUME_IN_PI,
        False,
    ),
    (
        ErrorCode.APPROVAL_RECEIPT_EXPIRED,
        "the unspent approval receipt is older than workflow.approvalTtlMs, so it needs a "
        "fresh approval, and this run can ask nobody",
        _RESUME_IN_PI,
        False,
    ),
    (
        ErrorCode.APPROVAL_RECEIPT_CONSUMED,
        "the approval receipt was already spent, yet its phase is not recorded as completed: "
        "a receipt is single-use and is never honoured twice",
        "remove the state file the message names and run the workflow again from the start",
        False,
    ),
)
