"""``doctor`` over fake runtimes (tests/integration/pi_runtime_fakes.py): the child isolation,
bubblewrap, clashing top-level names of other distributions, and the bridge the shim reports."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from adapters.isolation import bwrap as isolation_bwrap
from adapters.isolation.bwrap import probe_bubblewrap
from adapters.isolation.landlock import PROBED, select_isolation
from adapters.pi_runtime import TOP_LEVEL_PACKAGES, doctor, import_name_clashes
from adapters.pi_runtime.doctor import bridge_report
from entrypoints.cli import main
from entrypoints.container import CliContainer
from entrypoints.run import bridge_lines, bubblewrap_line, doctor_lines, isolation_line
from tests.fakes.isolation import FakeIsolation
from tests.integration.pi_runtime_fakes import DOCTOR_KEYS, ISOLATION_NONE, path_with

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the fakes are POSIX shell scripts")


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


def doctor_command(tmp_path: Path, capsys: pytest.CaptureFixture[str], **settings: str) -> Any:
    """``pi-squad doctor --json``'s report in an environment with no Pi runtime and
    ``settings``."""
    container = CliContainer()
    environ = {"PATH": path_with(), "HOME": str(tmp_path), **settings}
    container.environ.override(providers.Object(environ))
    capsys.readouterr()
    main(["doctor", "--json"], container)
    return json.loads(capsys.readouterr().out)


def test_the_doctor_command_honours_the_settings_in_its_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = str(tmp_path / "runtime-elsewhere")
    report = doctor_command(
        tmp_path, capsys, PI_SQUAD_ISOLATION="none", PI_SQUAD_RUNTIME_DIR=elsewhere
    )
    assert report["isolation"] == ISOLATION_NONE
    assert f"no project runtime in {elsewhere}" in report["pi"]["detail"]
    probed = doctor_command(tmp_path, capsys)
    support = select_isolation(PROBED, {"PATH": path_with()}).support()
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
