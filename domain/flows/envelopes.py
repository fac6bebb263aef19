"""Return envelopes (``pi-flows.return-envelope.v1``) and handoff envelopes
(``pi-flows.handoff-envelope.v1``): what a contracted child must answer, and the shape every
consumed result takes.

A contracted child's final message must end with a fenced ``json`` block holding its return
envelope. It is checked in pi-flows' order, the first failure reported:

1. **shape** — the closed schema ``flow-return-envelope-v1`` (``RETURN_ENVELOPE_INVALID``:
   no block, not strict JSON, a missing/extra/mistyped field);
2. **identity** — ``contractId`` equals the dispatched contract's (``RETURN_CONTRACT_MISMATCH``,
   missing or stale; the claimed id is kept in the message when it is id-shaped);
3. **integrity** — every artifact reference is a relative path inside the child's ``cwd``
   (lexically here; on disk by the application's stable reads), every digest names a
   referenced artifact (``RETURN_ENVELOPE_INVALID``), and each declared SHA-256 matches the
   file's bytes (``RETURN_DIGEST_MISMATCH``, reported even when the data would also fail);
4. **schema** — ``data`` against the contract's ``returnSchema`` (``RETURN_ENVELOPE_INVALID``);
5. **completeness** — ``partial``/``blocked`` fail closed (``RETURN_ENVELOPE_INCOMPLETE``)
   unless ``incompleteHandoffPolicy: "include"``; ``failed`` always does.

Messages name fields and indexes, never the child's text (a child is an adversary). Pure.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

import attrs

from domain.errors import ErrorCode
from domain.flows.contracts import Contract
from domain.spec.schema import describe, violations
from domain.strict_json import JsonDecodeFailure, JsonTooDeep, decode_json

ENVELOPE_SCHEMA = "flow-return-envelope-v1"
_FENCE = re.compile(r"^```json[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_ID = re.compile(r"^sha256:[a-fA-F0-9]{64}$")
INCOMPLETE = ("partial", "blocked")


@attrs.frozen
class Rejection:
    """Why a return envelope is not consumed: a catalogue code and a content-free message."""

    code: ErrorCode
    message: str


@attrs.frozen
class Artifact:
    """One artifact the envelope references: ``path`` relative to the child's ``cwd`` (already
    lexically inside it), ``sha256`` the declared digest (lowercase) or ``None``."""

    index: int
    path: str
    sha256: str | None


def last_json_block(text: str) -> str | None:
    found = _FENCE.findall(text)
    return found[-1] if found else None


def parse_return(text: str, contract: Contract) -> dict[str, Any] | Rejection:
    """Shape and identity of the envelope in ``text`` (steps 1 and 2)."""
    block = last_json_block(text)
    if block is None:
        return Rejection(
            ErrorCode.RETURN_ENVELOPE_INVALID,
            "the final message has no fenced json block holding a return envelope",
        )
    try:
        value = decode_json(block.encode("utf-8", "surrogatepass"))
    except (JsonDecodeFailure, JsonTooDeep) as error:
        return Rejection(
            ErrorCode.RETURN_ENVELOPE_INVALID, f"the return envelope is not strict JSON: {error}"
        )
    found = violations(ENVELOPE_SCHEMA, value)
    if found:
        return Rejection(
            ErrorCode.RETURN_ENVELOPE_INVALID,
            f"the return envelope does not match {ENVELOPE_SCHEMA}: {describe(found[0])}",
        )
    assert isinstance(value, dict)
    claimed = value.get("contractId")
    if claimed != contract.contract_id:
        shown = claimed if isinstance(claimed, str) and _ID.match(claimed) else "(missing)"
        return Rejection(
            ErrorCode.RETURN_CONTRACT_MISMATCH,
            f"expected contractId {contract.contract_id}, received {shown}",
        )
    return value


def artifacts(envelope: dict[str, Any]) -> tuple[Artifact, ...] | Rejection:
    """The artifacts to check on disk (step 3's lexical half): each path relative, normalised,
    inside the ``cwd``; each digest's artifact referenced."""
    paths: list[str] = []
    for index, reference in enumerate(envelope["artifactReferences"]):
        path = reference["path"]
        normal = posixpath.normpath(path)
        if (
            posixpath.isabs(path)
            or normal == ".."
            or normal.startswith("../")
            or normal == "."
            or "\\" in path
        ):
            return Rejection(
                ErrorCode.RETURN_ENVELOPE_INVALID,
                f"artifactReferences[{index}].path escapes the child's cwd (it must be a "
                "relative path to a file inside it)",
            )
        paths.append(normal)
    declared: dict[str, str] = {}
    for index, digest in enumerate(envelope["digests"]):
        normal = posixpath.normpath(digest["artifact"])
        if normal not in paths:
            return Rejection(
                ErrorCode.RETURN_ENVELOPE_INVALID,
                f"digests[{index}].artifact is not one of the artifactReferences",
            )
        declared[normal] = digest["value"].lower()
    return tuple(
        Artifact(index, path, declared.get(path)) for index, path in enumerate(dict.fromkeys(paths))
    )


def check_data(envelope: dict[str, Any], contract: Contract) -> Rejection | None:
    """Step 4: ``data`` against the contract's ``returnSchema``."""
    try:
        errors = list(contract.validator().iter_errors(envelope["data"]))
    except Exception as error:  # an unresolvable $ref, a regex the engine rejects
        return Rejection(
            ErrorCode.RETURN_ENVELOPE_INVALID,
            f"contract.returnSchema could not be applied to data ({type(error).__name__})",
        )
    if errors:
        first = min(errors, key=lambda e: [str(p) for p in e.absolute_path])
        where = describe(first).replace("$", "data", 1)
        return Rejection(
            ErrorCode.RETURN_ENVELOPE_INVALID,
            f"data does not satisfy contract.returnSchema ({len(errors)} violation"
            f"{'s' if len(errors) != 1 else ''}; first: {where})",
        )
    return None


def check_complete(envelope: dict[str, Any], incomplete_policy: str) -> Rejection | None:
    """Step 5: an incomplete envelope fails closed unless the call includes it."""
    status = envelope["status"]
    if status == "failed" or (status in INCOMPLETE and incomplete_policy != "include"):
        unresolved = len(envelope["unresolvedQuestions"])
        advice = (
            "a failed envelope is always terminal"
            if status == "failed"
            else 'incompleteHandoffPolicy is not "include"'
        )
        return Rejection(
            ErrorCode.RETURN_ENVELOPE_INCOMPLETE,
            f"the child returned status {status} with {unresolved} unresolved question"
            f"{'s' if unresolved != 1 else ''}, and {advice}",
        )
    return None
