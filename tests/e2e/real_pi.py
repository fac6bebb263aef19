"""What the real-Pi end-to-end tests share: where the package is, the command line that runs Pi
on the scripted model, and the directories and CLI of a squad driven from a test."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from adapters.pi_runtime import PiRuntime, pi_command, pi_environment
from adapters.scripted_model import ScriptedModelServer, write_models_json

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "entrypoints" / "pi"
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
