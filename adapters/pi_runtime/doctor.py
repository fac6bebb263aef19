"""``doctor``: checking Python, Node, Pi, that Pi loads pi-squad's extension, and which child
isolation this machine enforces; and warning of other distributions that shadow pi-squad's
top-level modules."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from adapters.isolation.bwrap import INSTALL_HINT, probe_bubblewrap
from adapters.isolation.landlock import PROBED, select_isolation
from adapters.pi_runtime.locate import (
    PiRuntime,
    PiRuntimeUnavailable,
    locate_runtime,
    pi_command,
    pi_environment,
)
from adapters.pi_runtime.state_probe import ask_state
from application.ports import ChildIsolation, IsolationSupport

TOP_LEVEL_PACKAGES = ("domain", "application", "adapters", "entrypoints")
"""pi-squad's top-level import names; each is also a distribution's module on PyPI."""
OWN_DISTRIBUTION = "pi-squad"
ISOLATED_INSTALL = "uv tool install /path/to/pi-squad (or pipx install /path/to/pi-squad)"
MIN_PYTHON = (3, 11)
DOCTOR_TIMEOUT_SECONDS = 20.0


def doctor(
    extension_path: str | os.PathLike[str],
    *,
    repo_root: str | None = None,
    environ: Mapping[str, str] | None = None,
    runtime_override: str | None = None,
    timeout: float = DOCTOR_TIMEOUT_SECONDS,
    isolation: ChildIsolation | None = None,
    distributions: Mapping[str, Sequence[str]] | None = None,
    expect_bridge: bool = False,
) -> dict[str, Any]:
    """Check Python, Node, Pi and that Pi loads ``extension_path`` (in an isolated agent dir),
    and report the child write isolation this machine enforces.

    The extension is started exactly as a user's Pi starts it, in ``environ`` as given (no
    ``PI_SQUAD_BRIDGE`` of doctor's own): pi-squad's shim then says which bridge it started
    (``bridge``: ``{"ok", "source", "argv", "detail", "remedy"}``). ``expect_bridge``: the
    extension is pi-squad's own, so a shim that reports no bridge at all is a failure too.

    Returns ``{"ok", "python": {"version", "ok"}, "node": {"path", "version", "ok", "detail"},
    "pi": {"path", "version", "ok", "source", "detail"}, "extension": {"path", "loads",
    "detail"}, "isolation": {"mode", "abi", "reason", "namespaces", "layers"}, "bubblewrap":
    {"available", "path", "detail", "install"}, "warnings": [{"distribution", "module",
    "message"}]}``. Never raises for a broken runtime or extension: that is what it reports.
    ``runtime_override``: ``PI_SQUAD_RUNTIME_DIR`` as given (``locate_runtime``; ``None``: the
    checkout's runtime). ``isolation``: what children get here (``None``: what
    ``select_isolation`` probes with no setting); its absence does not make ``ok`` false, nor
    does bubblewrap's (``install`` says how to get it). ``distributions`` (top-level module
    name to the distributions that provide it) defaults to
    ``importlib.metadata.packages_distributions()``; a warning never makes ``ok`` false.
    """
    env = dict(os.environ if environ is None else environ)
    python_ok = sys.version_info[:2] >= MIN_PYTHON
    chosen = select_isolation(PROBED, env) if isolation is None else isolation
    support = chosen.support()
    report: dict[str, Any] = {
        "ok": False,
        "python": {"version": platform.python_version(), "ok": python_ok},
        "node": {"path": None, "version": None, "ok": False, "detail": None},
        "pi": {"path": None, "version": None, "ok": False, "source": None, "detail": None},
        "extension": {"path": os.fspath(extension_path), "loads": False, "detail": None},
        "bridge": dict(NOT_CHECKED, detail="not checked: no usable Pi runtime"),
        "isolation": isolation_report(support),
        "bubblewrap": bubblewrap_report(env),
        "warnings": import_name_clashes(
            importlib.metadata.packages_distributions() if distributions is None else distributions
        ),
    }
    try:
        runtime = locate_runtime(repo_root, env, runtime_override=runtime_override)
    except PiRuntimeUnavailable as error:
        report["node"]["detail"] = report["pi"]["detail"] = str(error)
        report["extension"]["detail"] = "not checked: no usable Pi runtime"
        report["ok"] = False
        return report
    report["node"].update(path=runtime.node_path, version=runtime.node_version, ok=True)
    report["pi"].update(
        path=runtime.pi_path, version=runtime.pi_version, ok=True, source=runtime.source
    )
    loads, detail, stderr = check_extension(runtime, extension_path, env, timeout=timeout)
    report["extension"].update(loads=loads, detail=detail)
    bridge = bridge_report(stderr, expect_bridge=expect_bridge)
    report["bridge"] = bridge
    report["ok"] = python_ok and loads and bridge["ok"] is not False
    return report


def isolation_report(support: IsolationSupport) -> dict[str, Any]:
    """What children get here: write isolation (``mode``, ``abi``, ``reason``), whether each
    runs in namespaces of its own, and the layers' label (``domain.isolation_level``)."""
    return {
        "mode": support.mode,
        "abi": support.abi,
        "reason": support.reason,
        "namespaces": support.namespaces,
        "layers": support.level.label,
    }


def bubblewrap_report(environ: Mapping[str, str]) -> dict[str, Any]:
    """Whether bubblewrap runs children in namespaces of their own here, and how to install it
    where it does not."""
    probe = probe_bubblewrap(environ)
    available = probe.sandbox is not None
    return {
        "available": available,
        "path": None if probe.sandbox is None else probe.sandbox.path,
        "detail": probe.reason,
        "install": None if available else INSTALL_HINT,
    }


NOT_CHECKED: dict[str, Any] = {
    "ok": None,
    "source": None,
    "argv": None,
    "detail": None,
    "remedy": None,
}
BRIDGE_READY = re.compile(r"bridge ready: role=main source=(\S+) argv=(\[.*\])\s*$", re.MULTILINE)
BRIDGE_UNAVAILABLE = re.compile(
    r"pi-squad is unavailable in this session \((.*)\)\. Your own tools work as usual\. "
    r"Fix: (.*?)\.?\s*$",
    re.MULTILINE,
)


def bridge_report(stderr: str, *, expect_bridge: bool) -> dict[str, Any]:
    """What pi-squad's shim said of its main-role bridge on ``stderr`` (it logs there with
    ``PI_SQUAD_BRIDGE_DEBUG=1``): started (from where, with which argv) or unavailable (why,
    and the remedy it shows the user)."""
    ready = BRIDGE_READY.search(stderr)
    if ready is not None:
        try:
            argv = json.loads(ready.group(2))
        except ValueError:
            argv = None
        return {**NOT_CHECKED, "ok": True, "source": ready.group(1), "argv": argv}
    failed = BRIDGE_UNAVAILABLE.search(stderr)
    if failed is not None:
        return {**NOT_CHECKED, "ok": False, "detail": failed.group(1), "remedy": failed.group(2)}
    if expect_bridge:
        return {**NOT_CHECKED, "ok": False, "detail": "the extension reported no bridge"}
    return dict(NOT_CHECKED, detail="not pi-squad's extension")


def _normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def import_name_clashes(distributions: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """One warning per other installed distribution that provides one of pi-squad's top-level
    import names: whichever is found first on ``sys.path`` shadows the other's modules."""
    warnings: list[dict[str, str]] = []
    for module in TOP_LEVEL_PACKAGES:
        for distribution in sorted(set(distributions.get(module, ()))):
            if _normalized(distribution) == OWN_DISTRIBUTION:
                continue
            warnings.append(
                {
                    "distribution": distribution,
                    "module": module,
                    "message": (
                        f"the installed distribution {distribution!r} also provides the "
                        f"top-level module {module!r}, which is pi-squad's own: one of them "
                        "shadows the other in this environment. Install pi-squad in an "
                        f"environment of its own: {ISOLATED_INSTALL}"
                    ),
                }
            )
    return warnings


def check_extension(
    runtime: PiRuntime,
    extension_path: str | os.PathLike[str],
    base_env: Mapping[str, str],
    *,
    timeout: float = DOCTOR_TIMEOUT_SECONDS,
) -> tuple[bool, str, str]:
    """Start ``pi --mode rpc --no-session -e <extension>``, ask ``get_state``, then close stdin;
    ``(loads, detail, stderr)``.

    Loads when the answer arrives, no ``extension_error`` event came, and stderr does not
    mention the extension failing. Pi exits with status 1 and ``Failed to load extension`` on
    stderr when the module cannot be loaded (missing, syntax error, factory throws). The main
    role is checked (never ``PI_SQUAD_CHILD``), with the shim's diagnostics on stderr.
    """
    extension = Path(extension_path).resolve()
    if not extension.exists():
        return False, f"extension path does not exist: {extension}", ""
    with tempfile.TemporaryDirectory(prefix="pi-squad-doctor-") as scratch:
        agent_dir = Path(scratch, "agent")
        workdir = Path(scratch, "work")
        agent_dir.mkdir()
        workdir.mkdir()
        argv = [*pi_command(runtime), "--mode", "rpc", "--no-session", "--no-extensions"]
        env = pi_environment(base_env, agent_dir, runtime)
        env.pop("PI_SQUAD_CHILD", None)
        env["PI_SQUAD_BRIDGE_DEBUG"] = "1"
        probe = ask_state([*argv, "-e", str(extension)], env, workdir, timeout)
    errors = list(probe.errors)
    if probe.stderr and _mentions_failure(probe.stderr, extension):
        errors.append(f"stderr: {_first_lines(probe.stderr)}")
    if not probe.answered:
        errors.insert(
            0,
            f"no answer to get_state within {timeout:g} s"
            if probe.timed_out
            else f"pi exited with status {probe.returncode} before answering get_state",
        )
    if errors:
        return False, "; ".join(errors), probe.stderr
    return True, f"pi {runtime.pi_version} loaded {extension} and answered get_state", probe.stderr


def _mentions_failure(stderr: str, extension: Path) -> bool:
    lowered = stderr.lower()
    names = (str(extension).lower(), extension.name.lower())
    return "failed to load extension" in lowered or (
        any(name in lowered for name in names) and ("error" in lowered or "fail" in lowered)
    )


def _first_lines(text: str, limit: int = 3) -> str:
    return " | ".join(line for line in text.splitlines()[:limit] if line.strip())
