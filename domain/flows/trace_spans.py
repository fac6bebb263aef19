"""What a flow trace says, as names and pure rules: the span attributes (seed 004 "Trace
export", flows-brief §7), the unit-key escaping of dependency lists, the bounds on recorded
values, the export health the root span declares, and the critical path.

OpenInference's own keys (``input.value``, ``llm.model_name``, ``llm.token_count.*``,
``openinference.span.kind``) come from the ``openinference-semantic-conventions`` package, so
they stay exactly the convention's; the ``flow.*`` keys are pi-flows'. pi-flows does not name the
attribute of ``traceLabel``: pi-squad writes ``flow.trace_label``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs
from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes

from domain.flows.canonical import canonical_sha256
from domain.flows.contracts import Contract
from domain.flows.handoff_envelope import constraint_ids
from domain.flows.redact import redact

# OpenInference.
SPAN_KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
INPUT_VALUE = SpanAttributes.INPUT_VALUE
OUTPUT_VALUE = SpanAttributes.OUTPUT_VALUE
MODEL_NAME = SpanAttributes.LLM_MODEL_NAME
TOKENS_PROMPT = SpanAttributes.LLM_TOKEN_COUNT_PROMPT
TOKENS_COMPLETION = SpanAttributes.LLM_TOKEN_COUNT_COMPLETION
TOKENS_TOTAL = SpanAttributes.LLM_TOKEN_COUNT_TOTAL
KIND_CHAIN = OpenInferenceSpanKindValues.CHAIN.value
KIND_AGENT = OpenInferenceSpanKindValues.AGENT.value

# Every span.
SPAN_ROLE = "flow.span_role"
INVOCATION_ID = "flow.invocation_id"
MODE = "flow.mode"
TRACE_LABEL = "flow.trace_label"
STATUS = "flow.status"
ERROR_CODE = "flow.error_code"
# ``traceContext`` fields and the attribute each is copied to.
CONTEXT_KEYS: Mapping[str, str] = {
    "run_id": "flow.run_id",
    "case_id": "flow.case_id",
    "trial_id": "flow.trial_id",
    "trial_index": "flow.trial_index",
    "arm": "flow.arm",
    "attempt": "flow.attempt",
}
# Topology.
UNIT_KEY = "flow.unit_key"
STAGE_KEY = "flow.stage_key"
STAGE_SPAN_COUNT = "flow.stage_span_count"
DEPENDS_ON = "flow.depends_on"
DEPENDS_ON_SPAN_IDS = "flow.depends_on_span_ids"
DEPENDS_ON_TRUNCATED = "flow.depends_on_truncated"
DEPENDS_ON_UNRESOLVED = "flow.depends_on_unresolved"
DEPENDS_ON_UNRESOLVED_TRUNCATED = "flow.depends_on_unresolved_truncated"
# Child.
DURATION_MS = "flow.duration_ms"
AGENT = "flow.agent"
COST_USD = "flow.cost_usd"
THINKING_LEVEL = "flow.thinking_level"
THINKING_LEVEL_VERIFIED = "flow.thinking_level_verified"
AGENT_PROMPT_VERSION = "flow.agent_prompt_version"
ALLOWED_TOOLS = "flow.allowed_tools"
DELEGATION_REASON = "flow.delegation_reason"
# A contracted child's authority (seed 004, "Child spans additionally identify the authority
# they ran under"): the contract's identity and owner, its authority lists, side-effect class,
# the digest of its return schema and its content-derived constraint ids.
CONTRACT_ID = "flow.contract_id"
CONTRACT_OWNER = "flow.contract_owner"
AUTHORITY_MAY = "flow.authority_may"
AUTHORITY_MUST_NOT = "flow.authority_must_not"
AUTHORITY_REQUIRES_APPROVAL = "flow.authority_requires_approval"
SIDE_EFFECT_CLASS = "flow.side_effect_class"
RETURN_SCHEMA_DIGEST = "flow.return_schema_digest"
CONSTRAINT_IDS = "flow.constraint_ids"
BASH_RO_ENFORCEMENT = "flow.bash_ro.enforcement"
SPAWNED = "flow.spawned"
# Event.
EVENT_KIND = "flow.event_kind"
EVENT_REASON = "flow.event_reason"
# An approval event: the person's answer and the project files (``kind:name``) it was about.
APPROVAL_OUTCOME = "flow.approval.outcome"
APPROVAL_FILES = "flow.approval.files"
# A judging mode's control token (docs/flows.md, "Control tokens"): what it said and where from.
CONTROL_VALUE = "flow.control.value"
CONTROL_SOURCE = "flow.control.source"
# Handoff, validation and artifact events (pi-flows' ``trace-attributes``): shapes, sizes,
# ids and digests, never the summary prose or the envelope's ``data``.
# ``flow.handoff.<attribute>``: status, compatibility, acceptance, raw_bytes, policy_action, …
HANDOFF = "flow.handoff."
ARTIFACT_PATH = "flow.artifact.path"
# Always: the path is text the child chose, so with ``recordContent: false`` only this digest
# (``sha256:`` of its UTF-8) stands for it, as ``artifact_ref_digests`` does for the list.
ARTIFACT_PATH_DIGEST = "flow.artifact.path_sha256"
ARTIFACT_FROM_AGENT = "flow.artifact.from_agent"
ARTIFACT_CONTRACT_ID = "flow.artifact.contract_id"
ARTIFACT_DIGEST_DECLARED = "flow.artifact.digest_declared"
ARTIFACT_DIGEST = "flow.artifact.digest"
# A legacy-prose envelope's contract id, as pi-flows writes it.
LEGACY_CONTRACT = "(legacy)"
# Root.
ELAPSED_MS = "flow.elapsed_time_ms"
WORKER_MS = "flow.worker_time_ms"
CRITICAL_PATH_MS = "flow.critical_path_ms"
CRITICAL_PATH_AVAILABLE = "flow.critical_path_available"
LEGACY_DURATION_TOTAL = "flow.duration_ms_total"
EXPECTED_SPANS = "flow.trace.expected_spans"
OBSERVED_SPANS = "flow.trace.observed_spans"
DROPPED_SPANS = "flow.trace.dropped_spans"
REDACTED_SPANS = "flow.trace.redacted_spans"
FAILED_EXPORTS = "flow.trace.failed_exports"
HEALTH = "flow.trace.health"

# Bounds: a recorded string (content, reasons, ids) and a dependency list.
VALUE_CAP_BYTES = 16 * 1024
ID_CAP_CHARS = 200
DEPENDS_ON_CAP = 32


class SpanRole(enum.StrEnum):
    ROOT = "root"
    STAGE = "stage"
    CHILD = "child"
    EVENT = "event"


class EventKind(enum.StrEnum):
    ARTIFACT = "artifact"
    STATE = "state"
    RETRY = "retry"
    APPROVAL = "approval"
    BUDGET = "budget"
    VALIDATION = "validation"
    HANDOFF = "handoff"


class Health(enum.StrEnum):
    RECORDED = "recorded"
    DEGRADED = "degraded"
    MISSING = "missing"


def escape_key(key: str) -> str:
    """A unit key as dependency lists write it: ``%`` and ``,`` percent-escaped, so a comma
    inside an author-supplied id cannot split the list (``build,linux`` → ``build%2Clinux``)."""
    return key.replace("%", "%25").replace(",", "%2C")


def unescape_key(key: str) -> str:
    return key.replace("%2C", ",").replace("%2c", ",").replace("%25", "%")


def joined(keys: Sequence[str], cap: int = DEPENDS_ON_CAP) -> tuple[str, bool]:
    """``keys`` escaped and comma-joined, at most ``cap`` of them; whether some were cut."""
    return ",".join(escape_key(key) for key in keys[:cap]), len(keys) > cap


def split_keys(value: str) -> tuple[str, ...]:
    return tuple(unescape_key(part) for part in value.split(",")) if value else ()


def redacted(text: str, *, redact_on: bool, home: str | None) -> str:
    """``text`` as a span may carry it before any cut: redacted under ``redactSecrets``."""
    return redact(text, home=home) if redact_on else text


def bounded(text: str, *, redact_on: bool, home: str | None, cap: int) -> tuple[str, bool]:
    """``text`` as a span may carry it: redacted (``redactSecrets``), then cut to ``cap``
    UTF-8 bytes (never inside a character); whether either changed it."""
    found = redacted(text, redact_on=redact_on, home=home)
    data = found.encode("utf-8", "surrogatepass")
    if len(data) > cap:
        found = data[:cap].decode("utf-8", "ignore") + "…[cut]"
    return found, found != text


@attrs.frozen
class TraceHealth:
    """The export's own account (the root span's ``flow.trace.*``): spans the flow meant to
    write, spans written whole, spans that never reached the file, spans whose values were
    redacted or cut, and exports that failed."""

    expected: int
    observed: int
    redacted: int = 0
    failed_exports: int = 0

    @property
    def dropped(self) -> int:
        return max(0, self.expected - self.observed)

    @property
    def health(self) -> Health:
        if self.observed == 0:
            return Health.MISSING
        if self.dropped or self.failed_exports:
            return Health.DEGRADED
        return Health.RECORDED

    @property
    def complete(self) -> bool:
        return self.health is Health.RECORDED

    def attributes(self) -> dict[str, int | str]:
        return {
            EXPECTED_SPANS: self.expected,
            OBSERVED_SPANS: self.observed,
            DROPPED_SPANS: self.dropped,
            REDACTED_SPANS: self.redacted,
            FAILED_EXPORTS: self.failed_exports,
            HEALTH: str(self.health),
        }

    def document(self) -> dict[str, int | str]:
        return {
            "expected": self.expected,
            "observed": self.observed,
            "dropped": self.dropped,
            "redacted": self.redacted,
            "failedExports": self.failed_exports,
            "health": str(self.health),
        }


@attrs.frozen
class UnitTiming:
    """One run for the critical path: its key, how long it ran, the keys it depended on."""

    key: str
    duration_ms: int
    depends_on: tuple[str, ...] = ()


def critical_path_ms(units: Iterable[UnitTiming]) -> int | None:
    """The longest chain of runs through their dependencies (a chain's steps add up, a
    parallel fan-out is its longest task, a graph its heaviest dependency path); ``None``
    when a dependency names no unit or loops, so no value is fabricated."""
    by_key = {unit.key: unit for unit in units}
    memo: dict[str, int] = {}
    visiting: set[str] = set()

    def longest(key: str) -> int | None:
        if key in memo:
            return memo[key]
        unit = by_key.get(key)
        if unit is None or key in visiting:
            return None
        visiting.add(key)
        best = 0
        for dependency in unit.depends_on:
            found = longest(dependency)
            if found is None:
                return None
            best = max(best, found)
        visiting.discard(key)
        memo[key] = best + unit.duration_ms
        return memo[key]

    total = 0
    for key in by_key:
        found = longest(key)
        if found is None:
            return None
        total = max(total, found)
    return total


def contract_attributes(
    contract: Contract, bound: Callable[[str], tuple[str, bool]]
) -> tuple[dict[str, str | tuple[str, ...]], bool]:
    """The authority a contracted child ran under, as child-span attributes, each of the
    contract's (parent-authored) texts through ``bound`` (redaction and the value cap); with
    whether that changed any of them."""
    document = contract.document
    owner, changed = bound(document["owner"])
    found: dict[str, str | tuple[str, ...]] = {
        CONTRACT_ID: contract.contract_id,
        CONTRACT_OWNER: owner,
        SIDE_EFFECT_CLASS: document["sideEffectClass"],
        RETURN_SCHEMA_DIGEST: canonical_sha256(contract.return_schema),
        CONSTRAINT_IDS: constraint_ids(document),
    }
    authority = document["authority"]
    for name, field in (
        (AUTHORITY_MAY, "may"),
        (AUTHORITY_MUST_NOT, "mustNot"),
        (AUTHORITY_REQUIRES_APPROVAL, "requiresApproval"),
    ):
        items = [bound(item) for item in authority[field]]
        found[name] = tuple(text for text, _ in items)
        changed |= any(cut for _, cut in items)
    return found, changed
