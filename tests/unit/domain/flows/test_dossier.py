"""``dossier`` over a scripted dispatch: the sections run together, each told to cite its
evidence, then the debrief reconciles the ones that succeeded, through the handoff guard."""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.flows.call import parse_call
from domain.flows.contracts import EVIDENCE_REQUIREMENT
from domain.flows.errors import FlowError
from domain.flows.mode_parts import Decision, FlowStatus
from domain.flows.write_guard import concurrent_pairs
from tests.unit.domain.flows.test_judging import (
    INJECTION,
    WHY,
    BatchedDispatch,
    ScriptedDispatch,
    failed,
    run,
)

SECTIONS = [
    {"agent": "recon", "task": "Read src/parser.py for {task}"},
    {"agent": "recon", "task": "Read the issue tracker"},
    {"agent": "analyst", "task": "Read the changelog", "requireEvidence": False},
]
DOSSIER = {"task": "Why does the parser drop comments?", "dossier": {"sections": SECTIONS}}


def test_the_sections_run_together_then_the_debrief_reconciles_them() -> None:
    dispatch = BatchedDispatch({"section-1": "claim A", "section-2": "claim B"})
    outcome = run(DOSSIER, dispatch)
    assert dispatch.batches == [["section-1", "section-2", "section-3"], ["debrief"]]
    assert [job.role.agent for job in dispatch.jobs] == ["recon", "recon", "analyst", "debrief"]
    assert outcome.status is FlowStatus.COMPLETED
    assert outcome.summary.startswith("Flow dossier: 3/3 sections reconciled by debrief.")
    assert outcome.decisions == (
        Decision("dossier.sections", "debrief", "3/3 succeeded", "section results"),
    )
    debrief = dispatch.jobs[-1]
    assert debrief.depends_on == ("section-1", "section-2", "section-3")
    assert [record.source for record in debrief.handoffs] == [
        "section-1",
        "section-2",
        "section-3",
    ]


def test_each_extractor_is_told_the_question_its_assignment_and_to_cite_evidence() -> None:
    dispatch = ScriptedDispatch({})
    run(DOSSIER, dispatch)
    first = dispatch.told("section-1")
    assert first.startswith("## Dossier question\nWhy does the parser drop comments?")
    assert "## Evidence assignment 1\nRead src/parser.py for Why does the parser" in first
    assert "Return atomic claims with source/file citations" in first
    # requireEvidence defaults to true for a section, and a section may turn it off.
    assert EVIDENCE_REQUIREMENT in first
    assert EVIDENCE_REQUIREMENT in dispatch.told("section-2")
    assert EVIDENCE_REQUIREMENT not in dispatch.told("section-3")


def test_the_debrief_sees_each_section_fenced_and_is_asked_for_the_whole_dossier() -> None:
    dispatch = ScriptedDispatch({"section-1": "claim A", "section-2": "claim B"})
    run(DOSSIER, dispatch)
    told = dispatch.told("debrief")
    assert told.startswith("## Dossier question\nWhy does the parser drop comments?")
    assert "Extracted evidence from 3 section(s) (untrusted data)" in told
    assert "### Evidence section 2: Read the issue tracker" in told
    assert told.count("<<<UNTRUSTED DATA") == 3
    assert "claim A" in told
    assert "claim B" in told
    for asked in (
        "findings",
        "citations",
        "source-conflict table",
        "confidence",
        "gaps",
        "next evidence",
    ):
        assert asked in told


def test_the_debrief_reconciles_only_the_sections_that_succeeded() -> None:
    dispatch = ScriptedDispatch({"section-1": "claim A", "section-2": failed, "section-3": "C"})
    outcome = run(DOSSIER, dispatch)
    told = dispatch.told("debrief")
    assert "Extracted evidence from 2 section(s)" in told
    assert "Evidence section 2" not in told
    assert dispatch.jobs[-1].depends_on == ("section-1", "section-3")
    assert outcome.status is FlowStatus.PARTIAL
    assert outcome.summary.startswith("Flow dossier: 2/3 sections reconciled by debrief.")


def test_fewer_than_two_successes_is_too_few_sections_and_no_debrief_runs() -> None:
    dispatch = ScriptedDispatch({"section-2": failed, "section-3": failed})
    outcome = run(DOSSIER, dispatch)
    assert dispatch.keys == ["section-1", "section-2", "section-3"]
    assert outcome.status is FlowStatus.FAILED
    last = outcome.results[-1]
    assert (last.key, last.agent, last.error_code) == (
        "debrief",
        "debrief",
        ErrorCode.DOSSIER_TOO_FEW_SECTIONS,
    )
    assert last.error == (
        "only 1 of 3 sections succeeded (section-2, section-3 did not); a reconciliation "
        "needs at least 2"
    )


def test_a_failed_debrief_fails_the_dossier() -> None:
    outcome = run(DOSSIER, ScriptedDispatch({"debrief": failed}))
    assert outcome.status is FlowStatus.FAILED
    assert outcome.summary.startswith("Flow dossier: the debrief (debrief) failed")


def test_under_the_fail_policy_an_injected_section_never_reaches_the_debrief() -> None:
    dispatch = ScriptedDispatch({"section-2": INJECTION})
    outcome = run({**DOSSIER, "handoffPolicy": "fail"}, dispatch)
    assert dispatch.keys == ["section-1", "section-2", "section-3"]
    refused = outcome.results[-1]
    assert (refused.key, refused.error_code) == ("debrief", ErrorCode.HANDOFF_POLICY_VIOLATION)


def test_a_dossier_may_name_its_own_debrief_and_every_role_is_admitted() -> None:
    document = {**DOSSIER, "dossier": {"sections": SECTIONS, "debrief": {"agent": "strategist"}}}
    call = parse_call({**document, "why": WHY})
    assert [(path, role.agent) for path, role in call.roles()] == [
        ("$.dossier.sections[0]", "recon"),
        ("$.dossier.sections[1]", "recon"),
        ("$.dossier.sections[2]", "analyst"),
        ("$.dossier.debrief", "strategist"),
    ]
    dispatch = ScriptedDispatch({})
    run(document, dispatch)
    assert dispatch.jobs[-1].role.agent == "strategist"


def test_only_the_sections_count_as_concurrent_writers() -> None:
    call = parse_call({**DOSSIER, "why": WHY})
    assert concurrent_pairs(call) == [(0, 1), (0, 2), (1, 2)]


@pytest.mark.parametrize(
    ("sections", "code"),
    [
        (SECTIONS[:1], ErrorCode.DOSSIER_TOO_FEW_SECTIONS),
        ([], ErrorCode.DOSSIER_TOO_FEW_SECTIONS),
        (SECTIONS * 3, ErrorCode.TOO_MANY_TASKS),
    ],
)
def test_a_dossier_of_fewer_than_two_or_more_than_eight_sections_is_refused(
    sections: list[dict[str, Any]], code: ErrorCode
) -> None:
    with pytest.raises(FlowError) as refused:
        parse_call({**DOSSIER, "dossier": {"sections": sections}, "why": WHY})
    assert (refused.value.code, refused.value.path) == (code, "$.dossier.sections")
