"""``pi-squad review`` in a subprocess: a pass accepts the squad, a fail keeps it in review,
refusals and usage errors, and a tampered squad reopened."""

from __future__ import annotations

from domain.squad.model import SquadStatus, TaskStatus
from tests.integration.cli_runtime.support import EVIDENCE_ARGS, cli, error, ok
from tests.integration.cli_support import Sandbox
from tests.integration.ops_support import run_to_review, squad_status
from tests.runtime_world import RuntimeWorld


def test_review_pass_prints_one_json_object_and_accepts_the_squad(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    run_to_review(world)
    document = ok(
        cli(sandbox, world, "review", world.squad_id, "--verdict", "pass", *EVIDENCE_ARGS, "--json")
    )
    assert set(document) == {"squadId", "verdict", "status", "review", "result"}
    assert document["verdict"] == "pass"
    assert document["status"] == "done"
    assert document["review"]["status"] == "passed"
    assert document["review"]["issues"] == []
    assert squad_status(world) is SquadStatus.DONE


def test_review_fail_keeps_the_squad_in_review(sandbox: Sandbox, world: RuntimeWorld) -> None:
    run_to_review(world)
    document = ok(
        cli(
            sandbox,
            world,
            "review",
            world.squad_id,
            "--verdict",
            "fail",
            *EVIDENCE_ARGS,
            "--issue",
            "the parser breaks",
            "--json",
        )
    )
    assert document["status"] == "review"
    assert document["review"]["status"] == "failed"
    assert document["review"]["issues"] == ["the parser breaks"]
    again = cli(
        sandbox, world, "review", world.squad_id, "--verdict", "pass", *EVIDENCE_ARGS, "--json"
    )
    assert "cannot be overwritten" in error(again, "OPERATION_REFUSED")


def test_review_refusals_and_usage_errors(sandbox: Sandbox, world: RuntimeWorld) -> None:
    squad = world.squad_id
    error(
        cli(sandbox, world, "review", squad, "--verdict", "pass", *EVIDENCE_ARGS, "--json"),
        "OPERATION_REFUSED",
    )
    run_to_review(world)
    error(cli(sandbox, world, "review", squad, "--verdict", "pass", "--json"), "REVIEW_INVALID")
    error(
        cli(sandbox, world, "review", squad, "--verdict", "fail", *EVIDENCE_ARGS, "--json"),
        "REVIEW_INVALID",
    )
    error(
        cli(sandbox, world, "review", squad, "--verdict", "great", *EVIDENCE_ARGS, "--json"),
        "USAGE",
        exit_code=2,
    )
    error(cli(sandbox, world, "review", squad, "--json"), "USAGE", exit_code=2)
    assert squad_status(world) is SquadStatus.REVIEW


def test_review_of_a_tampered_squad_is_rejected_and_reopens_work(
    sandbox: Sandbox, world: RuntimeWorld
) -> None:
    run_to_review(world)
    world.attestation_path("build").unlink()
    message = error(
        cli(
            sandbox, world, "review", world.squad_id, "--verdict", "pass", *EVIDENCE_ARGS, "--json"
        ),
        "ATTESTATION_INVALID",
    )
    assert "task(s): build" in message
    assert "Work was reopened." in message
    assert squad_status(world) is SquadStatus.RUNNING
    assert world.task("build").status is TaskStatus.PENDING
    assert world.task("qa").status is TaskStatus.BLOCKED
