"""``doctor`` and the runtime installer against the real Node + Pi runtime (``make runtime``):
extensions that load or do not, the isolation it emits, and the bridge Pi would start."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters.pi_runtime import PI_VERSION, PiRuntime, doctor
from tests.integration.pi_runtime_fakes import DOCTOR_KEYS, ISOLATION_NONE, REPO, executable
from tests.pi_runtime_support import installed_pi_runtime

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the fakes are POSIX shell scripts")
PROBE_EXTENSION = """
export default function (pi) {
  pi.registerTool({
    name: "doctor_probe",
    label: "Doctor probe",
    description: "Answers ok.",
    parameters: { type: "object", properties: {}, additionalProperties: false },
    async execute() { return { content: [{ type: "text", text: "ok" }], details: {} }; },
  });
}
"""


@pytest.fixture(scope="module")
def real_runtime() -> PiRuntime:
    return installed_pi_runtime()


@pytest.mark.realpi
def test_doctor_with_a_tiny_extension(real_runtime: PiRuntime, tmp_path: Path) -> None:
    extension = executable(tmp_path / "probe.js", PROBE_EXTENSION)
    report = doctor(extension)
    assert report["ok"] is True, report
    assert report["node"] == {
        "path": real_runtime.node_path,
        "version": real_runtime.node_version,
        "ok": True,
        "detail": None,
    }
    assert report["pi"]["version"] == PI_VERSION
    assert report["pi"]["source"] == real_runtime.source
    assert report["extension"]["loads"] is True
    assert not (Path.home() / ".pi" / "agent" / "probe.js").exists()


@pytest.mark.realpi
def test_the_doctor_command_prints_and_emits_the_isolation(real_runtime: PiRuntime) -> None:
    del real_runtime
    env = {**os.environ, "PI_SQUAD_ISOLATION": "none"}
    command = [sys.executable, "-m", "entrypoints.cli", "doctor"]
    text = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert text.returncode == 0, text.stderr
    assert "isolation none (disabled by PI_SQUAD_ISOLATION=none)" in text.stdout.splitlines()
    assert text.stdout.splitlines()[-1].startswith("bubblewrap ")
    emitted = subprocess.run(
        [*command, "--json"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    report = json.loads(emitted.stdout)
    assert set(report) == DOCTOR_KEYS
    assert report["ok"] is True
    assert report["isolation"] == ISOLATION_NONE


@pytest.mark.realpi
@pytest.mark.parametrize(
    ("source", "mentioned"),
    [
        ("export default function (pi) { this is not javascript", "Failed to load extension"),
        ("export default function (pi) { throw new Error('boom at load'); }", "boom at load"),
        (
            "export default function (pi) {"
            " pi.on('session_start', async () => { throw new Error('boom at start'); }); }",
            "extension_error in session_start: boom at start",
        ),
    ],
)
def test_doctor_reports_an_extension_that_does_not_load(
    real_runtime: PiRuntime, tmp_path: Path, source: str, mentioned: str
) -> None:
    extension = executable(tmp_path / "broken.js", source)
    report = doctor(extension)
    assert report["ok"] is False
    assert report["pi"]["ok"] is True
    assert report["extension"]["loads"] is False
    assert mentioned in report["extension"]["detail"]


@pytest.mark.realpi
def test_install_runtime_second_run_is_offline_and_fast(
    real_runtime: PiRuntime, tmp_path: Path
) -> None:
    if real_runtime.source != "project":
        pytest.skip("the runtime in use is not the project's")
    # No npm on PATH: a second run must not need it (nor the network).
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("uname", "dirname", "mkdir", "cat", "flock"):
        found = shutil.which(name)
        if found is not None:
            (tools / name).symlink_to(found)
    started = time.monotonic()
    completed = subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(REPO / "scripts" / "install-runtime")],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(tools)},
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert time.monotonic() - started < 10
    assert "already installed" in completed.stdout
    assert f"node: {real_runtime.node_path}" in completed.stdout


@pytest.mark.realpi
def test_doctor_checks_the_bridge_pi_would_start_without_pi_squad_on_path(
    real_runtime: PiRuntime,
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"PI_SQUAD_BRIDGE", "VIRTUAL_ENV"}}
    env["PATH"] = os.pathsep.join([str(Path(real_runtime.node_path).parent), "/usr/bin", "/bin"])
    command = [sys.executable, "-m", "entrypoints.cli", "doctor"]
    found = subprocess.run(
        [*command, "--json"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert found.returncode == 0, found.stdout + found.stderr
    bridge = json.loads(found.stdout)["bridge"]
    assert bridge["ok"] is True, bridge
    assert bridge["source"] == "install"
    assert bridge["argv"][0] == str(REPO / ".venv" / "bin" / "pi-squad")

    env["PI_SQUAD_BRIDGE"] = json.dumps(["/nonexistent/pi-squad", "bridge"])
    broken = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert broken.returncode != 0
    assert "bridge    FAILS: " in broken.stdout
    assert "/nonexistent/pi-squad" in broken.stdout
    assert "fix       PI_SQUAD_BRIDGE is set" in broken.stdout, broken.stdout
