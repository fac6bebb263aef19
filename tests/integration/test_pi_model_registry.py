"""``PiModelRegistry``: the real ``model-registry.mjs`` under the real Pi 0.80.10 lists what a Pi
with that environment can run (``models.json``'s models, and built-in providers only with
credentials), the roster ranks it, and its thinking clamp agrees with pi-ai's own; without a
runtime, on a timeout or a garbled answer, the registry reports a problem and the roster falls
back to ``models.json`` with an issue line; ``pi-squad flow`` asks it headless."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from dependency_injector import providers

from adapters.pi_runtime import PI_PACKAGE, PiRuntime, pi_command, pi_environment
from adapters.pi_runtime.model_files import PiModelFiles
from adapters.pi_runtime.model_registry import PiModelRegistry, pi_package_dir, script_path
from adapters.scripted_model.models_json import write_models_json
from application.flows.flow_config import call_roster
from domain.flows.models import AvailableModels
from domain.flows.roster import derive_roster
from domain.names import THINKING_LEVELS
from entrypoints.children import EXTENSION_DIR
from entrypoints.cli import main
from entrypoints.container import CliContainer
from tests.pi_runtime_support import installed_pi_runtime

SCRIPT = script_path(EXTENSION_DIR)


@pytest.fixture(scope="module")
def real_runtime() -> PiRuntime:
    return installed_pi_runtime()


def _agent_dir(tmp_path: Path) -> Path:
    agent_dir = tmp_path / "agent"
    write_models_json(agent_dir, "http://127.0.0.1:9/v1")
    return agent_dir


def _environment(tmp_path: Path, runtime: PiRuntime, **extra: str) -> dict[str, str]:
    """Nothing of this host's own credentials: only what the test gives."""
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), **extra}
    return pi_environment(base, _agent_dir(tmp_path), runtime)


def _ask(tmp_path: Path, runtime: PiRuntime, **extra: str) -> AvailableModels:
    environ = _environment(tmp_path, runtime, **extra)
    return PiModelRegistry(pi_command(runtime), environ, SCRIPT).available_models()


@pytest.mark.realpi
def test_the_registry_lists_models_json_and_only_the_built_in_providers_with_credentials(
    real_runtime: PiRuntime, tmp_path: Path
) -> None:
    answer = _ask(tmp_path, real_runtime, ANTHROPIC_API_KEY="dummy")
    assert (answer.source, answer.problem, answer.warning) == ("Pi's model registry", None, None)
    refs = {m.ref for m in answer.models}
    assert {"fake/fake-model", "fake/fake-thinker", "fake-anthropic/fake-model"} <= refs
    anthropic = [m for m in answer.models if m.provider == "anthropic"]
    assert anthropic, "ANTHROPIC_API_KEY makes Pi's built-in anthropic models available"
    assert all(m.priced and m.context_window for m in anthropic)
    assert not any(m.provider == "openai" for m in answer.models)  # no key, not available
    thinker = next(m for m in answer.models if m.ref == "fake/fake-thinker")
    assert (thinker.reasoning, thinker.input_price, thinker.output_price) == (True, 3.0, 15.0)
    without = _ask(tmp_path / "bare", real_runtime)
    assert not any(m.provider == "anthropic" for m in without.models)


@pytest.mark.realpi
def test_a_stock_install_derives_fast_and_deep_from_the_built_in_models(
    real_runtime: PiRuntime, tmp_path: Path
) -> None:
    answer = _ask(tmp_path, real_runtime, ANTHROPIC_API_KEY="dummy")
    sonnet = next(m for m in answer.models if m.provider == "anthropic" and "sonnet" in m.id)
    roster = derive_roster(
        PiModelFiles(str(tmp_path / "agent")).model_files(),
        session_model=sonnet.id,
        session_provider="anthropic",
        available=answer,
    )
    fast, capable, deep = roster.bindings
    assert fast.resolved
    assert deep.resolved
    assert fast.model is not None
    assert fast.model.startswith("anthropic/")
    assert capable.model == sonnet.ref
    named = {m.ref: m for m in answer.models}
    assert named[fast.model].price <= sonnet.price
    assert deep.model is not None
    assert (named[deep.model].output_price or 0) >= (sonnet.output_price or 0)
    assert fast.line().endswith("cheapest model this install can run on anthropic")


@pytest.mark.realpi
def test_the_clamp_agrees_with_pi_ai_on_every_model_and_level(
    real_runtime: PiRuntime, tmp_path: Path
) -> None:
    answer = _ask(tmp_path, real_runtime, ANTHROPIC_API_KEY="dummy", OPENAI_API_KEY="dummy")
    package = pi_package_dir(real_runtime.pi_path)
    assert package is not None
    models_js = package.parent / "pi-ai" / "dist" / "models.js"
    if not models_js.is_file():
        pytest.skip(f"pi-ai is not installed beside {PI_PACKAGE}")
    cases = [
        {"reasoning": m.reasoning, "thinkingLevelMap": dict(m.thinking_map), "level": level}
        for m in answer.models
        for level in THINKING_LEVELS
    ]
    program = (
        f"const ai = await import({json.dumps(models_js.as_uri())});"
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(cases.map(c => ai.clampThinkingLevel(c, c.level))));"
    )
    done = subprocess.run(
        [real_runtime.node_path, "--input-type=commonjs", "-e", f"(async()=>{{{program}}})()"],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    expected = json.loads(done.stdout)
    ours = [m.clamp(level) for m in answer.models for level in THINKING_LEVELS]
    assert len(ours) > 50
    assert ours == expected


@pytest.mark.realpi
def test_headless_flow_show_config_ranks_what_pi_can_run(
    real_runtime: PiRuntime, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    environ = _environment(tmp_path, real_runtime, ANTHROPIC_API_KEY="dummy")
    environ["PI_SQUAD_ROOT"] = str(tmp_path / "root")
    container = CliContainer()
    container.environ.override(providers.Object(environ))
    call = tmp_path / "call.json"
    call.write_text('{"showConfig": true}', encoding="utf-8")
    argv = ["flow", "--call", str(call), "--json", "--provider", "fake", "--model", "fake-model"]
    assert main([*argv, "--cwd", str(tmp_path)], container) == 0
    roster = json.loads(capsys.readouterr().out)["modelRoster"]
    # The scripted provider's cheapest model, at the only level it has.
    assert roster[0] == (
        "modelTier.fast: fake/fake-model, thinking off — the session model is already the "
        "cheapest model this install can run on fake, so fast differs by thinking level (off), "
        "not by model"
    )
    assert roster[2].startswith("modelTier.deep: ")
    assert "model this install can run" in roster[2]
    assert not any("modelRoster.issue" in line for line in roster)


# -- without a usable runtime: a problem, never an exception -----------------------------------


def _fake_pi(tmp_path: Path, node_body: str) -> list[str]:
    """A Pi package on disk (its manifest and entry) and a "node" that runs ``node_body``."""
    package = tmp_path / "node_modules" / "@earendil-works" / "pi-coding-agent"
    (package / "dist").mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": PI_PACKAGE}), encoding="utf-8")
    (package / "dist" / "index.js").write_text("", encoding="utf-8")
    (package / "dist" / "cli.js").write_text("", encoding="utf-8")
    node = tmp_path / "node"
    node.write_text(f"#!/bin/sh\n{node_body}\n", encoding="utf-8")
    node.chmod(node.stat().st_mode | stat.S_IXUSR)
    return [str(node), str(package / "dist" / "cli.js")]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("sleep 5", "no answer within 0.5 s"),
        ("echo 'not json'", "no JSON answer (exit status 0)"),
        (r"""printf '%s\n' '{"models": null, "error": "boom\nat 2"}'; exit 1""", "boom"),
        ("exit 3", "no JSON answer (exit status 3)"),
    ],
)
def test_a_registry_that_fails_is_a_problem_and_the_roster_falls_back(
    tmp_path: Path, body: str, problem: str
) -> None:
    registry = PiModelRegistry(_fake_pi(tmp_path, body), {}, SCRIPT, timeout=0.5)
    answer = registry.available_models()
    assert (answer.models, answer.problem) == ((), problem)
    agent_dir = _agent_dir(tmp_path)
    source = PiModelFiles(str(agent_dir), registry)
    roster = call_roster(
        source,
        session_model="fake-thinker",
        session_provider="fake",
        session_thinking=None,
        available=None,
    )
    assert roster.issues[0].startswith(f"Pi's model registry could not be read ({problem})")
    fast = roster.bindings[0]
    assert fast.resolved
    assert "priced model in models.json on fake" in fast.line()


def test_no_runtime_at_all_is_a_problem(tmp_path: Path) -> None:
    entry = tmp_path / "cli.js"
    missing = PiModelRegistry([str(tmp_path / "node"), str(entry)], {}, SCRIPT)
    assert missing.available_models().problem == f"no {PI_PACKAGE} package around {entry}"
    command = _fake_pi(tmp_path, "true")
    os.remove(command[0])
    problem = PiModelRegistry(command, {}, SCRIPT).available_models().problem
    assert problem is not None
    assert problem.startswith("cannot run ")
