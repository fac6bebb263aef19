"""The isolation selector, the port's value rules, the wrapper's argv, and the fake."""

from __future__ import annotations

import sys
from pathlib import Path

import landlockpy
import pytest

from adapters.isolation import landlock as isolation_landlock
from adapters.isolation import landlock_exec
from adapters.isolation.bwrap import (
    NAMESPACE_OPTIONS,
    Bubblewrap,
    BubblewrapProbe,
    run_mounts,
    socket_mounts,
)
from adapters.isolation.landlock import (
    EXEC_SCRIPT,
    PROBED,
    IsolationSetting,
    LandlockIsolation,
    NoIsolation,
    probe_landlock,
    select_isolation,
)
from application.ports import ChildIsolation, IsolationSupport
from domain.errors import ErrorCode, IsolationUnavailable, PiSquadError
from domain.isolation_level import MINIMUM_LANDLOCK_ABI, SCOPED_ABI
from tests.fakes.isolation import ConfineCall, FakeIsolation


def _probe_says(monkeypatch: pytest.MonkeyPatch, abi: int, *, bwrap: bool = True) -> None:
    monkeypatch.setattr(landlockpy, "abi_version", lambda: abi)
    probe = BubblewrapProbe(BWRAP, None) if bwrap else BubblewrapProbe(None, "no bwrap here")
    monkeypatch.setattr(isolation_landlock, "probe_bubblewrap", lambda environ: probe)


BWRAP = Bubblewrap("/usr/bin/bwrap")
# What every child's namespace hides: /run, and the sockets users leave in /tmp.
HIDDEN = [*run_mounts(), *socket_mounts()]


# --- the selector ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["none", "NONE", " none "])
def test_the_setting_none_disables_isolation_without_probing(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    def no_probe() -> IsolationSupport:
        raise AssertionError("probed although isolation is disabled")

    monkeypatch.setattr(isolation_landlock, "probe_landlock", no_probe)
    isolation = select_isolation(IsolationSetting(mode=value), {})
    assert isinstance(isolation, NoIsolation)
    assert isolation.support() == IsolationSupport(
        mode="none", abi=None, reason="disabled by PI_SQUAD_ISOLATION=none"
    )


@pytest.mark.parametrize("mode", ["", "auto"])
def test_otherwise_the_probed_abi_selects_landlock(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    _probe_says(monkeypatch, 7)
    isolation = select_isolation(IsolationSetting(mode=mode), {})
    assert isinstance(isolation, LandlockIsolation)
    assert isolation.support() == IsolationSupport(
        mode="landlock", abi=7, reason=None, namespaces=True
    )
    assert isolation.support().level.label == "namespaces+landlock(ABI 7, scoped)"


def test_without_bubblewrap_children_get_landlock_alone_and_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _probe_says(monkeypatch, 7, bwrap=False)
    support = select_isolation(PROBED, {}).support()
    assert (support.mode, support.namespaces, support.namespaces_reason) == (
        "landlock",
        False,
        "no bwrap here",
    )
    assert support.level.label == "landlock(ABI 7, scoped)"


def test_the_setting_landlock_keeps_landlock_without_namespaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _probe_says(monkeypatch, 7)
    isolation = select_isolation(IsolationSetting(mode="landlock"), {})
    assert isinstance(isolation, LandlockIsolation)
    assert isolation.sandbox is None
    support = isolation.support()
    assert (support.namespaces, support.namespaces_reason) == (
        False,
        "disabled by PI_SQUAD_ISOLATION=landlock",
    )


def test_without_landlock_children_are_still_enclosed_in_namespaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _probe_says(monkeypatch, 0)
    isolation = select_isolation(PROBED, {})
    assert isinstance(isolation, NoIsolation)
    assert isolation.support().namespaces
    assert isolation.support().level.label == "namespaces"
    assert isolation.enclose(["pi"]) == [BWRAP.path, *NAMESPACE_OPTIONS, *HIDDEN, "--", "pi"]
    with pytest.raises(IsolationUnavailable):
        isolation.confine(["pi"], writable=["/w"])


@pytest.mark.parametrize(("cap", "abi"), [("5", 5), ("3", 3), ("9", 7), (" 6 ", 6)])
def test_the_test_knob_caps_the_abi(monkeypatch: pytest.MonkeyPatch, cap: str, abi: int) -> None:
    _probe_says(monkeypatch, 7)
    isolation = select_isolation(IsolationSetting(abi_cap=cap), {})
    assert isinstance(isolation, LandlockIsolation)
    assert isolation.abi == abi
    assert "--abi" in (argv := isolation.confine(["pi"], writable=["/w"]))
    assert argv[argv.index("--abi") + 1] == str(abi)


@pytest.mark.parametrize(("cap", "mentioned"), [("2", "cannot deny truncate"), ("x", "'x'")])
def test_a_knob_below_the_minimum_or_not_a_number_leaves_no_isolation(
    monkeypatch: pytest.MonkeyPatch, cap: str, mentioned: str
) -> None:
    _probe_says(monkeypatch, 7)
    support = select_isolation(IsolationSetting(abi_cap=cap), {}).support()
    assert support.mode == "none"
    assert mentioned in (support.reason or "")


@pytest.mark.parametrize(
    ("abi", "mentioned"),
    [(0, "Linux < 5.13"), (1, "cannot deny truncate"), (2, "Linux 6.2")],
)
def test_a_kernel_without_usable_landlock_falls_back_to_none(
    monkeypatch: pytest.MonkeyPatch, abi: int, mentioned: str
) -> None:
    _probe_says(monkeypatch, abi)
    support = select_isolation(PROBED, {}).support()
    assert support.mode == "none"
    assert support.abi is None
    assert support.reason is not None
    assert mentioned in support.reason


def test_a_failing_probe_falls_back_to_none(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> int:
        raise landlockpy.LandlockError(22, "Invalid argument")

    monkeypatch.setattr(landlockpy, "abi_version", broken)
    support = select_isolation(PROBED, {}).support()
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
        "/usr/bin/python3", "-P", EXEC_SCRIPT, "--abi", "7",
        "--write", "/w", "--write", "/dev/null",
        "--", "node", "cli.js", "--mode", "rpc",
    ]  # fmt: skip
    assert isolation.enclose(["node"]) == ["node"], "no namespaces without a sandbox"


def test_with_a_sandbox_bubblewrap_is_the_outer_layer_and_landlock_inside() -> None:
    isolation = LandlockIsolation(abi=5, python="/usr/bin/python3", sandbox=BWRAP)
    argv = isolation.confine(["node", "cli.js"], writable=["/w"])
    hidden = [*run_mounts((), ["/w"]), *socket_mounts(keep=["/w"])]
    assert argv == [
        BWRAP.path, *NAMESPACE_OPTIONS, *hidden, "--",
        "/usr/bin/python3", "-P", EXEC_SCRIPT, "--abi", "5", "--write", "/w",
        "--", "node", "cli.js",
    ]  # fmt: skip
    assert isolation.enclose(["node"]) == [BWRAP.path, *NAMESPACE_OPTIONS, *HIDDEN, "--", "node"]
    support = isolation.support()
    assert support.level.label == "namespaces+landlock(ABI 5, unscoped signals)"
    assert Path(EXEC_SCRIPT) == Path(landlock_exec.__file__).resolve()
    assert LandlockIsolation(abi=7).python == sys.executable


@pytest.mark.parametrize("isolation", [LandlockIsolation(abi=7), FakeIsolation()])
@pytest.mark.parametrize(
    ("argv", "writable"), [([], ["/w"]), (["true"], ["w"]), (["true"], ["./w"]), (["true"], [""])]
)
def test_confine_refuses_an_empty_argv_or_a_relative_path_the_fake_too(
    isolation: ChildIsolation, argv: list[str], writable: list[str]
) -> None:
    with pytest.raises(ValueError, match=r"cannot confine an empty argv|must be absolute"):
        isolation.confine(argv, writable=writable)


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
    assert landlock_exec.SIGNAL_SCOPE_ABI == SCOPED_ABI
    assert landlock_exec.MINIMUM_ABI == MINIMUM_LANDLOCK_ABI
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


def test_device_creation_is_handled_but_never_granted() -> None:
    """A root child must not make a node for a disk in a directory it may write."""
    never = landlockpy.AccessFS.MAKE_BLOCK | landlockpy.AccessFS.MAKE_CHAR
    assert never == landlock_exec.NEVER_GRANTED
    assert landlock_exec.write_rights(1) & never == never, "handled: denied everywhere"


@pytest.mark.parametrize(
    ("arguments", "parsed"),
    [
        (["--write", "/", "--", "true"], (["/"], ["true"], None, None)),
        (["--abi", "5", "--write", "/", "--", "true"], (["/"], ["true"], 5, None)),
        (["--write", "/", "--abi", "3", "--", "true"], (["/"], ["true"], 3, None)),
    ],
)
def test_the_wrapper_takes_the_abi_the_parent_chose(
    arguments: list[str], parsed: tuple[list[str], list[str], int | None, list[str] | None]
) -> None:
    assert landlock_exec.parse(arguments) == parsed


@pytest.mark.parametrize("value", ["2", "x", "", "-1"])
def test_the_wrapper_refuses_an_abi_it_cannot_use(value: str) -> None:
    with pytest.raises(landlock_exec.Refused, match="--abi"):
        landlock_exec.parse(["--abi", value, "--", "true"])


def test_the_wrapper_refuses_an_abi_newer_than_the_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(landlockpy, "abi_version", lambda: 5)
    with pytest.raises(landlock_exec.Refused, match="ABI 6 was asked for; this kernel has 5"):
        landlock_exec.confine_self(["/"], 6)
