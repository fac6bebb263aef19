"""Finding the Node + Pi 0.80.10 runtime and starting Pi with it.

Pi 0.80.10 needs Node >= 22.19. The project installs both into ``<repo>/.runtime`` with
``make runtime`` (``scripts/install-runtime``); ``PI_SQUAD_RUNTIME_DIR`` points elsewhere (the
entrypoint's ``Settings`` reads it and passes it here as ``runtime_override``). A
user's own ``pi`` on ``PATH`` is accepted only when it reports 0.80.10 and runs under a Node
>= 22.19. Pi is always started as ``[node, --disable-sigusr1, <pi cli.js>]``: ``PATH`` does not
choose the Node, and no other process can open the inspector of a Pi's Node with SIGUSR1 (it
would evaluate any code sent to 127.0.0.1:9229 inside that Pi, between a child and its
parent's pipe).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from domain.pi_version import PI_VERSION

PI_PACKAGE = "@earendil-works/pi-coding-agent"
MIN_NODE = (22, 19, 0)
NODE_FLAGS = ("--disable-sigusr1",)
"""Node >= 22.14: SIGUSR1 no longer opens the inspector (its default action, ending the
process, applies instead)."""
INSTALL_COMMAND = "make runtime (or scripts/install-runtime)"
VERSION_TIMEOUT_SECONDS = 30.0

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
    """The nearest directory holding ``pyproject.toml`` at or above ``start`` (this package)."""
    here = Path(start) if start is not None else Path(__file__).resolve().parent
    for directory in (here, *here.parents):
        if (directory / "pyproject.toml").is_file():
            return directory
    return None


def runtime_dir(
    repo_root: str | os.PathLike[str] | None, runtime_override: str | None
) -> Path | None:
    """``runtime_override`` (``PI_SQUAD_RUNTIME_DIR``) when set and non-empty, else the
    checkout's ``.runtime`` (``repo_root``, else this package's checkout)."""
    if runtime_override:
        return Path(runtime_override)
    root = Path(repo_root) if repo_root is not None else detect_repo_root()
    return root / ".runtime" if root is not None else None


def locate_runtime(
    repo_root: str | None, environ: Mapping[str, str], *, runtime_override: str | None
) -> PiRuntime:
    """The project's runtime (in ``runtime_dir``) if usable, else a suitable ``pi`` on
    ``environ``'s ``PATH``; raises otherwise."""
    found: list[str] = []
    directory = runtime_dir(repo_root, runtime_override)
    if directory is not None:
        runtime = _project_runtime(directory, found)
        if runtime is not None:
            return runtime
    runtime = _path_runtime(environ, found)
    if runtime is not None:
        return runtime
    raise PiRuntimeUnavailable(found)


def pi_command(runtime: PiRuntime) -> list[str]:
    """The argv prefix that starts Pi with the right Node, whatever ``PATH`` says, and with
    :data:`NODE_FLAGS`."""
    return [runtime.node_path, *NODE_FLAGS, runtime.pi_path]


def pi_isolation_variables(agent_dir: str | os.PathLike[str]) -> dict[str, str]:
    """The variables that keep a Pi's config and state in ``agent_dir`` (never ``~/.pi``) and
    keep it offline: no version check, no telemetry."""
    return {
        "PI_CODING_AGENT_DIR": os.fspath(agent_dir),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }


def pi_environment(
    base_env: Mapping[str, str], agent_dir: str | os.PathLike[str], runtime: PiRuntime
) -> dict[str, str]:
    """``base_env`` plus Pi's isolation variables, with the runtime's Node first on ``PATH``.

    ``PI_CODING_AGENT_DIR`` keeps all Pi config and state out of ``~/.pi``; Pi's own child
    processes (its ``bash`` tool, extensions spawning ``node``) find the same Node first.
    """
    env = {**base_env, **pi_isolation_variables(agent_dir)}
    node_bin = str(Path(runtime.node_path).parent)
    rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != node_bin]
    env["PATH"] = os.pathsep.join([node_bin, *rest])
    return env


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
        env = {**environ, **pi_isolation_variables(agent_dir)}
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
