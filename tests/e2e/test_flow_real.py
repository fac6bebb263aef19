"""``pi-squad flow`` over real Pi 0.80.10 children and the scripted model (``echo`` policy:
the child answers ``scripted echo: <its prompt>``). Skipped without the project runtime."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from dependency_injector import providers

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer, write_models_json
from adapters.scripted_model.models_json import MODEL_ID, PROVIDER
from adapters.scripted_model.policies import ECHO_PREFIX
from entrypoints.cli import main
from entrypoints.container import CliContainer

pytestmark = pytest.mark.realpi


def test_a_single_flow_runs_one_real_child_and_reports_its_answer(
    tmp_path: Path, runtime: PiRuntime, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent_dir = tmp_path / "pi-agent"
    call = tmp_path / "call.json"
    call.write_text(
        json.dumps({"agent": "researcher", "task": "say FLOW-REAL-42", "why": "e2e proof"})
    )
    environ = {
        k: v for k, v in os.environ.items() if k not in {"PI_SQUAD_ROOT", "PI_CODING_AGENT_DIR"}
    }
    environ.update(PI_SQUAD_ROOT=str(tmp_path / "root"), HOME=str(tmp_path / "home"))
    with ScriptedModelServer("echo") as model:
        write_models_json(agent_dir, model.base_url)
        container = CliContainer()
        container.environ.override(providers.Object(environ))
        container.driver.agent_dir.override(providers.Object(str(agent_dir)))
        argv = ["flow", "--call", str(call), "--cwd", str(project), "--json"]
        status = main([*argv, "--provider", PROVIDER, "--model", MODEL_ID], container)
    document = json.loads(capsys.readouterr().out)
    assert status == 0, document
    assert (document["mode"], document["status"]) == ("single", "completed")
    (result,) = document["results"]
    assert result["output"].startswith(ECHO_PREFIX)
    assert "FLOW-REAL-42" in result["output"]
    assert result["usage"]["turns"] >= 1
    # Each run keeps its own Pi session under the flow's directory in the squad root.
    sessions = list((tmp_path / "root" / ".flows" / document["flowId"] / "single").iterdir())
    assert sessions
