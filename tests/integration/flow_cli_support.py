"""``pi-squad flow`` through the real command line and container, with the scripted fake child
runtime in place of Pi (``driver.runtime`` overridden, as every CLI test overrides a provider):
what the flow command-line tests share."""

from __future__ import annotations

import json
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
