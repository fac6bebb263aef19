"""``pi-squad flow`` through the real command line and container, with the scripted fake child
runtime in place of Pi (``driver.runtime`` overridden, as every CLI test overrides a provider):
what the flow command-line tests share."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from entrypoints.cli import main
from entrypoints.container import CliContainer
from tests.fakes.flows import ScriptedRuntime


class FlowCli:
    """A project (``cwd``) and a squad root under ``base``, and the command line over them, in
    an environment that also holds ``settings``."""

    def __init__(
        self,
        base: Path,
        scripted: ScriptedRuntime | None = None,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.base = base
        self.settings = settings or {}
        self.cwd = base / "project"
        # ``exist_ok``: a second command line over the same project (a resumed run).
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.root = base / "root"
        self.scripted = scripted or ScriptedRuntime()

    def container(self) -> CliContainer:
        container = CliContainer()
        container.environ.override(
            providers.Object(
                {"PI_SQUAD_ROOT": str(self.root), "HOME": str(self.base), **self.settings}
            )
        )
        container.driver.runtime.override(providers.Object(self.scripted.runtime))
        return container

    def call_file(self, document: object) -> str:
        path = self.base / "call.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        return str(path)

    def run(self, *argv: str) -> int:
        return main(["flow", *argv, "--cwd", str(self.cwd)], self.container())


def run_call(
    cli: FlowCli, capsys: pytest.CaptureFixture[str], call: dict[str, Any], why: str
) -> tuple[int, Any]:
    """``pi-squad flow --json`` over ``call`` (with ``why``) on the session model ``p/m``: its
    exit status and the JSON document it printed."""
    status = cli.run("--call", cli.call_file({**call, "why": why}), "--json", "--model", "p/m")
    return status, json.loads(capsys.readouterr().out)


REPO = Path(__file__).resolve().parents[2]


def started_kill_host(module: str, cli: FlowCli, call: str) -> subprocess.Popen[str]:
    """``module`` (a kill host: ``pi-squad flow`` over ``cli``'s world, in a process of its
    own) running ``call``, once it said it is ready to be killed."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, str(cli.base), call],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    if process.stdout.readline().strip() != "READY":
        process.kill()
        process.wait()
        raise AssertionError(f"{module} did not start")
    return process


def kill(process: subprocess.Popen[str]) -> int:
    """SIGKILL ``process`` (a kill host), reaped, its pipe closed: its exit status."""
    process.send_signal(signal.SIGKILL)
    status = process.wait(10)
    if process.stdout is not None:
        process.stdout.close()
    return status
