"""What a handoff carries and what the trace may say about it.

A dependent is handed the producer's ``pi-flows.handoff-envelope.v1`` as JSON, never bare prose:
a contracted result's typed envelope, a prose result's ``legacy-prose`` one (seed 004: "downstream
prompts receive that explicit compatibility shape instead of trusting unlabelled prose"). The
envelope is cleaned leaf by leaf (every string stripped and redacted on its own), fitted to the
handoff cap by shortening its longest strings, then written as compact JSON, so what crosses
always parses: cleaning or cutting the serialised text instead could let a redaction pattern run
across a closing quote, or leave half a document.

``HandoffFacts`` is the content-free account of one envelope the trace records (counts, ids,
artifact paths and digests): never its summary, evidence prose or ``data``. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from domain.flows.canonical import canonical_sha256
from domain.flows.contracts import HANDOFF_ENVELOPE_VERSION

TYPED = "typed"
LEGACY_PROSE = "legacy-prose"
# A legacy-prose envelope's ``summary``: the first KiB of its text. pi-flows repeats the whole
# text there; bounding it keeps a handed-on envelope from carrying every answer twice.
SUMMARY_CAP_BYTES = 1024


def legacy_envelope(text: str, *, agent: str, step: int | None, ok: bool = True) -> dict[str, Any]:
    """A prose result as a ``legacy-prose`` handoff envelope: ``contractId`` null, ``text`` as
    ``data.text`` and its first KiB as ``summary``, empty lists, not retryable."""
    data = text.encode("utf-8", "surrogatepass")
    summary = text
    if len(data) > SUMMARY_CAP_BYTES:
        # Never cut inside a character.
        summary = data[:SUMMARY_CAP_BYTES].decode("utf-8", "ignore") + "…"
    return {
        "schemaVersion": HANDOFF_ENVELOPE_VERSION,
        "contractId": None,
        "compatibility": LEGACY_PROSE,
        "status": "completed" if ok else "failed",
        "summary": summary,
        "evidence": [],
        "artifactReferences": [],
        "digests": [],
        "changedState": [],
        "unresolvedQuestions": [],
        "retry": {"retryable": False},
        "data": {"text": text},
        "provenance": provenance(agent, step),
    }


def compact_json(value: Any) -> str:
    """What crosses: compact JSON, keys sorted, non-ASCII as itself. Not the canonical
    (identity) serialisation: nothing hashes it, and the standard library's C encoder takes
    about a tenth of its time (11 against 132 µs for a small legacy envelope), paid at every
    handoff. Its strings were cleaned first, so no lone surrogate is left to write."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def provenance(agent: str, step: int | None) -> dict[str, Any]:
    found: dict[str, Any] = {"agent": agent}
    if step is not None:
        found["step"] = step
    return found


def clean_leaves(value: Any, clean: Callable[[str], str]) -> Any:
    """``value`` with ``clean`` applied to every string in it (object keys included: a child
    chose them too)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [clean_leaves(item, clean) for item in value]
    if isinstance(value, dict):
        return {clean(key): clean_leaves(item, clean) for key, item in value.items()}
    return value


def colliding_key(value: Any, normal: Callable[[str], str], path: str = "$") -> str | None:
    """The JSON path of the first object in ``value`` two of whose keys become the same under
    ``normal`` (the invisible-character strip), or ``None``. Cleaning such an object would keep
    whichever came last: what crosses would differ from what was validated."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = colliding_key(item, normal, f"{path}[{index}]")
            if found is not None:
                return found
    elif isinstance(value, dict):
        if len({normal(key) for key in value}) < len(value):
            return path
        for key, item in value.items():
            found = colliding_key(item, normal, f"{path}.{normal(key)}")
            if found is not None:
                return found
    return None


# What a cut string leaf ends with, so the next agent knows part of it did not cross.
LEAF_CUT_NOTE = "…[cut to fit the handoff cap]"


def fitted(value: Any, limit: int) -> tuple[Any, bool]:
    """``value`` whose compact JSON fits ``limit`` UTF-8 bytes, by halving its longest string
    leaf (never inside a character, with ``LEAF_CUT_NOTE``) until it does; and whether any
    leaf was cut. The envelope keeps its shape and parses, unlike a cut of its serialised text.
    A value whose structure alone is over the limit is returned as small as halving makes it."""
    cut = False
    while len(compact_json(value).encode("utf-8")) > limit:
        leaves = list(_string_leaves(value, ()))
        if not leaves:
            break
        where, longest = max(leaves, key=lambda leaf: len(leaf[1]))
        if len(longest) <= len(LEAF_CUT_NOTE):
            break
        half = longest.encode("utf-8")[: len(longest.encode("utf-8")) // 2].decode(
            "utf-8", "ignore"
        )
        value = _replaced(value, where, half + LEAF_CUT_NOTE)
        cut = True
    return value, cut


def _string_leaves(value: Any, where: tuple[Any, ...]) -> Any:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _string_leaves(item, (*where, index))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _string_leaves(item, (*where, key))


def _replaced(value: Any, where: tuple[Any, ...], leaf: str) -> Any:
    if not where:
        return leaf
    head, rest = where[0], where[1:]
    if isinstance(value, list):
        return [_replaced(item, rest, leaf) if i == head else item for i, item in enumerate(value)]
    return {
        key: _replaced(item, rest, leaf) if key == head else item for key, item in value.items()
    }


def constraint_ids(contract: Mapping[str, Any]) -> tuple[str, ...]:
    """pi-flows' content-derived ids of a contract's constraints and acceptance checks
    (``constraint.<n>:<12 hex>``, ``acceptance.<n>:<12 hex>``): the same constraint keeps the
    same id at every hop, so "was it preserved?" is answerable without its text."""

    def short(text: str) -> str:
        return canonical_sha256(text).removeprefix("sha256:")[:12]

    constraints = enumerate(contract["constraints"], start=1)
    checks = enumerate(contract["acceptanceChecks"], start=1)
    return (
        *(f"constraint.{i}:{short(c)}" for i, c in constraints),
        *(f"acceptance.{i}:{short(c)}" for i, c in checks),
    )


@attrs.frozen
class Declared:
    """One artifact an envelope declared: its path as written and the SHA-256 declared for it
    (lowercase hex), if any."""

    path: str
    sha256: str | None = None


def declared_artifacts(envelope: Mapping[str, Any]) -> tuple[Declared, ...]:
    """The artifact references of a (shape-checked) return or handoff envelope, each with the
    digest declared for it."""
    digests = {d["artifact"]: str(d["value"]).lower() for d in envelope.get("digests", [])}
    return tuple(
        Declared(ref["path"], digests.get(ref["path"]))
        for ref in envelope.get("artifactReferences", [])
    )


@attrs.frozen
class HandoffFacts:
    """What the trace records of one handoff envelope: shape, identity and counts."""

    compatibility: str
    contract_id: str | None
    agent: str
    step: int | None
    status: str
    evidence: int = 0
    artifacts: tuple[Declared, ...] = ()
    digests: int = 0
    changed_state: int = 0
    unresolved: int = 0
    retryable: bool = False
    constraint_ids: tuple[str, ...] = ()

    @classmethod
    def of(cls, envelope: Mapping[str, Any], constraints: tuple[str, ...] = ()) -> HandoffFacts:
        origin = envelope.get("provenance", {})
        return cls(
            compatibility=str(envelope.get("compatibility", TYPED)),
            contract_id=envelope.get("contractId"),
            agent=str(origin.get("agent", "")),
            step=origin.get("step"),
            status=str(envelope.get("status", "")),
            evidence=len(envelope.get("evidence", [])),
            artifacts=declared_artifacts(envelope),
            digests=len(envelope.get("digests", [])),
            changed_state=len(envelope.get("changedState", [])),
            unresolved=len(envelope.get("unresolvedQuestions", [])),
            retryable=bool(envelope.get("retry", {}).get("retryable", False)),
            constraint_ids=constraints,
        )
