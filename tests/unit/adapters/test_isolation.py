"""The isolation selector, the port's value rules, the wrapper's argv, and the fake."""

from __future__ import annotations

import sys
from pathlib import Path

import landlockpy
import pytest

from adapters import isolation_landlock, landlock_exec
from adapters.isolation_landlock import (
    EXEC_SCRIPT,
    LandlockIsolation,
    NoIsolation,
    probe_landlock,
    select_isolation,
)
from application.ports import ChildIsolation, IsolationSupport
from domain.errors import ErrorCode, IsolationUnavailable, PiSquadError
from tests.fakes.isolation import ConfineCall, FakeIsolation


def _probe_says(monkeypatch: pytest.MonkeyPatch, abi: int) -> None:
    monkeypatch.setattr(landlockpy, "abi_version", lambda: abi)


# --- the selector ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["none", "NONE", " none "])
def test_the_setting_none_disables_isolation_without_probing(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    def no_probe() -> IsolationSupport:
        raise AssertionError("probed although isolation is disabled")

    monkeypatch.setattr(isolation_landlock, "probe_landlock", no_probe)
    isolation = select_isolation({"PI_SQUAD_ISOLATION": value})
    assert isinstance(isolation, NoIsolation)
    assert isolation.support() == IsolationSupport(
        mode="none", abi=None, reason="disabled by PI_SQUAD_ISOLATION=none"
    )


@pytest.mark.parametrize(
    "environ", [{}, {"PI_SQUAD_ISOLATION": ""}, {"PI_SQUAD_ISOLATION": "auto"}]
)
def test_otherwise_the_probed_abi_selects_landlock(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str]
) -> None:
    _probe_says(monkeypatch, 7)
    isolation = select_isolation(environ)
    assert isinstance(isolation, LandlockIsolation)
    assert isolation.support() == IsolationSupport(mode="landlock", abi=7, reason=None)


@pytest.mark.parametrize(
    ("abi", "mentioned"),
    [(0, "Linux < 5.13"), (1, "cannot deny truncate"), (2, "Linux 6.2")],
)
def test_a_kernel_without_usable_landlock_falls_back_to_none(
    monkeypatch: pytest.MonkeyPatch, abi: int, mentioned: str
) -> None:
    _probe_says(monkeypatch, abi)
    support = select_isolation({}).support()
    assert support.mode == "none"
    assert support.abi is None
    assert support.reason is not None
    assert mentioned in support.reason


def test_a_failing_probe_falls_back_to_none(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> int:
        raise landlockpy.LandlockError(22, "Invalid argument")

    monkeypatch.setattr(landlockpy, "abi_version", broken)
    support = select_isolation({}).support()
    assert support.mode == "none"
    assert support.reason is not None
    assert "probe failed" in support.reason


def test_not_linux_is_none_with_the_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert probe_landlock() == IsolationSupport(
        mode="none", abi=None, reason="not Linux (darwin): Landlock is Linux-only"
    )


# --- the values and the adapters ------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "abi", "reason"),
    [
        ("landlock", None, None),
        ("landlock", 7, "x"),
        ("none", None, None),
        ("none", 7, "x"),
        ("none", None, ""),
        ("seccomp", None, "x"),
    ],
)
def test_support_values_are_consistent(mode: str, abi: int | None, reason: str | None) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (attrs' in_ validator raises a plain ValueError)
        IsolationSupport(mode=mode, abi=abi, reason=reason)


def test_no_isolation_refuses_to_confine_with_a_stable_code() -> None:
    isolation: ChildIsolation = NoIsolation("kernel too old")
    with pytest.raises(IsolationUnavailable) as caught:
        isolation.confine(["true"], writable=["/tmp"])
    assert isinstance(caught.value, PiSquadError)
    assert caught.value.code is ErrorCode.ISOLATION_UNAVAILABLE
    assert caught.value.reason == "kernel too old"
    assert "kernel too old" in caught.value.message
    assert "PI_SQUAD_REQUIRE_ISOLATION" in caught.value.message
    assert "Linux >= 6.2" in caught.value.message


def test_landlock_confine_wraps_argv_in_the_exec_script() -> None:
    isolation: ChildIsolation = LandlockIsolation(abi=7, python="/usr/bin/python3")
    argv = isolation.confine(["node", "cli.js", "--mode", "rpc"], writable=["/w", "/dev/null"])
    assert argv == [
        "/usr/bin/python3", "-P", EXEC_SCRIPT,
        "--write", "/w", "--write", "/dev/null",
        "--", "node", "cli.js", "--mode", "rpc",
    ]  # fmt: skip
    assert Path(EXEC_SCRIPT) == Path(landlock_exec.__file__).resolve()
    assert LandlockIsolation(abi=7).python == sys.executable


@pytest.mark.parametrize(
    ("argv", "writable"), [([], ["/w"]), (["true"], ["w"]), (["true"], ["./w"]), (["true"], [""])]
)
def test_landlock_confine_refuses_an_empty_argv_or_a_relative_path(
    argv: list[str], writable: list[str]
) -> None:
    with pytest.raises(ValueError):  # noqa: PT011
        LandlockIsolation(abi=7).confine(argv, writable=writable)


def test_landlock_confine_refuses_a_bare_string() -> None:
    with pytest.raises(TypeError):
        LandlockIsolation(abi=7).confine(["true"], writable="/tmp")


def test_landlock_isolation_needs_the_minimum_abi() -> None:
    with pytest.raises(ValueError, match="below the minimum"):
        LandlockIsolation(abi=2)


def test_the_wrapper_handles_only_write_rights_available_at_each_abi() -> None:
    write = landlockpy.AccessFS.WRITE_FILE
    assert landlock_exec.write_rights(1) & landlockpy.AccessFS.REFER == 0
    assert landlock_exec.write_rights(2) & landlockpy.AccessFS.REFER
    assert landlock_exec.write_rights(2) & landlockpy.AccessFS.TRUNCATE == 0
    assert landlock_exec.write_rights(3) & landlockpy.AccessFS.TRUNCATE
    assert landlock_exec.write_rights(4) & landlockpy.AccessFS.IOCTL_DEV == 0
    assert landlock_exec.write_rights(5) & landlockpy.AccessFS.IOCTL_DEV
    latest = landlockpy.AccessFS(landlock_exec.write_rights(99))
    assert latest & write
    assert latest == latest & landlockpy.fs_for_abi(7)
    never = (
        landlockpy.AccessFS.READ_FILE
        | landlockpy.AccessFS.READ_DIR
        | landlockpy.AccessFS.EXECUTE
        | landlockpy.AccessFS.RESOLVE_UNIX
    )
    assert latest & never == 0
    assert latest | never == landlockpy.fs_for_abi(landlockpy.flags.LATEST_ABI)


# --- the fake -------------------------------------------------------------------------------


def test_the_fake_records_every_call_and_passes_argv_through() -> None:
    fake = FakeIsolation()
    isolation: ChildIsolation = fake
    assert isolation.support() == IsolationSupport(mode="landlock", abi=7, reason=None)
    assert isolation.confine(("pi", "--mode", "rpc"), writable=("/w",)) == ["pi", "--mode", "rpc"]
    fake.prefix = ("env",)
    assert isolation.confine(["true"], writable=[]) == ["env", "true"]
    assert fake.calls == [
        ConfineCall(("pi", "--mode", "rpc"), ("/w",)),
        ConfineCall(("true",), ()),
    ]


def test_the_fake_can_report_none_and_still_records() -> None:
    fake = FakeIsolation.none("not here")
    assert fake.support() == IsolationSupport(mode="none", abi=None, reason="not here")
    with pytest.raises(IsolationUnavailable, match="not here"):
        fake.confine(["true"], writable=["/w"])
    assert fake.calls == [ConfineCall(("true",), ("/w",))]
