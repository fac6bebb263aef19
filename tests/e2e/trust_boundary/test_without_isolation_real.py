"""Issue 11 under real Pi 0.80.10 with ``PI_SQUAD_ISOLATION=none``: the saboteur's writes land, and
grounding and integrity still refuse everything forged."""

from __future__ import annotations

import json
import time

import pytest

from adapters.scripted_model.policies import SABOTEUR_ATTACKS
from tests.e2e.trust_boundary.support import (
    GROUNDING_ATTACKS,
    HONEST,
    PERMISSION,
    SABOTEUR,
    TASKS,
    VICTIM,
    Squad,
    accepted_by_parent,
    assert_complete_task_refused_as_ungrounded,
    assert_forged_bridge_committed,
    assert_review_with_every_task_done_and_valid,
    assert_verify_and_status_pass,
    own_reads,
)

pytestmark = pytest.mark.realpi


def test_without_isolation_the_same_attacks_land_but_nothing_forged_is_accepted(
    squad: Squad,
) -> None:
    started = time.monotonic()
    code, summary, stderr = squad.run(isolation="none")
    elapsed = time.monotonic() - started
    witness = squad.witness

    attacks = witness.attacks(squad.project)
    for name, (_rc, output) in attacks.items():
        assert not PERMISSION.search(output), f"{name} met a permission error unconfined: {output}"
    landed = set(SABOTEUR_ATTACKS) - {"complete-sibling"}
    assert {name for name in landed if attacks[name][0] == 0} == landed, attacks
    assert_forged_bridge_committed(attacks)
    assert_complete_task_refused_as_ungrounded(attacks)
    assert witness.squad_before is not None
    assert witness.squad_before["taskIds"] == list(TASKS)

    # The destroyed records fail the squad closed; nothing the saboteur wrote was accepted.
    assert code != 0, summary
    error = summary.get("error", {})
    assert error.get("code") == "SQUAD_INTEGRITY" or summary.get("reason") == "quarantined", (
        summary,
        stderr[-2000:],
    )
    assert not (squad.squad_dir / HONEST).exists(), "the unconfined delete really landed"
    victim_attestation = squad.attestation(VICTIM)
    assert victim_attestation is not None
    assert victim_attestation["taskId"] == VICTIM, "the relabelled copy really landed"
    assert squad.observed(VICTIM) == [], "victim never ran: no read of it was ever observed"
    assert not accepted_by_parent(squad, VICTIM)
    for args in (("verify", squad.squad_dir.name, "--json"), ("status", squad.squad_dir.name)):
        refused = squad.cli(*args)
        assert refused.returncode != 0, (args, refused.stdout)
        assert "SQUAD_INTEGRITY" in refused.stdout + refused.stderr, (args, refused.stdout)

    squad_json = squad.squad_json()
    assert squad_json["isolation"] == "none"
    assert elapsed < 90, f"the run took {elapsed:.1f} s"
    assert squad_json["quarantine"] is not None, "recorded whichever read found the gap"
    assert "integrity" in squad_json["quarantine"].lower()


@pytest.mark.parametrize("squad", [",".join(GROUNDING_ATTACKS)], indirect=True)
def test_without_isolation_a_forged_victim_ledger_is_never_accepted_and_victim_rereads(
    squad: Squad,
) -> None:
    """The attacks that leave the task set intact: the squad runs on, and grounding alone keeps
    the forged ledger and the forged ``done`` from counting; the victim earns its own proof."""
    started = time.monotonic()
    code, summary, stderr = squad.run(isolation="none")
    elapsed = time.monotonic() - started
    attacks = squad.witness.attacks(squad.project, GROUNDING_ATTACKS)
    assert {name: rc for name, (rc, _) in attacks.items()} == {
        "bridge-as-sibling": 0,
        "copy-attestation": 0,
        "complete-sibling": 1,
        "edit-sibling-task-json": 0,
        "plant-extension": 0,
    }, attacks
    # Unconfined, the saboteur planted code in the user's agent directory; the victim's Pi,
    # started after it, did not run it (nor the one planted earlier, nor the project's).
    planted = squad.user_agent_dir / "extensions" / f"planted-by-{SABOTEUR}.ts"
    assert planted.exists()
    assert_forged_bridge_committed(attacks)
    assert_complete_task_refused_as_ungrounded(attacks)

    assert code == 0, f"{summary} {stderr[-2000:]}"
    assert_review_with_every_task_done_and_valid(summary)
    # The forged "done" and the forged ledger were each refused as not grounded ...
    history = [
        json.loads(line)
        for line in (squad.squad_dir / ".records" / VICTIM / "messages.jsonl")
        .read_text()
        .splitlines()
    ]
    rejections = [m["text"] for m in history if m["text"].startswith("Completion rejected")]
    assert rejections, "the forged done and the forged ledger were refused"
    assert all("not grounded" in text for text in rejections), rejections
    # ... and the victim was accepted only on reads the parent saw its own child make.
    for task_id in TASKS:
        own_reads(squad, task_id)
    first_spawn = min(o["at"] for o in squad.observed(VICTIM) if o["kind"] == "spawn")
    victim_attestation = squad.attestation(VICTIM)
    assert victim_attestation is not None
    assert all(c["deliveredAt"] >= first_spawn for c in victim_attestation["chunks"])
    assert "forged" not in (squad.task_json(VICTIM)["output"] or "")
    assert squad.planted_code_that_ran() == []

    squad_json = squad.squad_json()
    assert squad_json["isolation"] == "none"
    assert squad_json["quarantine"] is None
    assert_verify_and_status_pass(squad, squad_json["id"], isolation="none")
    assert elapsed < 90, f"the run took {elapsed:.1f} s"
