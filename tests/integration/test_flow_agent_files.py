"""pi-flows' agents and files in a flow: the nine bundled agents, Markdown agent files and
presets in Pi's agent directory and the project's ``.pi``, shadowing and broken files said in
``discoveryIssues`` (never dropped silently); squads do not see them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.catalogue.agent_files import load_agent_catalog
from tests.fakes.flows import answer
from tests.integration.flow_cli_support import FlowCli

WHY = "independent verification"
READ_ONLY = ["read", "grep", "find", "ls"]
# flows-brief §5: each bundled pi-flows agent's tools and tier.
PI_FLOWS_AGENTS: dict[str, tuple[list[str] | None, str, str | None]] = {
    "recon": (READ_ONLY, "fast", None),
    "analyst": (READ_ONLY, "capable", None),
    "strategist": (READ_ONLY, "capable", None),
    "overwatch": ([*READ_ONLY, "bash"], "capable", None),
    "operator": (None, "capable", None),
    "redteam": ([*READ_ONLY, "bash"], "deep", None),
    "controller": ([], "fast", "low"),
    "commander": ([], "capable", None),
    "debrief": ([], "capable", None),
}


@pytest.fixture
def cli(tmp_path: Path) -> FlowCli:
    return FlowCli(tmp_path)


def listing(cli: FlowCli, capsys: pytest.CaptureFixture[str], scope: str = "user") -> Any:
    assert cli.run("--call", cli.call_file({"list": True, "agentScope": scope}), "--json") == 0
    return json.loads(capsys.readouterr().out)


def agent_file(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_nine_pi_flows_agents_are_listed_with_their_tools_and_tier(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = {a["name"]: a for a in listing(cli, capsys)["agents"]}
    for name, (tools, tier, thinking) in PI_FLOWS_AGENTS.items():
        assert (agents[name]["tools"], agents[name]["tier"]) == (tools, tier), name
        assert agents[name]["thinking"] == thinking
        assert agents[name]["source"] == "bundled"
    assert "researcher" in agents, "pi-squad's own agents stay beside them"


def test_a_call_naming_a_pi_flows_agent_runs_on_its_tools(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.scripted.scripts["single"] = answer("found")
    call = cli.call_file({"agent": "recon", "task": "where is main?", "why": WHY})
    assert cli.run("--call", call, "--json", "--model", "prov/m") == 0
    assert json.loads(capsys.readouterr().out)["status"] == "completed"
    (child,) = cli.scripted.runtime.spawned
    assert child.request.tools == tuple(READ_ONLY)
    assert "You are recon" in (child.request.system_prompt or "")


def test_a_user_agent_file_in_pis_agent_directory_shadows_the_bundled_one_and_says_so(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    user_dir = cli.base / ".pi" / "agent" / "flow-agents"  # HOME is the test's directory
    path = agent_file(user_dir, "recon", "---\nname: recon\ndescription: Mine.\n---\nMine.\n")
    document = listing(cli, capsys)
    recon = next(a for a in document["agents"] if a["name"] == "recon")
    assert (recon["source"], recon["description"], recon["tier"]) == ("user", "Mine.", None)
    shadowed = [i for i in document["discoveryIssues"] if "'recon'" in i]
    assert len(shadowed) == 1
    assert "(bundled) is shadowed by the user agent in " + str(path) in shadowed[0]


def test_a_broken_agent_file_is_reported_by_name_and_the_rest_still_load(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    user_dir = cli.base / ".pi" / "agent" / "flow-agents"
    broken = agent_file(user_dir, "broken", "---\nname: broken\ntier: huge\ndescription: x\n---\n")
    no_fence = agent_file(user_dir, "plain", "Just a prompt.\n")
    agent_file(user_dir, "fine", "---\nname: fine\ndescription: Fine.\ntools: read\n---\nOk.\n")
    document = listing(cli, capsys)
    names = [a["name"] for a in document["agents"]]
    assert "fine" in names
    assert not {"broken", "plain"} & set(names)
    issues = document["discoveryIssues"]
    assert any(i.startswith(f"{broken}: ") and "$.tier" in i for i in issues)
    assert (
        f"{no_fence}: not a valid agent file: does not start with a --- front matter line" in issues
    )


def test_project_agent_files_need_the_project_scope(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_file(
        cli.cwd / ".pi" / "flow-agents", "local", "---\nname: local\ndescription: L.\n---\nL."
    )
    assert "local" not in [a["name"] for a in listing(cli, capsys, "user")["agents"]]
    local = next(a for a in listing(cli, capsys, "all")["agents"] if a["name"] == "local")
    assert local["source"] == "project"


def test_pi_flows_preset_directories_are_read_and_a_shadowed_preset_is_reported(
    cli: FlowCli, capsys: pytest.CaptureFixture[str]
) -> None:
    body = '{"agent": "recon", "task": "Scout: {task}"}'
    user_presets = cli.base / ".pi" / "agent" / "flow-presets"
    path = agent_file(user_presets, "scout", f"---\nname: scout\ndescription: Mine.\n---\n{body}\n")
    agent_file(cli.cwd / ".pi" / "flow-presets", "probe", f"---\nname: probe\n---\n{body}\n")
    document = listing(cli, capsys, "all")
    presets = {p["name"]: p for p in document["presets"]}
    assert (presets["scout"]["source"], presets["probe"]["source"]) == ("user", "project")
    assert any(
        "preset 'scout' (bundled) is shadowed by the user preset in " + str(path) in issue
        for issue in document["discoveryIssues"]
    )


def test_a_squads_catalog_has_no_pi_flows_agents(tmp_path: Path) -> None:
    agent_file(
        tmp_path / "repo" / ".pi" / "flow-agents",
        "local",
        "---\nname: local\ndescription: L.\n---\n",
    )
    catalog = load_agent_catalog(squad_root=str(tmp_path / "root"), cwd=str(tmp_path / "repo"))
    assert not set(PI_FLOWS_AGENTS) & set(catalog.enabled_names())
    assert "local" not in catalog.enabled_names()
