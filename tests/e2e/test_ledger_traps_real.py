"""Issue 28 under real Pi 0.80.10: a child lays traps for the parent in its own ledger.

``pi-squad run`` drives ``tamperer -> honest`` on the scripted model. ``tamperer``'s child
(``adapters.scripted_model.ledger_saboteur``) reads every chunk, then with one ``bash`` call
gives its attestation a call id the parent never saw (so settlement sets its ledger aside under
the task lock) and replaces its ``.spec-read.lock`` by a FIFO, or by a symbolic link to a file
outside every grant. Its ledger is its own to write, Landlock or not.

Before: the FIFO froze the driver for ever in ``open(2)`` (the run never ended); the link had the
unconfined parent create the file it points to. Now: the run ends in review with both tasks
done, ``tamperer`` accepted only after its next child read everything again, the rejection says
why, the child's entry is kept aside for audit, nothing exists at the link's target, and
``verify`` passes.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters.isolation.landlock import probe_landlock
from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer
from adapters.scripted_model.ledger_saboteur import (
    TARGET_MARKER,
    TRAP_MARKER,
    TRAP_PREFIX,
    ledger_saboteur,
)
from tests.e2e.real_pi import RealPiWorld, agents_spec, squad_agent

pytestmark = pytest.mark.realpi

TAMPERER, HONEST = "tamperer", "honest"
TASKS = (TAMPERER, HONEST)
RUN_TIMEOUT = 150.0
LOCK = ".spec-read.lock"


def spec_bytes() -> bytes:
    return agents_spec(TASKS, chained=True, goal="Ship it.")


def agent_definition(name: str, markers: str) -> dict[str, Any]:
    return squad_agent(name, markers, "the ledger-trap test")


@attrs.define
class Squad(RealPiWorld):
    kind: str = "fifo"

    @property
    def target(self) -> Path:
        """Where the symbolic link points: a directory no child may write."""
        return self.base / "outside" / "created-through-the-lock"

    def run(self) -> tuple[int, dict[str, Any], str, float]:
        env = self.user_environment()
        if probe_landlock().mode != "landlock":
            env["PI_SQUAD_ISOLATION"] = "none"
        started = time.monotonic()
        try:
            done = self.run_squad(self.project / "squad-spec.json", env, RUN_TIMEOUT)
        except subprocess.TimeoutExpired as expired:
            pytest.fail(f"the run never ended (driver frozen?): {expired.stderr!r}"[-3000:])
        return done.returncode, done.summary, done.stderr, time.monotonic() - started

    @property
    def squad_dir(self) -> Path:
        (squad,) = [p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")]
        return squad

    def history(self, task_id: str) -> list[dict[str, Any]]:
        path = self.squad_dir / ".records" / task_id / "messages.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(params=["fifo", "symlink"])
def squad(request: pytest.FixtureRequest, tmp_path: Path, runtime: PiRuntime) -> Iterator[Squad]:
    policies = {"ledger-saboteur": ledger_saboteur}
    with ScriptedModelServer("diligent", policies=policies) as model:
        built = Squad(base=tmp_path, runtime=runtime, model=model, kind=request.param)
        built.write_models()
        (tmp_path / "home").mkdir()
        built.target.parent.mkdir()
        built.agents.mkdir(parents=True)
        markers = {
            TAMPERER: "\n".join(
                [
                    "scripted-policy: ledger-saboteur",
                    f"{TRAP_MARKER}: {built.kind}",
                    f"{TARGET_MARKER}: {built.target}",
                ]
            ),
            HONEST: "scripted-policy: diligent",
        }
        for name, marker in markers.items():
            (built.agents / f"{name}.json").write_text(json.dumps(agent_definition(name, marker)))
        (built.project / "squad-spec.json").write_bytes(spec_bytes())
        yield built


def test_a_trapped_task_lock_neither_freezes_nor_redirects_the_parent(squad: Squad) -> None:
    code, summary, stderr, elapsed = squad.run()
    assert code == 0, f"{summary} {stderr[-2000:]}"
    assert summary["status"] == "review", summary
    assert {t["taskId"]: (t["status"], t["attestation"]) for t in summary["tasks"]} == (
        dict.fromkeys(TASKS, ("done", "valid"))
    ), summary

    # The trap was really laid, by the child, in its own ledger ...
    history = squad.history(TAMPERER)
    texts = [m["text"] for m in history]
    traps = [line for text in texts for line in text.splitlines() if line.startswith(TRAP_PREFIX)]
    assert f"{TRAP_PREFIX}unground-attestation: rc=0" in " ".join(traps), texts
    assert f"{TRAP_PREFIX}lock-{squad.kind}: rc=0" in " ".join(traps), texts
    # ... the parent refused it, said so, and kept what the child left for audit ...
    rejections = [t for t in texts if t.startswith("Completion rejected")]
    assert len(rejections) == 1, rejections
    shown = "a FIFO" if squad.kind == "fifo" else "a symbolic link"
    assert f"its read lock {LOCK} was refused (the lock file is {shown}" in rejections[0]
    ledger = squad.squad_dir / TAMPERER
    (unsafe,) = ledger.glob(f"{LOCK}.unsafe-*")
    kind = os.lstat(unsafe).st_mode
    assert stat.S_ISFIFO(kind) if squad.kind == "fifo" else stat.S_ISLNK(kind)
    assert stat.S_ISREG(os.lstat(ledger / LOCK).st_mode)
    # ... never created anything through the link ...
    assert not squad.target.exists()
    assert list(squad.target.parent.iterdir()) == []
    # ... and accepted the task only on what its next child read again.
    assert len([m for m in history if m["type"] == "done"]) == 1

    verified = squad.cli("verify", squad.squad_dir.name, "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    status = squad.cli("status", squad.squad_dir.name, "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    assert elapsed < 120, f"the run took {elapsed:.1f} s"
