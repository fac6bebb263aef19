"""A delegated worker's read allowlist: what the host computes (``worker_readable``), how it
reaches the Landlock wrapper (``--read``), and that squad children keep unrestricted reads."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from adapters.delegation import workers
from adapters.delegation.workers import PiWorkerSetup
from adapters.isolation import landlock_exec
from adapters.isolation.confinement import ConfinementRefused, confined_launch, remove_scratch
from adapters.isolation.landlock import PROBED, LandlockIsolation
from adapters.isolation.readable import worker_readable
from application.ports import Confinement, IsolationSupport, WorkerLease
from domain.isolation import ProtectedPath
from entrypoints.concerns import delegation
from tests.fakes.isolation import FakeIsolation

LANDLOCK = IsolationSupport(mode="landlock", abi=7, reason=None)


def code(*paths: Path) -> list[ProtectedPath]:
    return [ProtectedPath(str(path), "code", "remedy") for path in paths]


def test_the_allowlist_is_the_existing_system_paths_the_resolver_and_the_code(
    tmp_path: Path,
) -> None:
    usr, run, venv = tmp_path / "usr", tmp_path / "run" / "resolve", tmp_path / "venv"
    for directory in (usr, run, venv):
        directory.mkdir(parents=True)
    (tmp_path / "lib").symlink_to(usr)  # /lib -> /usr/lib on merged-/usr systems
    (run / "stub-resolv.conf").write_text("nameserver 127.0.0.53\n")
    resolver = tmp_path / "resolv.conf"
    resolver.symlink_to(run / "stub-resolv.conf")
    readable = worker_readable(
        code(venv, usr),
        system=[str(usr), str(tmp_path / "lib"), str(tmp_path / "lib64")],
        resolver=str(resolver),
        python=[str(venv), str(tmp_path / "base")],
    )
    # Resolved as the kernel resolves a rule's path, each once; a missing one left out.
    assert readable == (str(usr), str(venv), str(run))


def test_the_real_allowlist_names_the_system_and_python_never_the_home() -> None:
    readable = worker_readable(code())
    assert {"/usr", "/etc", "/proc", "/dev", os.path.realpath(sys.base_prefix)} <= set(readable)
    home = os.path.realpath(os.path.expanduser("~"))
    # The Python may live beneath the home (pyenv, uv), the home itself is never granted.
    assert not any(os.path.commonpath([home, path]) == path for path in readable)


def test_the_wrapper_restricts_reads_only_when_asked() -> None:
    assert landlock_exec.parse(["--write", "/", "--read", "/usr", "--read", "/", "--", "true"]) == (
        ["/"],
        ["true"],
        None,
        ["/usr", "/"],
    )
    assert landlock_exec.parse(["--write", "/", "--", "true"])[3] is None
    with pytest.raises(landlock_exec.Refused, match="--read path is not absolute"):
        landlock_exec.parse(["--read", "usr", "--", "true"])


def test_landlock_isolation_passes_the_allowlist_to_the_wrapper() -> None:
    isolation = LandlockIsolation(abi=7, python="python3")
    argv = isolation.confine(["pi"], writable=["/w"], readable=["/usr", "/etc"])
    assert argv[argv.index("--write") :] == [
        "--write",
        "/w",
        "--read",
        "/usr",
        "--read",
        "/etc",
        "--",
        "pi",
    ]
    assert "--read" not in isolation.confine(["pi"], writable=["/w"])
    with pytest.raises(ValueError, match="empty read allowlist"):
        isolation.confine(["pi"], writable=["/w"], readable=[])
    with pytest.raises(ValueError, match="absolute"):
        isolation.confine(["pi"], writable=["/w"], readable=["usr"])


def confinement(tmp_path: Path, readable: tuple[str, ...] | None) -> Confinement:
    private = tmp_path / "worker"
    (private / "agent").mkdir(parents=True, exist_ok=True)
    return Confinement(
        squad_root=str(tmp_path / "root"),
        ledger_dir=str(private),
        project_dir=str(private),
        agent_dir=str(private / "agent"),
        readable=readable,
    )


def test_a_worker_is_confined_to_its_allowlist_resolved(tmp_path: Path) -> None:
    (tmp_path / "usr").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "usr")
    isolation = FakeIsolation()
    given = (str(tmp_path / "link"), str(tmp_path / "usr"))
    launch = confined_launch(isolation, ["pi"], {}, confinement(tmp_path, given))
    remove_scratch(launch.scratch_dir)
    assert isolation.calls[0].readable == (str(tmp_path / "usr"),)


def test_a_squad_child_keeps_unrestricted_reads(tmp_path: Path) -> None:
    isolation = FakeIsolation()
    launch = confined_launch(isolation, ["pi"], {}, confinement(tmp_path, None))
    remove_scratch(launch.scratch_dir)
    assert isolation.calls[0].readable is None


def test_an_allowlist_holding_the_squad_root_is_refused(tmp_path: Path) -> None:
    isolation = FakeIsolation()
    with pytest.raises(ConfinementRefused, match="contains the squad root") as refused:
        confined_launch(isolation, ["pi"], {}, confinement(tmp_path, (str(tmp_path),)))
    assert "export PI_SQUAD_ROOT=" in str(refused.value)
    assert isolation.calls == []


def test_the_worker_setup_computes_the_allowlist_once_and_only_under_landlock(
    tmp_path: Path,
) -> None:
    computed: list[int] = []

    def readable() -> tuple[str, ...]:
        computed.append(1)
        return ("/usr",)

    def setup(support: IsolationSupport) -> PiWorkerSetup:
        return PiWorkerSetup(
            squad_root=str(tmp_path / "root"),
            agent_dir=str(tmp_path / "agent"),
            broker_address=lambda: "unused",
            isolation=support,
            readable=readable,
        )

    lease = WorkerLease("s1", "b", "j", "a1", "t1", "d")
    landlock = setup(LANDLOCK)
    first = landlock.confinement(str(tmp_path / "a"), lease)
    second = landlock.confinement(str(tmp_path / "b"), lease)
    assert first is not None
    assert first.readable == ("/usr",)
    assert second is not None
    assert second.readable == ("/usr",)
    assert computed == [1]
    none = IsolationSupport(mode="none", abi=None, reason="no Landlock")
    assert setup(none).confinement(str(tmp_path / "a"), lease) is None


def test_the_delegation_entrypoint_gives_real_workers_the_allowlist(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``pi_workers`` hands ``PiWorkerRuntime`` the allowlist over its children's code."""
    (tmp_path / "pi").mkdir()
    children = SimpleNamespace(isolation=LANDLOCK, protected_code=code(tmp_path / "pi"))
    built: dict[str, Any] = {}
    monkeypatch.setattr(delegation, "child_runtime", lambda *_, **__: children)
    monkeypatch.setattr(workers, "PiWorkerRuntime", lambda *_, **given: built.update(given))
    delegation.pi_workers({}, str(tmp_path / "root"), PROBED, None, cast("Any", None))
    assert built["isolation"] == LANDLOCK
    assert built["readable"]() == worker_readable(children.protected_code)
    assert str(tmp_path / "pi") in built["readable"]()
