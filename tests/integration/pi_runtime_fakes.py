"""Fake Node + Pi runtimes for the runtime and ``doctor`` tests.

The fakes are shell scripts: a ``node`` that answers ``--version`` and, given a script and
``--version``, answers as Pi would; a ``pi`` whose shebang runs it under the ``node`` on PATH.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from adapters.pi_runtime import PI_PACKAGE, PI_VERSION, node_platform_package

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
