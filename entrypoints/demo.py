"""The offline demo's files (package data, so it runs from an installed wheel too) and
``pi-squad demo --pi``: the same squad started from inside an interactive Pi, on the bundled
scripted model, so a new user sees the live view, ``/squad`` and the review gate with no
provider account and nothing written to their own Pi configuration."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from adapters.pi_runtime import pi_command, pi_environment
from adapters.scripted_model import ScriptedModelServer, write_models_json
from entrypoints.children import EXTENSION_DIR, located_runtime
from entrypoints.container import CliContainer

DEMO_DIR = Path(__file__).resolve().parent / "demo"
DEMO_SPEC = "demo.spec.json"
DEMO_PROVIDER = "fake"
DEMO_MODEL = "fake-model"


def prepare_demo(workspace: Path) -> tuple[Path, Path, str]:
    """The demo project (spec and agent definitions) and squad root in ``workspace``; returns
    ``(project, root, spec digest)``."""
    project = workspace / "project"
    agents_dir = project / ".pi" / "squad" / "agents"
    agents_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DEMO_DIR / DEMO_SPEC, project / DEMO_SPEC)
    for definition in sorted((DEMO_DIR / "agents").glob("*.json")):
        shutil.copyfile(definition, agents_dir / definition.name)
    digest = (DEMO_DIR / f"{DEMO_SPEC}.sha256").read_text(encoding="utf-8").split()[0]
    return project, workspace / "root", digest


def main_session_markers(digest: str) -> str:
    """What the scripted model's main session does (``adapters.scripted_model.orchestrator``):
    asked to start, call ``squad`` on the demo spec unless the project's squad is still there to
    continue; record a passing review of each squad whose review gate reaches it; say what it
    can do when asked anything else (children follow their own agents' ``scripted-policy``)."""
    arguments = json.dumps({"specFile": DEMO_SPEC, "specSha256": digest})
    return f"scripted-policy: orchestrator\nscripted-args: {arguments}"


def run_demo_inside_pi(container: CliContainer, project: Path, digest: str) -> int:
    """An interactive ``pi`` in the demo project with the package loaded and the scripted model
    answering; returns Pi's exit status. Pi's configuration is a private one in the workspace."""
    environ = container.environ()
    runtime = located_runtime(environ, container.settings.runtime_dir())
    agent_dir = project.parent / "pi-agent"
    with ScriptedModelServer("diligent") as model:
        write_models_json(agent_dir, model.base_url)
        env = pi_environment(environ, agent_dir, runtime)
        env.update(PI_SQUAD_PROVIDER=DEMO_PROVIDER, PI_SQUAD_MODEL=DEMO_MODEL)
        env.pop("PI_SQUAD_BRIDGE", None)  # the shim finds the bridge beside its own install
        env.pop("PI_SQUAD_CHILD", None)
        argv = [
            *pi_command(runtime),
            "--provider",
            DEMO_PROVIDER,
            "--model",
            DEMO_MODEL,
            "--no-session",
            "-e",
            EXTENSION_DIR,
            "--append-system-prompt",
            main_session_markers(digest),
        ]
        print(f"demo project: {project}", flush=True)
        print(
            "Type: start the squad, and press Enter (a scripted model answers: anything else "
            "gets what it can do); /squad shows the squad's state."
        )
        return subprocess.run(argv, env=env, cwd=project, check=False).returncode
