"""What the real-Pi end-to-end tests share: where the package is, the command line that runs Pi
on the scripted model, the directories and CLI of a squad driven from a test, and the squads of
test-made agents ``pi-squad run`` drives as a user would."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from adapters.pi_runtime import PiRuntime, pi_command, pi_environment
from adapters.scripted_model import ScriptedModelServer, write_models_json
from domain.child_environment import ALL_CHILD_VARIABLES
from tests.builders import encode, spec_document, task
from tests.squads import multibyte_text

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "entrypoints" / "pi"
DEMO = REPO / "entrypoints" / "demo"
DEMO_SPEC = "demo.spec.json"
CLI = (sys.executable, "-m", "entrypoints.cli")
# Generous: a CLI call takes seconds; the bound only turns a hang into a failure.
CLI_TIMEOUT_SECONDS = 120.0


def scripted_rpc_argv(
    runtime: PiRuntime, *extra: str, session: Sequence[str] = ("--no-session",)
) -> list[str]:
    """``pi --mode rpc`` on the scripted model (provider ``fake``, model ``fake-model``)."""
    return [
        *pi_command(runtime),
        "--mode",
        "rpc",
        *session,
        "--provider",
        "fake",
        "--model",
        "fake-model",
        *extra,
    ]


def scripted_interactive_argv(runtime: PiRuntime, markers: str) -> list[str]:
    """An interactive ``pi`` (for a terminal) on the scripted model, this package loaded and
    ``markers`` appended to its system prompt (what steers the scripted model)."""
    return [
        *pi_command(runtime),
        "--provider",
        "fake",
        "--model",
        "fake-model",
        "--no-session",
        "-e",
        str(EXTENSION),
        "--append-system-prompt",
        markers,
    ]


@attrs.frozen
class SquadRun:
    """What a ``pi-squad run --json`` ended with: its exit code, the summary it printed last
    (empty when it printed none) and its output."""

    returncode: int
    summary: dict[str, Any]
    stdout: str
    stderr: str


@attrs.define
class RealPiWorld:
    """A test's directory, Pi runtime and scripted model: Pi's agent directory under ``base``,
    the project it works in and the squad root the CLI and the package use."""

    base: Path
    runtime: PiRuntime
    model: ScriptedModelServer

    @property
    def project(self) -> Path:
        return self.base / "project"

    @property
    def root(self) -> Path:
        return self.base / "root"

    @property
    def agents(self) -> Path:
        """The project's squad agent definitions."""
        return self.project / ".pi" / "squad" / "agents"

    def write_models(self) -> None:
        """Points Pi's agent directory at the scripted model."""
        write_models_json(self.base / "agent", self.model.base_url)

    def pi_environment(self) -> dict[str, str]:
        """This process's environment with Pi's agent directory and runtime set."""
        return pi_environment(os.environ, self.base / "agent", self.runtime)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``pi-squad ARGS`` on this world's squad root."""
        return subprocess.run(
            [*CLI, *args],
            env={**os.environ, "PI_SQUAD_ROOT": str(self.root)},
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_SECONDS,
            check=False,
        )

    def user_environment(self, *dropped: str) -> dict[str, str]:
        """The environment a user runs ``pi-squad`` in: Pi's agent directory and runtime, this
        world's squad root and home; no child's variables, no isolation setting, nor
        ``dropped``."""
        env = self.pi_environment()
        isolation = ("PI_SQUAD_ISOLATION", "PI_SQUAD_REQUIRE_ISOLATION")
        for name in (*ALL_CHILD_VARIABLES, *isolation, *dropped):
            env.pop(name, None)
        env.update(PI_SQUAD_ROOT=str(self.root), HOME=str(self.base / "home"))
        return env

    def run_squad(self, spec: Path, env: Mapping[str, str], timeout: float) -> SquadRun:
        """``pi-squad run --json`` of ``spec`` in the project, in ``env``."""
        digest = hashlib.sha256(spec.read_bytes()).hexdigest()
        done = subprocess.run(
            run_argv(spec, digest, self.project, "--json"),
            env=dict(env),
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        summary = json.loads(lines[-1]) if lines else {}
        return SquadRun(done.returncode, summary, done.stdout, done.stderr)

    def stage_demo(self, policy: str = "diligent") -> str:
        """The bundled demo spec and agents in the project, the agents on ``policy``; the
        spec's digest."""
        self.agents.mkdir(parents=True, exist_ok=True)
        for definition in (DEMO / "agents").glob("*.json"):
            document = json.loads(definition.read_text(encoding="utf-8"))
            document["prompt"] = document["prompt"].replace(
                "scripted-policy: diligent", f"scripted-policy: {policy}"
            )
            (self.agents / definition.name).write_text(json.dumps(document), encoding="utf-8")
        shutil.copyfile(DEMO / DEMO_SPEC, self.project / DEMO_SPEC)
        return (DEMO / f"{DEMO_SPEC}.sha256").read_text(encoding="utf-8").split()[0]


World = TypeVar("World", bound=RealPiWorld)


def demo_world(
    kind: type[World], base: Path, runtime: PiRuntime, *, policy: str = "diligent"
) -> Iterator[World]:
    """A world of ``kind`` on the scripted model with the demo staged (a fixture's body)."""
    with ScriptedModelServer("diligent") as model:
        world = kind(base=base, runtime=runtime, model=model)
        world.write_models()
        world.stage_demo(policy)
        yield world


def run_argv(spec: Path, digest: str, cwd: Path, *extra: str) -> list[str]:
    """``pi-squad run`` of ``spec`` on the scripted model."""
    return [
        *CLI,
        "run",
        "--spec-file",
        str(spec),
        "--spec-sha256",
        digest,
        "--cwd",
        str(cwd),
        "--provider",
        "fake",
        "--model",
        "fake-model",
        *extra,
    ]


def isolation_settings(isolation: str | None) -> dict[str, str]:
    """``None``: the run requires a child isolation (Landlock or bubblewrap); otherwise
    ``PI_SQUAD_ISOLATION`` is ``isolation``."""
    if isolation is None:
        return {"PI_SQUAD_REQUIRE_ISOLATION": "1"}
    return {"PI_SQUAD_ISOLATION": isolation}


def squad_agent(name: str, markers: str, purpose: str) -> dict[str, Any]:
    """The definition of agent ``name`` of ``purpose``'s squad, its prompt ending in the
    scripted model's ``markers``."""
    return {
        "name": name,
        "role": f"{name} engineer",
        "description": f"The {name} agent of {purpose}.",
        "model": None,
        "thinking": None,
        "tools": None,
        "tags": ["test"],
        "prompt": f"You are the squad's {name} engineer. Read the whole spec first.\n{markers}",
    }


def agents_spec(
    names: Sequence[str],
    *,
    chained: bool,
    goal: str = "Ship a tested feature.",
    text_bytes: int = 30_000,
    concurrency: int = 2,
) -> bytes:
    """A spec of one task per name on the agent of its name, each depending on the one before
    when ``chained``, with ``text_bytes`` of multibyte description each."""
    tasks = [
        task(
            name,
            agent=name,
            depends=[names[i - 1]] if chained and i else [],
            description=multibyte_text(text_bytes),
        )
        for i, name in enumerate(names)
    ]
    agents = {name: {"model": None, "thinking": None} for name in names}
    config = {"maxConcurrency": concurrency, "autoUnblock": True, "maxRetries": 1}
    return encode(spec_document(goal=goal, tasks=tasks, agents=agents, config=config))
