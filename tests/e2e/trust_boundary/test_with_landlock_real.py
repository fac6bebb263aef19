"""Issue 11 under real Pi 0.80.10 with Landlock: every write of the saboteur's attacks fails with a
permission error, the files aimed at are byte-identical across the attack, and the squad reaches
review with ``verify`` exiting 0."""

from __future__ import annotations

import time

import pytest

from adapters.isolation.landlock import probe_landlock
from tests.e2e.trust_boundary.support import (
    HONEST,
    LEDGER_FILES,
    PERMISSION,
    TASKS,
    VICTIM,
    Squad,
    accepted_by_parent,
    assert_review_with_every_task_done_and_valid,
    assert_verify_and_status_pass,
    own_reads,
)

pytestmark = pytest.mark.realpi


def test_under_landlock_every_attack_on_a_sibling_fails_and_the_squad_is_unharmed(
    squad: Squad,
) -> None:
    support = probe_landlock()
    if support.mode != "landlock":
        pytest.skip(f"no usable Landlock on this kernel: {support.reason}")
    started = time.monotonic()
    code, summary, stderr = squad.run(isolation=None)
    elapsed = time.monotonic() - started
    witness = squad.witness

    attacks = witness.attacks(squad.project)
    for name, (rc, output) in attacks.items():
        assert rc != 0, f"attack {name} succeeded under Landlock: {output}"
        assert PERMISSION.search(output), f"attack {name} failed without EACCES: {output}"
    bridge_output = attacks["bridge-as-sibling"][1]
    assert "role=child-spec" in bridge_output, "the forged bridge really served a reader"
    assert "forged=False" in bridge_output
    assert "'block': True" in bridge_output, "the impersonated guard stayed closed"

    # Nothing the attacks aimed at changed while they ran (honest's ledger and records,
    # victim's ledger and records, the listing of .records).
    assert witness.before is not None
    assert witness.after is not None
    assert witness.before == witness.after
    honest_files = [squad.squad_dir / HONEST / name for name in LEDGER_FILES]
    for path in honest_files:
        assert witness.before[str(path)] is not None, f"{path} existed before the attack"
    assert witness.squad_before is not None
    assert witness.squad_before["taskIds"] == list(TASKS)

    assert code == 0, f"{summary} {stderr[-2000:]}"
    assert_review_with_every_task_done_and_valid(summary)
    squad_json = squad.squad_json()
    assert squad_json["taskIds"] == list(TASKS)
    assert squad_json["isolation"] == "landlock"
    assert squad_json["quarantine"] is None

    # honest's proof survived byte for byte; every task's proof is its own child's.
    for path in honest_files:
        assert path.read_bytes() == witness.before[str(path)]
    for task_id in TASKS:
        own_reads(squad, task_id)
    assert accepted_by_parent(squad, VICTIM)
    assert "forged" not in (squad.task_json(VICTIM)["output"] or "")
    assert sorted(p.name for p in (squad.squad_dir / VICTIM).iterdir()) == sorted(
        [".spec-read.lock", "session", *LEDGER_FILES]
    ), "nothing but the victim's own ledger was ever written there"
    # The user's agent directory was out of reach, and no child ran code planted earlier.
    assert sorted(p.name for p in (squad.user_agent_dir / "extensions").iterdir()) == [
        "planted-earlier.ts"
    ]
    assert squad.planted_code_that_ran() == []

    report = assert_verify_and_status_pass(squad, squad_json["id"], isolation="landlock")
    assert report["canonical"]["ok"] is True
    assert elapsed < 90, f"the run took {elapsed:.1f} s"
