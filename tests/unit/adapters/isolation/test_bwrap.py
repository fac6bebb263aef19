"""The bubblewrap layer's command line and its probe (``adapters/isolation/bwrap.py``); the
namespaces themselves on the real kernel: ``tests/integration/test_child_namespaces.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.isolation import bwrap as isolation_bwrap
from adapters.isolation.bwrap import (
    INSTALL_HINT,
    NAMESPACE_OPTIONS,
    Bubblewrap,
    find_bwrap,
    probe_bubblewrap,
    run_mounts,
    socket_mounts,
)


def test_the_options_are_the_isolation_the_docs_promise() -> None:
    options = " ".join(NAMESPACE_OPTIONS)
    for wanted in (
        "--unshare-pid",
        "--unshare-ipc",
        "--die-with-parent",
        "--new-session",
        "--cap-drop ALL",
        "--bind / /",
        "--dev /dev",
        "--proc /proc",
    ):
        assert wanted in options
    assert "--unshare-net" not in options, "a child needs its model"
    assert Bubblewrap("/usr/bin/bwrap").wrap(["pi", "--mode", "rpc"]) == [
        "/usr/bin/bwrap",
        *NAMESPACE_OPTIONS,
        *run_mounts(),
        *socket_mounts(),
        "--",
        "pi",
        "--mode",
        "rpc",
    ]


def test_a_read_only_root_is_mounted_over_with_its_writable_ledger_bound_again() -> None:
    wrapped = Bubblewrap("/usr/bin/bwrap").wrap(
        ["pi"],
        read_only=["/r"],
        writable=["/r/squad/task", "/project", "/r2/elsewhere", "/dev/null"],
    )
    hidden = len(run_mounts()) + len(socket_mounts(keep=["/r", "/r/squad/task", "/project"]))
    mounts = wrapped[1 + len(NAMESPACE_OPTIONS) + hidden : wrapped.index("--")]
    # Later mounts win: the root read-only first, then only the ledger beneath it writable.
    assert mounts == ["--ro-bind", "/r", "/r", "--bind", "/r/squad/task", "/r/squad/task"]


def test_run_is_hidden_but_for_the_dns_configuration_and_granted_paths(tmp_path: Path) -> None:
    outside = tmp_path / "resolv.conf"
    outside.write_text("nameserver 127.0.0.1\n")
    assert run_mounts(resolver=str(outside)) == ["--tmpfs", "/run"]
    granted = run_mounts(
        read_only=["/run/user/0/root"],
        writable=["/run/user/0/project", "/run/user/0/root/ledger", "/tmp/x"],
        resolver=str(outside),
    )
    # A granted path inside /run is bound back; one beneath a read-only root is the caller's.
    assert granted == ["--tmpfs", "/run", "--bind", "/run/user/0/project", "/run/user/0/project"]


@pytest.mark.parametrize("argv", [[], "pi"])
def test_wrap_refuses_an_empty_argv_or_a_bare_string(argv: list[str] | str) -> None:
    with pytest.raises((ValueError, TypeError)):
        Bubblewrap("/usr/bin/bwrap").wrap(argv)


def test_a_missing_bwrap_is_reported_with_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(isolation_bwrap, "BWRAP_CANDIDATES", ())
    probe = probe_bubblewrap({"PATH": str(tmp_path)})
    assert probe.sandbox is None
    assert probe.reason is not None
    assert "not installed" in probe.reason
    assert INSTALL_HINT in probe.reason
    assert "apt-get install bubblewrap" in INSTALL_HINT
    assert "dnf install bubblewrap" in INSTALL_HINT


def test_the_system_bwrap_wins_over_one_on_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A directory on ``PATH`` a child could write (a project's ``.venv/bin``) never chooses
    the bwrap that encloses the next child."""
    system = tmp_path / "usr-bin-bwrap"
    planted = tmp_path / "project-bin" / "bwrap"
    for path in (system, planted):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)
    monkeypatch.setattr(isolation_bwrap, "BWRAP_CANDIDATES", (str(system),))
    assert find_bwrap({"PATH": str(planted.parent)}) == str(system)
    monkeypatch.setattr(isolation_bwrap, "BWRAP_CANDIDATES", ())
    assert find_bwrap({"PATH": str(planted.parent)}) == str(planted)


def test_a_bwrap_that_cannot_run_here_is_not_used_and_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    refusing = tmp_path / "bwrap"
    refusing.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                        "exit 1\n")  # fmt: skip
    refusing.chmod(0o755)
    monkeypatch.setattr(isolation_bwrap, "BWRAP_CANDIDATES", (str(refusing),))
    probe = probe_bubblewrap({})
    assert probe.sandbox is None
    assert probe.reason is not None
    assert "No permissions to create new namespace" in probe.reason


def test_sockets_left_in_tmp_are_covered_and_their_directories_hidden(tmp_path: Path) -> None:
    import socket

    (tmp_path / "tmux-0").mkdir()
    (tmp_path / "project").mkdir()
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "file").write_text("x")
    listening = []
    for path in ("tmux-0/default", "agent.sock", "project/dev.sock"):
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(tmp_path / path))
        listening.append(server)
    try:
        mounts = socket_mounts(keep=[str(tmp_path / "project")], roots=[str(tmp_path)])
    finally:
        for server in listening:
            server.close()
    shown = " ".join(mounts)
    assert f"--ro-bind /dev/null {tmp_path / 'agent.sock'}" in shown  # connecting is refused
    assert f"--tmpfs {tmp_path / 'tmux-0'}" in shown  # the tmux server's directory is empty
    assert str(tmp_path / "project") not in mounts  # a granted directory stays as it is
    assert str(tmp_path / "plain") not in mounts  # no socket in it: nothing to hide
