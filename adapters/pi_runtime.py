"""Finding the Node + Pi 0.80.10 runtime, starting Pi with it, and checking it (``doctor``).

Pi 0.80.10 needs Node >= 22.19. The project installs both into ``<repo>/.runtime`` with
``make runtime`` (``scripts/install-runtime``); ``PI_SQUAD_RUNTIME_DIR`` points elsewhere. A
user's own ``pi`` on ``PATH`` is accepted only when it reports 0.80.10 and runs under a Node
>= 22.19. Pi is always started as ``[node, <pi cli.js>]`` so ``PATH`` does not choose the Node.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Literal

import attrs

from adapters.isolation_landlock import select_isolation
from application.ports import ChildIsolation

PI_VERSION = "0.80.10"
PI_PACKAGE = "@earendil-works/pi-coding-agent"
MIN_NODE = (22, 19, 0)
MIN_PYTHON = (3, 11)
RUNTIME_DIR_VARIABLE = "PI_SQUAD_RUNTIME_DIR"
INSTALL_COMMAND = "make runtime (or scripts/install-runtime)"
VERSION_TIMEOUT_SECONDS = 30.0
DOCTOR_TIMEOUT_SECONDS = 20.0
TOP_LEVEL_PACKAGES = ("domain", "application", "adapters", "entrypoints")
"""pi-squad's top-level import names; each is also a distribution's module on PyPI."""
OWN_DISTRIBUTION = "pi-squad"
ISOLATED_INSTALL = "uv tool install /path/to/pi-squad (or pipx install /path/to/pi-squad)"

RuntimeSource = Literal["project", "path"]


@attrs.frozen
class PiRuntime:
    node_path: str
    pi_path: str
    """The JavaScript entry of Pi (the package's ``bin`` script, ``dist/cli.js``)."""
    node_version: str
    """Without the leading ``v``, e.g. ``22.23.5``."""
    pi_version: str
    source: RuntimeSource


class PiRuntimeUnavailable(RuntimeError):
    """No usable Node + Pi 0.80.10: what was found, what is needed, the command that fixes it."""

    def __init__(self, found: Sequence[str]) -> None:
        self.found = tuple(found)
        self.needed = (
            f"Pi {PI_VERSION} ({PI_PACKAGE}) running under Node >= {_dotted(MIN_NODE)}, "
            f"installed in the project's runtime directory or as `pi` on PATH"
        )
        self.remedy = INSTALL_COMMAND
        found_text = "; ".join(self.found) if self.found else "nothing"
        super().__init__(
            f"Pi runtime unavailable. Found: {found_text}. Needed: {self.needed}. "
            f"Run: {self.remedy}."
        )


def node_platform_package(system: str | None = None, machine: str | None = None) -> str | None:
    """The npm package that ships the Node binary for this platform, as the installer picks it."""
    system = (system or platform.system()).lower()
    machine = (machine or platform.machine()).lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if system not in ("linux", "darwin") or arch is None:
        return None
    return f"node-{system}-{arch}"


def detect_repo_root(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest directory holding ``pyproject.toml`` at or above ``start`` (this file)."""
    here = Path(start) if start is not None else Path(__file__).resolve().parent
    for directory in (here, *here.parents):
        if (directory / "pyproject.toml").is_file():
            return directory
    return None


def runtime_dir(
    repo_root: str | os.PathLike[str] | None, environ: Mapping[str, str]
) -> Path | None:
    override = environ.get(RUNTIME_DIR_VARIABLE)
    if override:
        return Path(override)
    root = Path(repo_root) if repo_root is not None else detect_repo_root()
    return root / ".runtime" if root is not None else None


def locate_runtime(repo_root: str | None, environ: Mapping[str, str]) -> PiRuntime:
    """The project's runtime if usable, else a suitable ``pi`` on ``PATH``; raises otherwise."""
    found: list[str] = []
    directory = runtime_dir(repo_root, environ)
    if directory is not None:
        runtime = _project_runtime(directory, found)
        if runtime is not None:
            return runtime
    runtime = _path_runtime(environ, found)
    if runtime is not None:
        return runtime
    raise PiRuntimeUnavailable(found)


def pi_command(runtime: PiRuntime) -> list[str]:
    """The argv prefix that starts Pi with the right Node, whatever ``PATH`` says."""
    return [runtime.node_path, runtime.pi_path]


def pi_environment(
    base_env: Mapping[str, str], agent_dir: str | os.PathLike[str], runtime: PiRuntime
) -> dict[str, str]:
    """``base_env`` plus Pi's isolation variables, with the runtime's Node first on ``PATH``.

    ``PI_CODING_AGENT_DIR`` keeps all Pi config and state out of ``~/.pi``; Pi's own child
    processes (its ``bash`` tool, extensions spawning ``node``) find the same Node first.
    """
    env = dict(base_env)
    env["PI_CODING_AGENT_DIR"] = os.fspath(agent_dir)
    env["PI_OFFLINE"] = "1"
    env["PI_SKIP_VERSION_CHECK"] = "1"
    env["PI_TELEMETRY"] = "0"
    node_bin = str(Path(runtime.node_path).parent)
    rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != node_bin]
    env["PATH"] = os.pathsep.join([node_bin, *rest])
    return env


def doctor(
    extension_path: str | os.PathLike[str],
    *,
    repo_root: str | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float = DOCTOR_TIMEOUT_SECONDS,
    isolation: ChildIsolation | None = None,
    distributions: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """Check Python, Node, Pi and that Pi loads ``extension_path`` (in an isolated agent dir),
    and report the child write isolation this machine enforces.

    Returns ``{"ok", "python": {"version", "ok"}, "node": {"path", "version", "ok", "detail"},
    "pi": {"path", "version", "ok", "source", "detail"}, "extension": {"path", "loads",
    "detail"}, "isolation": {"mode", "abi", "reason"}, "warnings": [{"distribution", "module",
    "message"}]}``. Never raises for a broken runtime or extension: that is what it reports.
    ``isolation`` defaults to ``select_isolation(environ)``; its absence does not make ``ok``
    false. ``distributions`` (top-level module name to the distributions that provide it)
    defaults to ``importlib.metadata.packages_distributions()``; a warning never makes ``ok``
    false.
    """
    env = dict(os.environ if environ is None else environ)
    python_ok = sys.version_info[:2] >= MIN_PYTHON
    support = (select_isolation(env) if isolation is None else isolation).support()
    report: dict[str, Any] = {
        "ok": False,
        "python": {"version": platform.python_version(), "ok": python_ok},
        "node": {"path": None, "version": None, "ok": False, "detail": None},
        "pi": {"path": None, "version": None, "ok": False, "source": None, "detail": None},
        "extension": {"path": os.fspath(extension_path), "loads": False, "detail": None},
        "isolation": {"mode": support.mode, "abi": support.abi, "reason": support.reason},
        "warnings": import_name_clashes(
            importlib.metadata.packages_distributions() if distributions is None else distributions
        ),
    }
    try:
        runtime = locate_runtime(repo_root, env)
    except PiRuntimeUnavailable as error:
        report["node"]["detail"] = report["pi"]["detail"] = str(error)
        report["extension"]["detail"] = "not checked: no usable Pi runtime"
        report["ok"] = False
        return report
    report["node"].update(path=runtime.node_path, version=runtime.node_version, ok=True)
    report["pi"].update(
        path=runtime.pi_path, version=runtime.pi_version, ok=True, source=runtime.source
    )
    loads, detail = check_extension(runtime, extension_path, env, timeout=timeout)
    report["extension"].update(loads=loads, detail=detail)
    report["ok"] = python_ok and loads
    return report


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
) -> tuple[bool, str]:
    """Start ``pi --mode rpc --no-session -e <extension>``, ask ``get_state``, then close stdin.

    Loads when the answer arrives, no ``extension_error`` event came, and stderr does not
    mention the extension failing. Pi exits with status 1 and ``Failed to load extension`` on
    stderr when the module cannot be loaded (missing, syntax error, factory throws).
    """
    extension = Path(extension_path).resolve()
    if not extension.exists():
        return False, f"extension path does not exist: {extension}"
    with tempfile.TemporaryDirectory(prefix="pi-squad-doctor-") as scratch:
        agent_dir = Path(scratch, "agent")
        workdir = Path(scratch, "work")
        agent_dir.mkdir()
        workdir.mkdir()
        argv = [*pi_command(runtime), "--mode", "rpc", "--no-session", "--no-extensions"]
        probe = _ask_state(
            [*argv, "-e", str(extension)],
            pi_environment(base_env, agent_dir, runtime),
            workdir,
            timeout,
        )
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
        return False, "; ".join(errors)
    return True, f"pi {runtime.pi_version} loaded {extension} and answered get_state"


@attrs.frozen
class _StateProbe:
    answered: bool
    timed_out: bool
    errors: tuple[str, ...]
    returncode: int
    stderr: str


def _ask_state(argv: list[str], env: Mapping[str, str], cwd: Path, timeout: float) -> _StateProbe:
    """Send ``get_state`` (id "1") over RPC, wait for its answer, close stdin, collect the rest."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    records: queue.Queue[dict[str, Any] | None] = queue.Queue()
    stderr_chunks: list[bytes] = []
    readers = [
        threading.Thread(target=_read_records, args=(process.stdout, records), daemon=True),
        threading.Thread(target=_drain, args=(process.stderr, stderr_chunks), daemon=True),
    ]
    for reader in readers:
        reader.start()
    answered = False
    timed_out = False
    errors: list[str] = []
    try:
        process.stdin.write(b'{"type":"get_state","id":"1"}\n')
        process.stdin.flush()
        deadline = time.monotonic() + timeout
        while not answered:
            try:
                record = records.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                timed_out = True
                break
            if record is None:  # stdout closed: Pi exited
                break
            errors.extend(_extension_errors([record]))
            if record.get("type") == "response" and record.get("id") == "1":
                answered = bool(record.get("success"))
    except OSError as error:
        errors.append(f"could not talk to pi: {error}")
    finally:
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            returncode = process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            returncode = process.wait()
        for reader in readers:
            reader.join(timeout=2)
    # Events that arrived after the answer (e.g. from session_start handlers) count too.
    rest: list[dict[str, Any]] = []
    while not records.empty():
        record = records.get_nowait()
        if record is not None:
            rest.append(record)
    errors.extend(_extension_errors(rest))
    stderr = b"".join(stderr_chunks).decode("utf-8", "replace").strip()
    return _StateProbe(answered, timed_out, tuple(errors), returncode, stderr)


def _extension_errors(records: list[dict[str, Any]]) -> list[str]:
    return [
        f"extension_error in {r.get('event')}: {r.get('error')}"
        for r in records
        if r.get("type") == "extension_error"
    ]


def _project_runtime(directory: Path, found: list[str]) -> PiRuntime | None:
    package_dir = directory / "node_modules" / PI_PACKAGE
    manifest = _read_json(package_dir / "package.json")
    if manifest is None:
        found.append(f"no project runtime in {directory}")
        return None
    pi_version = str(manifest.get("version", ""))
    pi_path = package_dir / _bin_entry(manifest)
    nodes = _project_node_candidates(directory)
    node = next((n for n in nodes if n.is_file() and os.access(n, os.X_OK)), None)
    if node is None:
        found.append(f"project runtime in {directory} has no Node binary")
        return None
    node_version = _node_version(str(node))
    problems = []
    if node_version is None or _version_tuple(node_version) < MIN_NODE:
        problems.append(f"Node {node_version or 'that does not run'} at {node}")
    if pi_version != PI_VERSION:
        problems.append(f"Pi {pi_version or '?'}")
    if not pi_path.is_file():
        problems.append(f"no Pi entry script {pi_path}")
    if problems or node_version is None:
        found.append(f"project runtime in {directory} has " + ", ".join(problems))
        return None
    return PiRuntime(
        node_path=str(node),
        pi_path=str(pi_path),
        node_version=node_version,
        pi_version=pi_version,
        source="project",
    )


def _project_node_candidates(directory: Path) -> list[Path]:
    candidates: list[Path] = []
    package = node_platform_package()
    if package is not None:
        candidates.append(directory / "node_modules" / package / "bin" / "node")
    candidates.append(directory / "node_modules" / ".bin" / "node")
    # Where the installer used a Node it did not install (no package for the platform).
    recorded = _read_json(directory / "runtime.json")
    if recorded is not None and isinstance(recorded.get("node"), str):
        candidates.append(Path(recorded["node"]))
    return candidates


def _path_runtime(environ: Mapping[str, str], found: list[str]) -> PiRuntime | None:
    search_path = environ.get("PATH", "")
    pi_on_path = shutil.which("pi", path=search_path)
    if pi_on_path is None:
        found.append("no `pi` on PATH")
        return None
    pi_script = Path(pi_on_path).resolve()
    if not _is_node_script(pi_script):
        found.append(f"`pi` on PATH ({pi_script}) is not a Node script")
        return None
    node = shutil.which("node", path=search_path)
    if node is None:
        found.append(f"`pi` on PATH ({pi_script}) but no `node` on PATH")
        return None
    node_version = _node_version(node)
    if node_version is None or _version_tuple(node_version) < MIN_NODE:
        found.append(
            f"`pi` on PATH ({pi_script}) would run under Node {node_version or '?'} ({node})"
        )
        return None
    pi_version = _pi_version(node, str(pi_script), environ)
    if pi_version != PI_VERSION:
        found.append(f"`pi` on PATH ({pi_script}) reports version {pi_version or '?'}")
        return None
    return PiRuntime(
        node_path=node,
        pi_path=str(pi_script),
        node_version=node_version,
        pi_version=pi_version,
        source="path",
    )


def _bin_entry(manifest: Mapping[str, Any]) -> str:
    entry = manifest.get("bin")
    if isinstance(entry, dict) and isinstance(entry.get("pi"), str):
        return str(entry["pi"])
    if isinstance(entry, str):
        return entry
    return "dist/cli.js"


def _is_node_script(path: Path) -> bool:
    if path.suffix in (".js", ".mjs", ".cjs"):
        return path.is_file()
    try:
        with path.open("rb") as handle:
            first_line = handle.readline(256)
    except OSError:
        return False
    return first_line.startswith(b"#!") and b"node" in first_line


def _node_version(node: str) -> str | None:
    output = _run_version([node, "--version"], None)
    return _version_in(output)


def _pi_version(node: str, pi_script: str, environ: Mapping[str, str]) -> str | None:
    # `pi --version` creates nothing when Pi's agent dir is isolated; never let it touch ~/.pi.
    with tempfile.TemporaryDirectory(prefix="pi-squad-version-") as agent_dir:
        env = dict(environ)
        env.update(
            PI_CODING_AGENT_DIR=agent_dir,
            PI_OFFLINE="1",
            PI_SKIP_VERSION_CHECK="1",
            PI_TELEMETRY="0",
        )
        output = _run_version([node, pi_script, "--version"], env)
    return _version_in(output)


def _run_version(argv: list[str], env: Mapping[str, str] | None) -> str | None:
    try:
        completed = subprocess.run(
            argv,
            capture_output=True,
            timeout=VERSION_TIMEOUT_SECONDS,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if completed.returncode != 0:
        return None
    return completed.stdout.decode("utf-8", "replace")


_VERSION = re.compile(r"v?(\d+\.\d+\.\d+)")


def _version_in(output: str | None) -> str | None:
    match = _VERSION.search(output or "")
    return match.group(1) if match else None


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3])


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        decoded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return decoded if isinstance(decoded, dict) else None


def _read_records(stream: IO[bytes], records: queue.Queue[dict[str, Any] | None]) -> None:
    """Pi's stdout as JSON records, split on ``\\n`` only (Pi writes U+2028/U+2029 raw)."""
    buffer = b""
    read = getattr(stream, "read1", stream.read)
    try:
        while True:
            chunk = read(65536)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if isinstance(record, dict):
                        records.put(record)
    finally:
        records.put(None)


def _drain(stream: IO[bytes], chunks: list[bytes]) -> None:
    while True:
        chunk = stream.read(65536)
        if not chunk:
            return
        chunks.append(chunk)


def _mentions_failure(stderr: str, extension: Path) -> bool:
    lowered = stderr.lower()
    names = (str(extension).lower(), extension.name.lower())
    return "failed to load extension" in lowered or (
        any(name in lowered for name in names) and ("error" in lowered or "fail" in lowered)
    )


def _first_lines(text: str, limit: int = 3) -> str:
    return " | ".join(line for line in text.splitlines()[:limit] if line.strip())
