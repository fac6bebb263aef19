"""A process that exits while its children still run (a driver returns once its squad stopped,
its last child still in its exit grace) first stops them and removes their prompt files and
private temporary directories (``adapters/pi_rpc/exit_cleanup.py``).

The driver here is a small Python program over ``PiRpcRuntime`` and the stand-in ``pi``
(tests/fakes/fake_pi_executable.py); the confinement is the recording fake, so the test needs
no kernel feature.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.fakes import fake_pi_executable as fake

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX processes and /proc")

REPO = Path(__file__).resolve().parents[2]
DRIVER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from adapters.pi_rpc import PiRpcRuntime
    from application.ports import Confinement, NewSession, SpawnRequest
    from tests.fakes.isolation import FakeIsolation

    fake, temp, work, mode = sys.argv[1:]
    work = Path(work)
    runtime = PiRpcRuntime(
        [sys.executable, fake],
        {"FAKE_PI_MODE": mode, "PI_CODING_AGENT_DIR": str(work / "agent")},
        None,
        provider="fake",
        temp_dir=temp,
        settle_exit_grace=30.0,
        kill_grace=1.0,
        isolation=FakeIsolation(),
    )
    ledger = work / "root" / "sq1" / "t1"
    ledger.mkdir(parents=True)
    (work / "agent").mkdir()
    (work / "agent" / "auth.json").write_text("{}")
    request = SpawnRequest(
        squad_id="sq1", task_id="t1", cwd=str(work / "project"),
        session=NewSession(str(ledger / "session")), system_prompt="prompt",
        first_prompt="Do the task.", environment={},
        confinement=Confinement(str(work / "root"), str(ledger), str(work / "project")),
    )
    child = runtime.spawn(request, lambda event: None)
    print(json.dumps({"pid": child.pid}), flush=True)
    """
)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.mark.parametrize("mode", ["settle", "linger"])
def test_exiting_stops_every_child_and_leaves_none_of_its_files(tmp_path: Path, mode: str) -> None:
    """``settle``: Pi ends once stdin closes; ``linger``: it would not, and is terminated."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    (tmp_path / "project").mkdir()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, fake.__file__, str(temp), str(tmp_path), mode],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    pid = json.loads(done.stdout.splitlines()[-1])["pid"]
    assert time.monotonic() - started < 20, "not the 30 s exit grace of a settled child"
    assert not alive(pid), "the child outlived the process that started it"
    assert sorted(p.name for p in temp.iterdir()) == [], "no prompt file, no private directory"
