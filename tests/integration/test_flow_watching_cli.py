"""``dossier`` and ``monitor`` through ``pi-squad flow`` with the bundled pi-flows agents, the
scripted fake child runtime and the real shell probe: a call shaped as pi-flows documents it runs
unchanged, a monitor spawns nothing until its probe fires, and what cannot settle exits 1 naming
its code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.child_runtime import FakeChild
from tests.fakes.flows import answer
from tests.integration.flow_cli_support import FlowCli, run_call

WHY = "independent verification"
# A probe that counts its own runs in a file and succeeds from the third on.
COUNTING_PROBE = (
    "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; "
    'echo "probe $n"; test $n -ge 3'
)


@pytest.fixture
def cli(tmp_path: Path) -> FlowCli:
    return FlowCli(tmp_path)


def crashed(child: FakeChild) -> None:
    child.exit(1)


def test_a_dossier_extracts_each_section_then_the_debrief_reconciles_them(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["section-1"] = answer("parser.py:40 drops `#` lines")
    cli.scripted.scripts["section-2"] = answer("issue 12 reports lost comments")
    cli.scripted.scripts["debrief"] = answer("Finding: the tokenizer drops comments.")
    call = {
        "task": "Why does the parser drop comments?",
        "dossier": {
            "sections": [
                {"agent": "recon", "task": "Read src/parser.py"},
                {"agent": "recon", "task": "Read the issue tracker export"},
            ]
        },
    }
    status, document = run_call(cli, capsys, call, WHY)
    assert status == 0
    assert (document["mode"], document["status"]) == ("dossier", "completed")
    assert [(r["key"], r["agent"]) for r in document["results"]] == [
        ("section-1", "recon"),
        ("section-2", "recon"),
        ("debrief", "debrief"),
    ]
    debrief = cli.scripted.runtime.spawned[-1].request.first_prompt
    assert "parser.py:40 drops `#` lines" in debrief
    assert "issue 12 reports lost comments" in debrief


def test_a_dossier_left_with_one_section_exits_1_without_a_debrief(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["section-2"] = crashed
    call = {
        "task": "Why?",
        "dossier": {"sections": [{"agent": "recon", "task": "a"}, {"agent": "recon", "task": "b"}]},
    }
    status, document = run_call(cli, capsys, call, WHY)
    assert status == 1
    assert document["results"][-1]["error"]["code"] == "DOSSIER_TOO_FEW_SECTIONS"
    # The sections run at once, so their spawn order is the scheduler's; no debrief follows them.
    assert sorted(child.task_id for child in cli.scripted.runtime.spawned) == [
        "section-1",
        "section-2",
    ]


def test_a_monitor_probes_until_the_third_check_fires_then_runs_one_reactor(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["reactor"] = answer("The service came up on the third check.")
    call = {
        "task": "Tell me when the service is up.",
        "monitor": {"command": COUNTING_PROBE, "intervalMs": 10},
    }
    status, document = run_call(cli, capsys, call, WHY)
    assert status == 0
    assert (cli.cwd / "count").read_text().strip() == "3"
    assert [(r["key"], r["agent"]) for r in document["results"]] == [("reactor", "analyst")]
    assert document["summary"].startswith('Flow monitor: trigger "success" fired on check 3/6')
    (reactor,) = cli.scripted.runtime.spawned
    assert "probe 3" in reactor.request.first_prompt
    assert "probe 2" not in reactor.request.first_prompt


def test_a_monitor_that_never_fires_exits_1_with_its_observations_and_no_child(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {
        "task": "Wait for the deploy.",
        "monitor": {"command": "echo still deploying; exit 3", "maxChecks": 2, "intervalMs": 10},
    }
    status, document = run_call(cli, capsys, call, WHY)
    assert status == 1
    (result,) = document["results"]
    assert result["error"]["code"] == "MONITOR_NOT_TRIGGERED"
    assert result["output"] == (
        "check 1: exit 3\nstill deploying\n\ncheck 2: exit 3\nstill deploying"
    )
    assert cli.scripted.runtime.spawned == []


def test_a_monitor_with_a_javascript_only_pattern_is_refused_before_any_probe(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {
        "task": "t",
        "monitor": {"command": "touch probed", "trigger": "match", "pattern": "(?<n>up)"},
    }
    status, document = run_call(cli, capsys, call, WHY)
    assert status == 1
    assert (document["error"]["code"], document["error"]["path"]) == (
        "MONITOR_INVALID",
        "$.monitor.pattern",
    )
    assert not (cli.cwd / "probed").exists()
    assert cli.scripted.runtime.spawned == []
