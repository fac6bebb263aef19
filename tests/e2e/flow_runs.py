"""``pi-squad flow --json`` run in this process over real Pi 0.80.10 children on the scripted
model: what the end-to-end flow tests share."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

from dependency_injector import providers

from adapters.scripted_model import ScriptedModelServer, write_models_json
from adapters.scripted_model.models_json import MODEL_ID, PROVIDER
from entrypoints.cli import main
from entrypoints.container import CliContainer

WHY = "e2e proof"


def run_flow(
    tmp_path: Path,
    call: dict[str, Any],
    policy: str = "echo",
    *,
    model_server: ScriptedModelServer | None = None,
    provider: str = PROVIDER,
    model: str = MODEL_ID,
    **extra_env: str,
) -> tuple[int, dict[str, Any]]:
    """``pi-squad flow --json`` in this process, its children real Pi on the scripted model
    (``policy``: its default policy, unless ``model_server`` is given; ``provider``/``model``:
    the model the flow runs; ``extra_env``: more environment for the run)."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    agent_dir = tmp_path / "pi-agent"
    call_file = tmp_path / "call.json"
    call_file.write_text(json.dumps(call))
    environ = {
        k: v for k, v in os.environ.items() if k not in {"PI_SQUAD_ROOT", "PI_CODING_AGENT_DIR"}
    }
    environ.update(PI_SQUAD_ROOT=str(tmp_path / "root"), HOME=str(tmp_path / "home"), **extra_env)
    out = io.StringIO()
    with contextlib.ExitStack() as stack:
        server = model_server or stack.enter_context(ScriptedModelServer(policy))
        stack.enter_context(contextlib.redirect_stdout(out))
        write_models_json(agent_dir, server.base_url)
        container = CliContainer()
        container.environ.override(providers.Object(environ))
        container.driver.agent_dir.override(providers.Object(str(agent_dir)))
        argv = ["flow", "--call", str(call_file), "--cwd", str(project), "--json"]
        status = main([*argv, "--provider", provider, "--model", model], container)
    document: dict[str, Any] = json.loads(out.getvalue())
    return status, document


def three_part_call(concurrency: int, **limits: object) -> dict[str, Any]:
    """Three researchers on parts ``P0``..``P2``, with read-only tools (the bundled agents'
    defaults can write, ``SHARED_WRITE_CWD``) and sized flow-wide (``PARALLEL_SIZING_REQUIRED``:
    tier ``capable`` is the session's model), at most ``concurrency`` at once."""
    tasks = [{"agent": "researcher", "task": f"part P{i}"} for i in range(3)]
    call = {"tasks": tasks, "why": WHY, "concurrency": concurrency, "tools": "read,grep,find,ls"}
    return call | {"tier": "capable"} | limits
