"""``vote`` over real Pi 0.80.10 children on the scripted model (``echo``: each child answers
``scripted echo: <its prompt>``): two identical bundled ``recon`` voters are each given their
own stance, and the bundled ``debrief`` is given both ballots, fenced, to merge."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model.policies import ECHO_PREFIX
from domain.flows.panel import VOTER_STANCES
from tests.e2e.flow_runs import WHY, run_flow

pytestmark = pytest.mark.realpi


def test_a_vote_on_real_pi_gives_identical_voters_stances_and_the_debrief_both_ballots(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    vote = {"agent": "recon", "count": 2, "debrief": {"agent": "debrief"}}
    call = {"task": "Which file defines VOTE-REAL-5?", "vote": vote, "why": WHY}
    status, document = run_flow(tmp_path, call)
    assert status == 0, document
    results = document["results"]
    assert [(r["key"], r["agent"]) for r in results] == [
        ("voter-1", "recon"),
        ("voter-2", "recon"),
        ("debrief", "debrief"),
    ]
    first, second, merged = (r["output"] for r in results)
    assert first.startswith(ECHO_PREFIX)
    assert VOTER_STANCES[0] in first
    assert VOTER_STANCES[1] in second
    # The debrief was told the task, then each ballot fenced as data, then to merge them.
    assert merged.startswith(ECHO_PREFIX + "Which file defines VOTE-REAL-5?")
    assert merged.count("<<<UNTRUSTED DATA") == 2
    assert "never invent one" in merged
    assert document["summary"].startswith("Flow vote: 2/2 voters succeeded; merged by debrief.")
