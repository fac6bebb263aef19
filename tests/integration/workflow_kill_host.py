"""``pi-squad flow`` (the real command line and container) over the scripted child runtime, for
the test that kills a workflow: run as a program with ``BASE CALL`` (``FlowCli``'s layout under
``BASE``); phase ``a`` answers, phase ``b`` never settles. It prints ``READY`` once phase
``b``'s child started and then waits to be killed."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.fakes.child_runtime import FakeChild
from tests.fakes.flows import ScriptedRuntime, answer
from tests.integration.flow_cli_support import FlowCli


def _started(_child: FakeChild) -> None:
    print("READY", flush=True)


if __name__ == "__main__":
    scripted = ScriptedRuntime(scripts={"phase-a": answer("FIRST-PHASE"), "phase-b": _started})
    cli = FlowCli(Path(sys.argv[1]), scripted)
    sys.exit(cli.run("--call", sys.argv[2], "--json", "--model", "p/m"))
