"""What the real-Pi end-to-end tests share: where the package is, the command line that runs Pi
on the scripted model, and the directories and CLI of a squad driven from a test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import attrs

from adapters.pi_runtime import PiRuntime, pi_command, pi_environment
from adapters.scripted_model import ScriptedModelServer, write_models_json

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
