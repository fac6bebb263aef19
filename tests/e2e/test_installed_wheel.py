"""Issue 13 items 1 and 6 from an installed wheel, as a user outside the checkout has it: the
demo runs (its files are package data), and ``doctor`` finds the bridge the shim will start
beside that install, with ``pi-squad`` not on ``PATH``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from tests.e2e.real_pi import REPO

pytestmark = pytest.mark.realpi


def uv(*args: str, cwd: Path = REPO) -> None:
    """``uv``, the one that runs this suite (``uv run`` names itself in ``UV``)."""
    executable = os.environ.get("UV") or shutil.which("uv")
    if executable is None:
        pytest.skip("uv is not available to build the wheel")
    done = subprocess.run(
        [executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"uv {' '.join(args)}: {done.stdout}{done.stderr}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with pi-squad's wheel installed; its ``bin`` directory."""
    base = tmp_path_factory.mktemp("wheel")
    uv("build", "--wheel", "--out-dir", str(base / "dist"))
    (wheel,) = (base / "dist").glob("pi_squad-*.whl")
    uv("venv", "--python", sys.executable, str(base / "venv"))
    uv("pip", "install", "--python", str(base / "venv" / "bin" / "python"), str(wheel))
    return base / "venv" / "bin"


def user_environment(tmp_path: Path, runtime: PiRuntime) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_SQUAD", "VIRTUAL_ENV"))}
    env.update(
        HOME=str(tmp_path / "home"),
        PI_SQUAD_RUNTIME_DIR=str(REPO / ".runtime"),
        PATH=os.pathsep.join([str(Path(runtime.node_path).parent), "/usr/bin", "/bin"]),
    )
    return env


def pi_squad(
    installed: Path, tmp_path: Path, runtime: PiRuntime, *args: str
) -> subprocess.CompletedProcess[str]:
    """The installed ``pi-squad ARGS`` as a user outside the checkout runs it."""
    return subprocess.run(
        [str(installed / "pi-squad"), *args],
        env=user_environment(tmp_path, runtime),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_demo_runs_from_an_installed_wheel(
    installed: Path, tmp_path: Path, runtime: PiRuntime
) -> None:
    done = pi_squad(
        installed, tmp_path, runtime, "demo", "--json", "--workspace", str(tmp_path / "demo")
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["status"] == "review"
    assert {t["attestation"] for t in summary["tasks"]} == {"valid"}
    root = tmp_path / "demo" / "root"
    assert summary["next"].startswith(f"export PI_SQUAD_ROOT={root}, then pi-squad report ")
    assert not (tmp_path / "home" / ".pi").exists()


def test_doctor_finds_the_bridge_beside_the_installed_wheel(
    installed: Path, tmp_path: Path, runtime: PiRuntime
) -> None:
    done = pi_squad(installed, tmp_path, runtime, "doctor", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["extension"]["path"].startswith(str(installed.parent / "lib"))
    assert report["bridge"]["ok"] is True, report["bridge"]
    assert report["bridge"]["source"] == "install"
    assert report["bridge"]["argv"][0] == str(installed / "pi-squad")
