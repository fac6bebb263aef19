"""squad_review (upstream §3 and behaviour 24; contract §10.4): evidence rules, verdicts, failed
review rework in the same squad, and revalidation of every attestation before any verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from application.ports import ForkSession
from application.squads.operations import NewTask, SquadOperations
from application.squads.review import ReviewRecorder
from domain.errors import ErrorCode
from domain.squad.model import ReviewStatus, SquadStatus, TaskStatus, Verdict
from tests.integration.ops_support import (
    EVIDENCE,
    finish,
    operations,
    publish_legacy,
    recorder,
    refused,
    run_to_review,
    squad_status,
    tamper,
    touch_canonical,
    unchanged,
)
from tests.runtime_world import RuntimeWorld


@pytest.fixture
def reviews(world: RuntimeWorld) -> ReviewRecorder:
    return recorder(world)


def pass_rejected_by_revalidation(
    world: RuntimeWorld, reviews: ReviewRecorder, **evidence_change: Any
) -> str:
    """A pass verdict refused as ``ATTESTATION_INVALID`` (§10.4); the message."""
    evidence = {**EVIDENCE, **evidence_change}
    return refused(
        ErrorCode.ATTESTATION_INVALID,
        lambda: reviews.record_review(world.squad_id, Verdict.PASS, **evidence),
    )


def assert_work_reopened_over_the_canonical_spec(world: RuntimeWorld, message: str) -> None:
    assert "canonical spec" in message
    assert squad_status(world) is SquadStatus.RUNNING
    assert world.task("design").status is TaskStatus.PENDING
    assert world.store.snapshot(world.squad_id).squad.review is None


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"contract_checks": []}, "contractChecks"),
        ({"contract_checks": ["  ", ""]}, "contractChecks"),
        ({"diff_review": "   "}, "diffReview"),
        ({"verification_evidence": [" "]}, "verificationEvidence"),
        ({"integration_evidence": ""}, "integrationEvidence"),
    ],
)
def test_missing_evidence_is_rejected_and_nothing_is_recorded(
    world: RuntimeWorld, reviews: ReviewRecorder, change: dict[str, Any], complaint: str
) -> None:
    run_to_review(world)
    evidence = {**EVIDENCE, **change}
    message = unchanged(
        world,
        ErrorCode.REVIEW_INVALID,
        lambda: reviews.record_review(world.squad_id, Verdict.PASS, **evidence),
    )
    assert message.startswith("Review rejected: ")
    assert complaint in message


@pytest.mark.parametrize("verdict", [Verdict.FAIL, Verdict.PASS_WITH_ISSUES])
def test_fail_and_pass_with_issues_need_an_issue(
    world: RuntimeWorld, reviews: ReviewRecorder, verdict: Verdict
) -> None:
    run_to_review(world)
    unchanged(
        world,
        ErrorCode.REVIEW_INVALID,
        lambda: reviews.record_review(world.squad_id, verdict, **EVIDENCE, issues=["", "  "]),
    )


def test_an_unknown_verdict_is_refused(world: RuntimeWorld, reviews: ReviewRecorder) -> None:
    run_to_review(world)
    unchanged(
        world,
        ErrorCode.REVIEW_INVALID,
        lambda: reviews.record_review(world.squad_id, "PASS", **EVIDENCE),
    )


def test_pass_accepts_the_squad_as_done_with_trimmed_evidence(
    world: RuntimeWorld, reviews: ReviewRecorder
) -> None:
    run_to_review(world)
    outcome = reviews.record_review(
        world.squad_id,
        "pass",
        contract_checks=["  all tasks  ", "", " "],
        diff_review=" diff ok ",
        verification_evidence=["tests pass", ""],
        integration_evidence=" e2e ",
        issues=[" "],
    )
    assert outcome.squad_status is SquadStatus.DONE
    assert "accepted as done" in outcome.text
    review = world.store.snapshot(world.squad_id).squad.review
    assert review is not None
    assert review.status is ReviewStatus.PASSED
    assert review.verdict is Verdict.PASS
    assert review.contract_checks == ("all tasks",)
    assert review.diff_review == "diff ok"
    assert review.verification_evidence == ("tests pass",)
    assert review.integration_evidence == "e2e"
    assert review.issues == ()
    assert review.completed_at is not None


def test_pass_with_issues_is_accepted_as_done(world: RuntimeWorld, reviews: ReviewRecorder) -> None:
    run_to_review(world)
    outcome = reviews.record_review(
        world.squad_id, Verdict.PASS_WITH_ISSUES, **EVIDENCE, issues=["docs are thin"]
    )
    assert outcome.squad_status is SquadStatus.DONE
    assert outcome.review.issues == ("docs are thin",)


def test_a_failed_review_stays_in_review_and_cannot_be_overwritten(
    world: RuntimeWorld, reviews: ReviewRecorder
) -> None:
    run_to_review(world)
    outcome = reviews.record_review(world.squad_id, Verdict.FAIL, **EVIDENCE, issues=["broken"])
    assert outcome.squad_status is SquadStatus.REVIEW
    assert "FAILED" in outcome.text
    assert "forkFromTask" in outcome.text
    review = world.store.snapshot(world.squad_id).squad.review
    assert review is not None
    assert review.status is ReviewStatus.FAILED
    message = unchanged(
        world,
        ErrorCode.OPERATION_REFUSED,
        lambda: reviews.record_review(world.squad_id, Verdict.PASS, **EVIDENCE),
    )
    assert "cannot be overwritten" in message


def test_a_squad_not_awaiting_review_is_refused(
    world: RuntimeWorld, reviews: ReviewRecorder
) -> None:
    message = unchanged(
        world,
        ErrorCode.OPERATION_REFUSED,
        lambda: reviews.record_review(world.squad_id, Verdict.PASS, **EVIDENCE),
    )
    assert "not awaiting orchestrator review" in message
    refused(
        ErrorCode.SQUAD_NOT_FOUND,
        lambda: reviews.record_review("no-such-squad", Verdict.PASS, **EVIDENCE),
    )


def test_failed_review_rework_archives_it_and_a_fresh_pending_review_follows(
    world: RuntimeWorld, reviews: ReviewRecorder
) -> None:
    scheduler = run_to_review(world)
    build_session = world.task("build").session  # the session build ran on
    assert build_session is not None
    reviews.record_review(world.squad_id, Verdict.FAIL, **EVIDENCE, issues=["parser breaks"])
    operations(world).add_task(
        world.squad_id,
        NewTask(
            id="build-rework",
            title="Fix the parser",
            description="The review found the parser breaks on empty input.",
            agent="backend",
            depends=("qa",),
            fork_from_task="build",
        ),
    )
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.status is SquadStatus.RUNNING
    assert squad.review is None
    assert [r.status for r in squad.review_history] == [ReviewStatus.FAILED]
    scheduler.reconcile()
    session = world.runtime.latest("build-rework").request.session
    assert isinstance(session, ForkSession)
    assert session.source_file == build_session.file
    finish(world, scheduler, "build-rework")
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.status is SquadStatus.REVIEW
    assert squad.review is not None
    assert squad.review.status is ReviewStatus.PENDING
    gates = [n.text for n in world.notices if n.kind == "review_required"]
    assert len(gates) == 2
    for gate in gates:
        assert "Ship a tested feature" not in gate
        assert "Task design" not in gate
        assert "Fix the parser" not in gate
    outcome = reviews.record_review(world.squad_id, Verdict.PASS, **EVIDENCE)
    assert outcome.squad_status is SquadStatus.DONE
    history = world.store.snapshot(world.squad_id).squad.review_history
    assert [r.verdict for r in history] == [Verdict.FAIL]


def test_a_tampered_attestation_found_at_review_rejects_it_and_reopens_the_task_and_descendants(
    world: RuntimeWorld, reviews: ReviewRecorder
) -> None:
    scheduler = run_to_review(world)
    outputs = {k: t.output for k, t in world.store.snapshot(world.squad_id).tasks.items()}
    tamper(world, "design")
    message = pass_rejected_by_revalidation(world, reviews)
    assert message.startswith(
        "Review rejected: invalid canonical spec attestation for task(s): design"
    )
    assert message.endswith("Work was reopened.")
    snapshot = world.store.snapshot(world.squad_id)
    assert snapshot.squad.status is SquadStatus.RUNNING
    assert snapshot.squad.review is None
    assert [r.status for r in snapshot.squad.review_history] == [ReviewStatus.PENDING]
    assert all(r.verdict is None for r in snapshot.squad.review_history), "no verdict recorded"
    design = snapshot.tasks["design"]
    assert design.status is TaskStatus.PENDING
    assert design.completed is None
    assert design.error is not None
    assert "attestation" in design.error
    for descendant in ("build", "docs", "qa"):
        assert snapshot.tasks[descendant].status is TaskStatus.BLOCKED
        assert snapshot.tasks[descendant].completed is None
        assert snapshot.tasks[descendant].output == outputs[descendant]
    # The work reruns in dependency order and a fresh review follows.
    scheduler.reconcile()
    assert world.runtime.live_task_ids() == ["design"]
    for task_id in ("design", "build", "docs", "qa"):
        finish(world, scheduler, task_id)
    assert squad_status(world) is SquadStatus.REVIEW
    assert reviews.record_review(world.squad_id, Verdict.PASS, **EVIDENCE).squad_status is (
        SquadStatus.DONE
    )


def test_a_stale_pending_review_cannot_bypass_recovery_even_with_bad_evidence(
    world: RuntimeWorld, reviews: ReviewRecorder
) -> None:
    run_to_review(world)
    world.remove_file(world.ledger_file("qa"))
    assert "task(s): qa" in pass_rejected_by_revalidation(world, reviews, diff_review="")
    assert world.task("qa").status is TaskStatus.PENDING
    assert world.task("build").status is TaskStatus.DONE, "only the affected work reopens"
    assert squad_status(world) is SquadStatus.RUNNING


def test_a_changed_canonical_spec_at_review_rejects_and_reopens_every_done_task(
    world: RuntimeWorld, reviews: ReviewRecorder
) -> None:
    run_to_review(world)
    touch_canonical(world)
    message = pass_rejected_by_revalidation(world, reviews)
    assert_work_reopened_over_the_canonical_spec(world, message)
    assert world.task("qa").status is TaskStatus.BLOCKED


def test_a_legacy_squad_is_reviewed_without_attestations(
    world: RuntimeWorld, ops: SquadOperations, reviews: ReviewRecorder
) -> None:
    legacy = publish_legacy(world)
    ops.complete_task(legacy, "api", "API done")
    ops.complete_task(legacy, "ui", "UI done")
    world.scheduler_for(legacy).reconcile()
    assert squad_status(world, legacy) is SquadStatus.REVIEW
    outcome = reviews.record_review(legacy, Verdict.PASS, **EVIDENCE)
    assert outcome.squad_status is SquadStatus.DONE


# -- red-team issue 11, finding 5: the canonical file must be the squad's own ---------------------


def move_canonical_outside(world: RuntimeWorld, outside: Path) -> None:
    """An identical copy outside the squad, and squad.json pointing at it."""
    with world.store.transaction(world.squad_id) as tx:
        spec = tx.squad.spec
        assert spec is not None
        world.make_dirs(str(outside))
        copy = str(outside / "spec.v1.json")
        world.write_file(copy, world.read_file(spec.path))
        tx.put_squad(attrs.evolve(tx.squad, spec=attrs.evolve(spec, path=copy)))


def link_spec_dir_elsewhere(world: RuntimeWorld, elsewhere: Path) -> None:
    """``spec/`` replaced by a symbolic link to a directory holding an identical copy."""
    world.link_dir_elsewhere(f"{world.layout().squad_dir}/spec", str(elsewhere))


@pytest.mark.parametrize("swap", ["path-outside", "spec-dir-symlink"])
def test_a_canonical_spec_outside_the_squad_rejects_review_and_reopens_work(
    world: RuntimeWorld, reviews: ReviewRecorder, tmp_path: Path, swap: str
) -> None:
    run_to_review(world)
    if swap == "path-outside":
        move_canonical_outside(world, tmp_path / "outside")
    else:
        link_spec_dir_elsewhere(world, tmp_path / "elsewhere")

    message = pass_rejected_by_revalidation(world, reviews)
    assert_work_reopened_over_the_canonical_spec(world, message)
