"""Worker output is validated before collection (seed §4-§5, §9): oversized and truncated
output, failed stops, format errors, and every evidence reference against captured bytes."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from domain.delegation.envelope import SourceDescriptor
from domain.delegation.lifecycle import State
from domain.delegation.result import Verdict, judge_output, line_count

S1 = "src-0000000000000001"
S2 = "src-0000000000000002"
DATA = b"alpha\nbeta gamma\ndelta\n"
SHA = hashlib.sha256(DATA).hexdigest()
SOURCE = SourceDescriptor(S1, SHA, len(DATA), line_count(DATA), "text/plain", "captured", "a")
OTHER = SourceDescriptor(S2, "b" * 64, 1, 1, "text/plain", "captured", "b")


def result(**overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "status": "complete",
        "answer": "a",
        "evidence": [{"evidenceId": "e1", "sourceId": S1, "lineStart": 2, "lineEnd": 2}],
        "coverage": [
            {"requirementId": "R1", "state": "covered", "explanation": "", "evidenceIds": ["e1"]}
        ],
        "findings": [],
        "missing": [],
    }
    document.update(overrides)
    return document


def judge(raw: bytes | dict[str, Any], **kwargs: Any) -> Verdict:
    data = raw if isinstance(raw, bytes) else json.dumps(raw).encode()
    options: dict[str, Any] = {
        "overflow": False,
        "stop_reason": "stop",
        "max_output_bytes": 16_384,
        "requirement_ids": ("R1",),
        "granted": {S1: SOURCE},
        "known_sources": frozenset({S1, S2}),
        "source_bytes": {S1: DATA},
    }
    options.update(kwargs)
    return judge_output(raw=data, **options)


def evidence(**item: Any) -> dict[str, Any]:
    return result(evidence=[{"evidenceId": "e1", "sourceId": S1, **item}])


def test_a_complete_valid_result_is_ready() -> None:
    verdict = judge(result())
    assert verdict.state is State.READY
    assert verdict.validation["references"] == "passed"


def test_partial_and_needs_context_are_incomplete_with_a_gap() -> None:
    verdict = judge(result(status="needs_context"))
    assert verdict.state is State.INCOMPLETE
    assert verdict.context_gap
    assert not judge(result(status="partial")).context_gap


def test_oversized_output_is_never_parsed() -> None:
    verdict = judge(result(), max_output_bytes=10)
    assert verdict.state is State.INVALID
    assert verdict.result is None
    assert verdict.validation["truncation"] == "overflow"
    assert not verdict.correctable
    assert judge(result(), overflow=True).validation["truncation"] == "overflow"


def test_truncated_output_is_invalid_even_when_it_parses() -> None:
    verdict = judge(result(), stop_reason="length")
    assert verdict.state is State.INVALID
    assert verdict.validation["truncation"] == "truncated"


def test_error_and_aborted_stops_are_failures_even_with_output() -> None:
    assert judge(result(), stop_reason="error").state is State.FAILED
    assert judge(result(), stop_reason="aborted").state is State.FAILED


def test_format_errors_are_correctable() -> None:
    for raw in (b"not json", b'{"status": "complete"}', json.dumps(result(extra=1)).encode()):
        verdict = judge(raw)
        assert verdict.state is State.INVALID
        assert verdict.correctable


def test_reference_errors_are_invalid_and_not_correctable() -> None:
    cases = {
        "does not exist": evidence(lineStart=1, lineEnd=1, sourceId="src-00000000000000f9"),
        "outside this job's grant": evidence(lineStart=1, lineEnd=1, sourceId=S2),
        "hash does not match": evidence(lineStart=1, lineEnd=1, sha256="0" * 64),
        "line range is impossible": evidence(lineStart=3, lineEnd=4),
        "byte range is impossible": evidence(byteStart=5, byteEnd=len(DATA) + 1),
        "cite exactly one range": evidence(),
        "quotation is not in": evidence(lineStart=1, lineEnd=1, quotation="beta"),
    }
    for expected, document in cases.items():
        document["evidence"][0]["sourceId"] = document["evidence"][0].get("sourceId", S1)
        verdict = judge(document)
        assert verdict.state is State.INVALID, expected
        assert verdict.problem is not None
        assert expected in verdict.problem, verdict.problem
        assert not verdict.correctable


def test_an_exact_quotation_in_its_range_passes() -> None:
    verdict = judge(evidence(lineStart=2, lineEnd=3, quotation="gamma\ndelta"))
    assert verdict.state is State.READY


def test_observed_findings_need_evidence_and_cited_ids_must_exist() -> None:
    finding = {
        "findingId": "f1",
        "claim": "c",
        "trigger": "",
        "consequence": "",
        "basis": "observed",
        "evidenceIds": [],
        "contraryEvidenceIds": [],
        "limitations": "",
    }
    assert judge(result(findings=[finding])).state is State.INVALID
    cited = {**finding, "evidenceIds": ["e9"]}
    assert "not in the evidence table" in str(judge(result(findings=[cited])).problem)


def test_coverage_must_name_each_requirement_once() -> None:
    verdict = judge(result(coverage=[]))
    assert verdict.state is State.INVALID
    assert verdict.validation["coverage"] == "failed"
