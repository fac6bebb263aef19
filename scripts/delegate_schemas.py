"""Writes the `delegate` JSON Schema documents (domain/spec/schemas/delegate-*.schema.json).

Edit this generator and run `uv run python scripts/delegate_schemas.py`; never hand-edit the
files (``tests/unit/domain/test_schema_scripts.py`` checks the committed files equal this
output). Every object is closed (`additionalProperties: false`), every string and array bounded.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from domain.delegation.policy import MODES  # noqa: E402
from domain.names import schema_file, schema_text  # noqa: E402

SCHEMA_DIR = REPO / "domain" / "spec" / "schemas"


def text(maxlen: int, minlen: int = 1) -> dict[str, Any]:
    return {"type": "string", "minLength": minlen, "maxLength": maxlen}


ID = {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}
HOST_ID = {"type": "string", "pattern": "^[a-z]{1,4}-[0-9a-f]{16,32}$"}
KEY = {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,128}$"}


def arr(items: dict[str, Any], maxn: int, minn: int = 0, unique: bool = False) -> dict[str, Any]:
    a: dict[str, Any] = {"type": "array", "items": items, "maxItems": maxn}
    if minn:
        a["minItems"] = minn
    if unique:
        a["uniqueItems"] = True
    return a


def obj(
    props: dict[str, Any], required: list[str], title: str = "", sid: str | None = None
) -> dict[str, Any]:
    o = {"type": "object", "additionalProperties": False, "required": required, "properties": props}
    return o if sid is None else schema_file(sid, title, o)


def version() -> dict[str, Any]:
    return {"const": 1}


def op(name: str) -> dict[str, Any]:
    return {"const": name}


def lim(mx: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, "maximum": mx}


def opt() -> dict[str, Any]:
    return {"type": ["string", "null"], "maxLength": 200}


BINDING = {
    "batchId": HOST_ID,
    "jobId": HOST_ID,
    "attemptId": HOST_ID,
    "packetDigest": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    "resultRevision": {"type": "integer", "minimum": 1, "maximum": 1000000},
    "taskGeneration": {"type": "integer", "minimum": 0, "maximum": 1000000000},
}
BINDING_REQ = list(BINDING)
schemas: dict[str, dict[str, Any]] = {}


def request(name: str, props: dict[str, Any], required: list[str]) -> None:
    """One request document: ``version`` and ``op`` first, then the op's own fields."""
    sid = f"delegate-{name.replace('_', '-')}-v1"
    schemas[sid] = obj(
        {"version": version(), "op": op(name), **props},
        ["version", "op", *required],
        f"delegate {name} request",
        sid,
    )


job = obj(
    {
        "key": ID,
        "mode": {"enum": list(MODES)},
        "question": text(4000),
        "requirements": arr(ID, 32, 1, True),
        "sourceIds": arr(HOST_ID, 64, 0, True),
        "acceptance": text(2000),
        "decisions": arr(text(500), 16),
        "nonGoals": arr(text(500), 16),
        "independence": text(1000),
        "parentAlternative": text(1000),
        "reason": text(1000),
        "receiptIds": arr(HOST_ID, 32, 0, True),
    },
    ["key", "mode", "question", "requirements", "sourceIds", "acceptance", "reason"],
)
request(
    "run",
    {
        "objective": text(2000),
        "requirements": arr(obj({"id": ID, "text": text(1000)}, ["id", "text"]), 32, 1),
        "jobs": arr(job, 8, 1),
        "limits": obj(
            {
                "maxRequests": {"type": "integer", "minimum": 1, "maximum": 1024},
                "deadlineMs": {"type": "integer", "minimum": 1000, "maximum": 3600000},
                "maxOutputBytes": {"type": "integer", "minimum": 256, "maximum": 1048576},
            },
            ["maxRequests", "deadlineMs"],
        ),
        "idempotencyKey": KEY,
    },
    ["objective", "requirements", "jobs", "limits"],
)
request("status", {"batchId": HOST_ID}, [])
request(
    "collect",
    {
        "batchId": HOST_ID,
        "jobIds": arr(HOST_ID, 8, 0, True),
        "afterCursor": {"type": "integer", "minimum": 0, "maximum": 1000000000},
        "waitMs": {"type": "integer", "minimum": 0, "maximum": 30000},
    },
    ["batchId"],
)
request(
    "follow_up",
    {
        **BINDING,
        "idempotencyKey": KEY,
        "addresses": {"enum": ["context_gap", "format_error"]},
        "correction": text(8000),
        "sourceIds": arr(HOST_ID, 64, 0, True),
    },
    [*BINDING_REQ, "idempotencyKey", "addresses", "correction"],
)
request(
    "resolve",
    {
        **BINDING,
        "idempotencyKey": KEY,
        "disposition": {"enum": ["accept", "discard", "needs_check"]},
        "findings": arr(
            obj(
                {
                    "findingId": ID,
                    "decision": {"enum": ["confirmed", "rejected", "needs_check"]},
                    "reason": text(1000),
                    "evidenceIds": arr(ID, 32, 0, True),
                },
                ["findingId", "decision", "reason"],
            ),
            32,
        ),
        "reason": text(1000),
    },
    [*BINDING_REQ, "idempotencyKey", "disposition", "findings"],
)
request(
    "cancel",
    {
        "batchId": HOST_ID,
        "jobId": HOST_ID,
        "idempotencyKey": KEY,
    },
    ["batchId"],
)
request(
    "capture",
    {
        "paths": arr(text(4096), 64, 0, True),
        "excerpts": arr(obj({"label": text(200), "text": text(65536)}, ["label", "text"]), 16),
        "parentObservations": arr(
            obj(
                {"origin": text(500), "result": text(8000), "sourceIds": arr(HOST_ID, 16, 0, True)},
                ["origin", "result"],
            ),
            16,
        ),
    },
    [],
)
EVIDENCE_ID = ID
schemas["delegate-result-v1"] = obj(
    {
        "status": {"enum": ["complete", "partial", "needs_context"]},
        "answer": text(8000, 0),
        "evidence": arr(
            obj(
                {
                    "evidenceId": EVIDENCE_ID,
                    "sourceId": HOST_ID,
                    "lineStart": {"type": "integer", "minimum": 1},
                    "lineEnd": {"type": "integer", "minimum": 1},
                    "byteStart": {"type": "integer", "minimum": 0},
                    "byteEnd": {"type": "integer", "minimum": 0},
                    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                    "quotation": text(2000),
                    "receiptId": HOST_ID,
                },
                ["evidenceId"],
            ),
            64,
        ),
        "coverage": arr(
            obj(
                {
                    "requirementId": ID,
                    "state": {"enum": ["covered", "uncovered", "not_applicable"]},
                    "explanation": text(2000, 0),
                    "evidenceIds": arr(EVIDENCE_ID, 32, 0, True),
                },
                ["requirementId", "state", "explanation", "evidenceIds"],
            ),
            32,
        ),
        "findings": arr(
            obj(
                {
                    "findingId": ID,
                    "claim": text(2000),
                    "trigger": text(1000, 0),
                    "consequence": text(1000, 0),
                    "basis": {"enum": ["observed", "inferred", "unverified"]},
                    "evidenceIds": arr(EVIDENCE_ID, 32, 0, True),
                    "contraryEvidenceIds": arr(EVIDENCE_ID, 32, 0, True),
                    "limitations": text(1000, 0),
                    "severity": {"enum": ["low", "medium", "high", "critical"]},
                },
                [
                    "findingId",
                    "claim",
                    "trigger",
                    "consequence",
                    "basis",
                    "evidenceIds",
                    "contraryEvidenceIds",
                    "limitations",
                ],
            ),
            16,
        ),
        "missing": arr(
            obj(
                {
                    "neededEvidence": text(1000),
                    "affectedConclusion": text(1000),
                    "reason": text(1000),
                },
                ["neededEvidence", "affectedConclusion", "reason"],
            ),
            16,
        ),
        "suggestedNextStep": text(1000),
    },
    ["status", "answer", "evidence", "coverage", "findings", "missing"],
    "delegate worker result",
    "delegate-result-v1",
)
schemas["delegate-policy-v1"] = obj(
    {
        "version": version(),
        "modes": arr({"enum": list(MODES)}, len(MODES), 0, True),
        "sourceRoots": arr(text(4096), 64, 0, True),
        "maxSourceBytes": lim(67108864),
        "maxSources": lim(10000),
        "job": obj(
            {
                "maxRequests": lim(1024),
                "deadlineMs": lim(3600000),
                "maxOutputBytes": lim(1048576),
                "maxToolCalls": lim(10000),
            },
            [],
        ),
        "batch": obj({"maxJobs": lim(64), "maxRequests": lim(65536)}, []),
        "session": obj(
            {
                "allowanceRequests": lim(1048576),
                "maxActiveJobs": lim(64),
                "maxBatches": lim(100000),
                "retentionMs": lim(604800000),
                "maxIdempotencyKeys": lim(100000),
            },
            [],
        ),
        "model": obj({"provider": opt(), "model": opt(), "thinking": opt()}, []),
        "trustProjectPolicy": {"type": "boolean"},
    },
    ["version"],
    "delegation policy (the human grant)",
    "delegate-policy-v1",
)
schemas["delegate-tool-v1"] = schema_file(
    "delegate-tool-v1",
    "delegate tool input",
    {
        "oneOf": [
            # Every request: one closed document per ``op``.
            {"$ref": f"{name}.schema.json"}
            for name, request in schemas.items()
            if "op" in request["properties"]
        ]
    },
)
# An evidence entry cites exactly one thing: a source (with a range) or a receipt. This schema
# judges the worker's final text and is never given to a provider, so a combinator is fine here.
schemas["delegate-result-v1"]["properties"]["evidence"]["items"]["oneOf"] = [
    {"required": ["sourceId"]},
    {"required": ["receiptId"]},
]
# The evidence broker's tools (a delegated worker's only tools): the worker is an adversary, so
# its arguments are external input like any request. Ranges are bounded by the source itself
# (checked by the broker); here only their type and a sane ceiling.
POSITION = {"type": "integer", "minimum": 0, "maximum": 1073741824}
LINE = {"type": "integer", "minimum": 1, "maximum": 1073741824}
schemas["delegate-broker-read-v1"] = obj(
    {
        "sourceId": HOST_ID,
        "lineStart": LINE,
        "lineEnd": LINE,
        "byteStart": POSITION,
        "byteEnd": POSITION,
    },
    ["sourceId"],
    "read_source tool input (evidence broker)",
    "delegate-broker-read-v1",
)
schemas["delegate-broker-search-v1"] = obj(
    {"query": text(200), "sourceIds": arr(HOST_ID, 64, 1, True)},
    ["query"],
    "search_source tool input (evidence broker)",
    "delegate-broker-search-v1",
)
schemas["delegate-broker-cite-v1"] = obj(
    {"sourceId": HOST_ID, "receiptId": HOST_ID},
    [],
    "cite_receipt tool input (evidence broker)",
    "delegate-broker-cite-v1",
)
# Exactly one of sourceId/receiptId, said without a combinator: Pi hands this document to
# providers as tool parameters, and some refuse oneOf/anyOf there.
schemas["delegate-broker-cite-v1"]["minProperties"] = 1
schemas["delegate-broker-cite-v1"]["maxProperties"] = 1


def all_schemas() -> dict[str, dict[str, Any]]:
    return schemas


def main() -> None:
    for name, body in all_schemas().items():
        (SCHEMA_DIR / f"{name}.schema.json").write_text(schema_text(body), encoding="utf-8")


if __name__ == "__main__":
    main()
