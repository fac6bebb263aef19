"""``pi-squad flow`` (the real command line and container) over the scripted child runtime, for
the test that kills it: run as a program with ``BASE CALL``, the squad root ``BASE/root`` and
the project ``BASE/project``; the chain's first step answers, the second never settles. It
prints ``READY`` once the second child started and then waits to be killed."""

from __future__ import annotations

import sys
from pathlib import Path

from dependency_injector import providers

from entrypoints.cli import main
from entrypoints.container import CliContainer
from tests.fakes.child_runtime import FakeChild
from tests.fakes.flows import ScriptedRuntime, answer


def _started(child: FakeChild) -> None:
    print("READY", flush=True)


def run(base: Path, call: str) -> int:
    scripted = ScriptedRuntime(scripts={"step-1": answer("first"), "step-2": _started})
    container = CliContainer()
    container.environ.override(
        providers.Object({"PI_SQUAD_ROOT": str(base / "root"), "HOME": str(base)})
    )
    container.driver.runtime.override(providers.Object(scripted.runtime))
    argv = ["flow", "--call", call, "--cwd", str(base / "project"), "--json", "--model", "p/m"]
    return main(argv, container)


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1]), sys.argv[2]))
