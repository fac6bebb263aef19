"""pi-flows' error catalogue, the part pi-squad implements: one entry per code, in one place.

Derived from the pi-flows troubleshooting catalogue (summarised in flows-brief §3): every flow
error carries the entry's ``cause``, ``fix`` and ``retryable`` beside its own message, so a
caller that knows pi-flows reads the same codes and the same advice. ``retryable`` answers
"would the unchanged call succeed if repeated?" (pi-flows' ``Retryable unchanged``).
A code is added here and to ``domain.errors.ErrorCode`` together; a test checks the two agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from domain.errors import ErrorCode
from domain.flows.catalogue_modes import MODE_ROWS
from domain.flows.catalogue_orchestrate import ORCHESTRATE_ROWS
from domain.flows.catalogue_workflow import WORKFLOW_ROWS
from domain.flows.catalogue_worktree import WORKTREE_ROWS
from domain.flows.run_record import FLOW_RUN_ROWS


@attrs.frozen
class CatalogueEntry:
    code: ErrorCode
    cause: str
    fix: str
    retryable: bool


_ENTRIES = (
    CatalogueEntry(
        ErrorCode.FLOW_INVALID,
        "the call does not match its mode's schema (a missing, unknown or mistyped field)",
        "correct the field the error's path names; docs/flows.md lists every field per mode",
        False,
    ),
    CatalogueEntry(
        ErrorCode.INVALID_MODE,
        'a call must name exactly one mode (docs/flows.md, "Modes", lists the built ones); '
        "it named none, several, one not built yet, or single's agent without a task",
        "keep exactly one mode's fields in the call",
        False,
    ),
    CatalogueEntry(
        ErrorCode.WHY_REQUIRED,
        "every spawning mode needs a non-empty `why`: one sentence on why delegation beats "
        "doing the work directly",
        "add `why`; if no reason can be stated, do the task in the parent instead",
        False,
    ),
    CatalogueEntry(
        ErrorCode.INVALID_CONCURRENCY,
        "`concurrency` must be an integer from 1 to 8, whatever the mode",
        "pass an integer 1..8, or omit it for the default 4",
        False,
    ),
    CatalogueEntry(
        ErrorCode.TOO_MANY_TASKS,
        "the fan-out exceeds maxParallelTasks (8), a fixed internal cap",
        "split the work into several calls of at most 8 tasks",
        False,
    ),
    CatalogueEntry(
        ErrorCode.PARALLEL_SIZING_REQUIRED,
        "a parallel fan-out of two or more tasks must size every child: each task sets `tier` "
        "or `model`, or the call sets a flow-wide one (`thinking` alone does not count)",
        "add `tier` (fast, capable, deep) or `model` to each task, or once to the call",
        False,
    ),
    CatalogueEntry(
        ErrorCode.INVALID_SCOPE,
        "`agentScope` must be user, project or all",
        "use user (bundled + user agents), project (bundled + project) or all",
        False,
    ),
    CatalogueEntry(
        ErrorCode.UNKNOWN_AGENT,
        "no enabled agent by that name is visible in the call's agentScope",
        "run the list mode to see the agents in scope, or widen agentScope",
        False,
    ),
    CatalogueEntry(
        ErrorCode.GRAPH_INVALID,
        "the graph is malformed: no or too many nodes, a duplicate or missing id, a missing "
        "agent or task, or a dependsOn naming no node",
        "fix the node the error's path names",
        False,
    ),
    CatalogueEntry(
        ErrorCode.GRAPH_CYCLE,
        "the graph's dependsOn edges form a cycle, so no wave could ever start",
        "remove one dependency of the cycle the message names",
        False,
    ),
    *(CatalogueEntry(*row) for row in MODE_ROWS),
    *(CatalogueEntry(*row) for row in WORKFLOW_ROWS),
    *(CatalogueEntry(*row) for row in WORKTREE_ROWS),
    CatalogueEntry(
        ErrorCode.PROJECT_AGENT_APPROVAL_REQUIRED,
        "a project agent (.pi/squad/agents) would run, and a headless run cannot ask for approval",
        "review the project's agent files, then pass confirmProjectAgents:false",
        False,
    ),
    CatalogueEntry(
        ErrorCode.UNKNOWN_PRESET,
        "no preset by that name is visible in the call's agentScope",
        "run the list mode to see the presets in scope, or widen agentScope",
        False,
    ),
    CatalogueEntry(
        ErrorCode.PRESET_TASK_REQUIRED,
        "the preset's template uses {task} and the call has no task",
        "add a task to the call",
        False,
    ),
    CatalogueEntry(
        ErrorCode.PRESET_OVERRIDE_INVALID,
        "the call sets a field the preset does not declare in its overrides, or a "
        "workflow-shape field (a mode's own fields are the preset's)",
        "drop the field, or use a mode directly instead of the preset",
        False,
    ),
    CatalogueEntry(
        ErrorCode.PRESET_EXPANSION_INVALID,
        "the preset's own template does not expand to a valid call",
        "fix the preset file (its path is in the message), or use another preset",
        False,
    ),
    CatalogueEntry(
        ErrorCode.PROJECT_PRESET_APPROVAL_REQUIRED,
        "a project preset (.pi/squad/flow-presets) would run, and a headless run cannot ask "
        "for approval",
        "review the project's preset files, then pass confirmProjectAgents:false",
        False,
    ),
    CatalogueEntry(
        ErrorCode.CHECKPOINT_APPROVAL_REQUIRED,
        "the call sets a checkpoint, which asks a person, and this run has nobody to ask (the "
        "CLI, or a Pi without a UI); nothing was spawned",
        "run the call from a Pi with a UI, or leave checkpoint out once a person reviewed it",
        False,
    ),
    CatalogueEntry(
        ErrorCode.CHECKPOINT_APPROVAL_DENIED,
        "the person declined the call's checkpoint: before spawn, nothing was spawned; before "
        "finalize, the children ran and their results are withheld",
        "ask the person what to change, then call again with the changed task or roles",
        False,
    ),
    CatalogueEntry(
        ErrorCode.BASH_READONLY_UNENFORCEABLE,
        "`bash-ro` was asked for, and neither a sandbox nor an allowlist can enforce it here",
        "drop bash-ro (use read,grep,find,ls) or use plain bash knowingly",
        False,
    ),
    CatalogueEntry(
        ErrorCode.MODEL_SCOPE_UNSATISFIABLE,
        "a role asks for a tier (fast or deep) that the model scope (settings.json "
        "enabledModels) leaves nothing to name: no model it enables can be ranked, it names "
        "none outright, and no session model is known; an unpinned child would load Pi's "
        "default, which the scope may exclude, so the scope is not widened",
        "name a model for the role, the call or the agent, set models.<tier> in pi-flows.json, "
        "give the session a model (--model), or add a model this install can run to "
        "enabledModels",
        False,
    ),
    CatalogueEntry(
        ErrorCode.SHARED_WRITE_CWD,
        "two write-capable roles (Pi's default tools, or bash, edit or write) could run at the "
        "same time in one working directory",
        "serialize with concurrency:1, give the roles read-only tools (or bash-ro), give each "
        "writer its own cwd, or set allowSharedWriteCwd:true if shared writes are intended",
        False,
    ),
    CatalogueEntry(
        ErrorCode.HANDOFF_POLICY_VIOLATION,
        "a payload one agent handed to another was flagged by the handoff injection scan "
        "(an instruction-override or exfiltration marker, an invisible carrier, or fragments "
        "that form one across hops) and the effective handoffPolicy is fail: the recipient "
        "was not spawned",
        "read the flow's handoffs (they name the boundary and the markers), remove or isolate "
        "the poisoned input, or choose handoffPolicy quarantine to continue without the payload",
        False,
    ),
    CatalogueEntry(
        ErrorCode.CHILD_EXIT_NONZERO,
        "the child Pi process could not start, or ended before it settled",
        "read the run's stderr tail; check the provider, model and Pi runtime",
        True,
    ),
    CatalogueEntry(
        ErrorCode.CHILD_TIMEOUT,
        "the child ran past timeoutMs and was stopped",
        "raise timeoutMs or give the child a smaller task",
        True,
    ),
    CatalogueEntry(
        ErrorCode.CHILD_ABORTED,
        "the flow was cancelled while the child ran",
        "run the call again when it should finish",
        True,
    ),
    CatalogueEntry(
        ErrorCode.SPEC_HASH_MISMATCH,
        "an attested flow's brief does not hash to `spec.specSha256` (the file changed, or the "
        "pin is for another file)",
        "check the file is the one you pinned, then pin its SHA-256 again (`sha256sum FILE`)",
        False,
    ),
    CatalogueEntry(
        ErrorCode.SPEC_MALFORMED,
        "an attested flow's brief is empty, not UTF-8 text, or `spec.specFile` is not a usable "
        "path",
        "pass the path of a non-empty UTF-8 file (relative paths resolve against the caller's "
        "directory)",
        False,
    ),
    CatalogueEntry(
        ErrorCode.SPEC_UNSTABLE,
        "an attested flow's brief could not be read as one stable file (missing, a symlink, "
        "not a regular file, unreadable, or written while it was read)",
        "pass the path of a regular, readable file that nothing is writing",
        True,
    ),
    CatalogueEntry(
        ErrorCode.SPEC_TOO_LARGE,
        "an attested flow's brief is larger than a squad spec may be",
        "shorten the brief, or split the work into flows with smaller briefs",
        False,
    ),
    CatalogueEntry(
        ErrorCode.ATTESTATION_INVALID,
        "a child of an attested flow answered without a valid full-read attestation of the "
        "brief that the parent itself observed (it never read every chunk, or its record is "
        "forged)",
        "run the call again; `pi-squad verify SQUAD_ID` (the report's `spec.verify`) says "
        "which chunk or record failed",
        True,
    ),
    CatalogueEntry(
        ErrorCode.CHILD_PROTOCOL_ERROR,
        "the child settled without a final assistant message",
        "check the child's model and provider; the run produced no answer",
        True,
    ),
    CatalogueEntry(
        ErrorCode.TRACE_INCOMPLETE,
        "traceStrict asks for complete trace evidence, and the trace is incomplete: no "
        "traceFile, a trace file that cannot be written, spans not written, or (on read-back) "
        "spans missing from the file",
        "give a writable traceFile (or PI_FLOWS_TRACE_FILE), or drop traceStrict for an "
        "ordinary flow; `pi-squad trace report FILE` shows what is missing",
        False,
    ),
    *(CatalogueEntry(*row) for row in FLOW_RUN_ROWS),
    CatalogueEntry(
        ErrorCode.CHILD_PROVIDER_ERROR,
        "the child's model provider reported an error (rate limit, capacity, authentication, "
        "context length, ...) and the child did not recover: it settled on the error, or "
        "stalled past PI_FLOWS_ERROR_GRACE_MS and was stopped",
        "read the provider's message in the run's error; retry a rate-limit or capacity error "
        "later, fix authentication, or shorten the task for a context error",
        False,
    ),
    CatalogueEntry(
        ErrorCode.INVALID_DELEGATION_CONTRACT,
        "a delegation `contract` is malformed: a missing or unknown field, a blank string, a "
        "bad authority, budget or sideEffectClass, or a returnSchema that does not compile; "
        "checked before any child spawns",
        "give every contract field (objective, constraints, nonGoals, dependencies, authority "
        "{may, mustNot, requiresApproval}, sideEffectClass, budget, acceptanceChecks, "
        "returnSchema, owner) with its documented type; arrays and budget may be empty",
        False,
    ),
    CatalogueEntry(
        ErrorCode.RETURN_ENVELOPE_INVALID,
        "a contracted child did not return a valid pi-flows.return-envelope.v1: no fenced json "
        "block, malformed JSON, a wrong shape, an artifact that escapes its cwd or is missing, "
        "a symlink or not a regular file, or data that does not satisfy the returnSchema",
        "rerun the child; make its task state the return protocol plainly, or loosen the "
        "returnSchema if it asks for more than the child can know",
        True,
    ),
    CatalogueEntry(
        ErrorCode.RETURN_CONTRACT_MISMATCH,
        "a contracted child's return envelope does not echo the dispatched contract's "
        "identity as contractId (missing or stale): its result is not consumed",
        "discard the stale or unbound result and rerun the child with the current contract",
        True,
    ),
    CatalogueEntry(
        ErrorCode.RETURN_DIGEST_MISMATCH,
        "a SHA-256 digest a contracted child declared for an artifact does not match the "
        "file's bytes in its cwd",
        "treat the result as untrusted; regenerate the artifact and its envelope together, "
        "then rerun",
        True,
    ),
    CatalogueEntry(
        ErrorCode.RETURN_ENVELOPE_INCOMPLETE,
        "a contracted child returned status partial or blocked (refused unless "
        'incompleteHandoffPolicy is "include"), or failed (always refused)',
        "resolve what the envelope's unresolvedQuestions name and rerun, or set "
        'incompleteHandoffPolicy:"include" to carry partial and blocked results on',
        False,
    ),
    CatalogueEntry(
        ErrorCode.BUDGET_EXCEEDED,
        "the flow's (or a contract's) budget reached a configured cost or token ceiling at a "
        "completed model response: the active child was stopped when the ceiling binds live "
        "runs, and later children were refused",
        "do not replay the flow automatically; keep the ceiling unless the user approves a "
        "change, and narrow the task or reduce the fan-out to fit it",
        False,
    ),
    CatalogueEntry(
        ErrorCode.BUDGET_UNOBSERVABLE,
        "maxCostUsd is set but a model response carried no numeric cost, so the spend cannot "
        "be metered (an unknown spend is never taken as 0)",
        "use a provider/model that reports cost, or bound the flow with maxTokens, "
        "maxGeneratedTokens or timeoutMs instead",
        False,
    ),
    *(CatalogueEntry(*row) for row in ORCHESTRATE_ROWS),
)

CATALOGUE: Mapping[ErrorCode, CatalogueEntry] = MappingProxyType(
    {entry.code: entry for entry in _ENTRIES}
)
FLOW_CODES: frozenset[ErrorCode] = frozenset(CATALOGUE)


def entry(code: ErrorCode) -> CatalogueEntry:
    return CATALOGUE[code]
