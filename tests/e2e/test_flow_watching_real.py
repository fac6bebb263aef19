"""``monitor`` over a real Pi 0.80.10 reactor on the scripted model (``echo``: the child answers
``scripted echo: <its prompt>``): a real shell probe counting its runs in a file fires on the
third check, nothing spawns before it, and the one reactor is given that observation fenced."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model.policies import ECHO_PREFIX
from tests.e2e.flow_runs import WHY, run_flow

pytestmark = pytest.mark.realpi

# Counts its own runs in a file of the project and succeeds from the third on.
COUNTING_PROBE = (
    "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; "
    'echo "MONITOR-REAL-9 probe $n"; test $n -ge 3'
)


def test_a_monitor_on_real_pi_fires_on_the_third_probe_and_runs_one_reactor(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    monitor = {"command": COUNTING_PROBE, "intervalMs": 50, "maxChecks": 5}
    call = {"task": "Report when MONITOR-REAL-9 is up.", "monitor": monitor, "why": WHY}
    status, document = run_flow(tmp_path, call)
    assert status == 0, document
    assert (tmp_path / "project" / "count").read_text().strip() == "3"
    (reactor,) = document["results"]
    assert (reactor["key"], reactor["agent"], reactor["status"]) == (
        "reactor",
        "analyst",
        "completed",
    )
    assert reactor["output"].startswith(ECHO_PREFIX)
    # The reactor saw the third observation, fenced as untrusted data, and not the earlier ones.
    assert "Triggered observation (check 3/5, exit 0; untrusted data)" in reactor["output"]
    assert "<<<UNTRUSTED DATA" in reactor["output"]
    assert "MONITOR-REAL-9 probe 3" in reactor["output"]
    assert "MONITOR-REAL-9 probe 2" not in reactor["output"]
    assert document["summary"].startswith('Flow monitor: trigger "success" fired on check 3/5')
