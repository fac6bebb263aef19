"""The code no write grant of a confined child may reach (``domain.isolation.ProtectedPath``).

A confined child may write its project. A project that holds pi-squad's own virtual
environment, a pi-squad checkout or the Pi runtime would let a child rewrite the code that
starts the next child (before that child is confined) and that the operator's own
``pi-squad`` runs. What is gathered, from this process and from how children start:

- pi-squad's own packages and the extension every child loads (``-e``);
- the Python running pi-squad: the interpreter's real path, its virtual environment
  (``sys.prefix`` when it is one), the standard library and site-packages directories, and
  every other import path entry (a module or ``.pth`` file added there would run in
  pi-squad). The script's own entry (``sys.path[0]``: ``pi-squad`` puts its ``bin`` directory
  there, ``python -m`` the working directory) is not one: the bridge runs with ``-P``;
- the Pi runtime: each file of the command prefix (Node, Pi's ``cli.js``), the ``node_modules``
  tree each lies in (where Pi resolves its dependencies) and the runtime directory
  (``PI_SQUAD_RUNTIME_DIR``, as the runtime was given it, else a checkout's ``.runtime``);
- the bridge every child's extension starts (``PI_SQUAD_BRIDGE``'s executable, and the virtual
  environment it belongs to).

Every path is resolved (symbolic links followed), as the kernel resolves a rule's path: a link
inside the project to a runtime elsewhere grants nothing of the runtime.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import sysconfig
from collections.abc import Iterator, Mapping, Sequence

from adapters.pi_runtime import ISOLATED_INSTALL, TOP_LEVEL_PACKAGES, runtime_dir
from domain.isolation import ProtectedPath

BRIDGE_VARIABLE = "PI_SQUAD_BRIDGE"
PYTHON_REMEDY = (
    f"install pi-squad outside the project with {ISOLATED_INSTALL}, or move the project's "
    "virtual environment out of the project, and run that pi-squad"
)
PI_REMEDY = (
    "keep the Pi runtime outside the project: export PI_SQUAD_RUNTIME_DIR=<a directory "
    "outside it> and run scripts/install-runtime, or install pi-squad outside the project "
    f"with {ISOLATED_INSTALL}"
)
BRIDGE_REMEDY = f"point {BRIDGE_VARIABLE} at a pi-squad installed outside the project, or unset it"
LIBRARY_PATHS = ("stdlib", "platstdlib", "purelib", "platlib")


def protected_code(
    *,
    pi_prefix: Sequence[str],
    extension: str | None,
    environ: Mapping[str, str],
    runtime_override: str | None,
) -> tuple[ProtectedPath, ...]:
    """Everything above, each path once (with its first, most specific, description).
    ``environ``: the children's (its ``PATH``, the ``PI_SQUAD_BRIDGE`` they are given);
    ``runtime_override``: ``PI_SQUAD_RUNTIME_DIR`` as given."""
    found: dict[str, ProtectedPath] = {}
    gathered = (
        *_pi_squad(extension),
        *_python(),
        *_pi_runtime(pi_prefix, environ, runtime_override),
        *_bridge(environ),
    )
    for code in gathered:
        found.setdefault(code.path, code)
    return tuple(found.values())


def _existing(path: str) -> str | None:
    resolved = os.path.realpath(path)
    return resolved if os.path.exists(resolved) else None


def _python() -> Iterator[ProtectedPath]:
    interpreter = _existing(sys.executable)
    if interpreter is not None:
        yield ProtectedPath(interpreter, "the Python interpreter running pi-squad", PYTHON_REMEDY)
    if sys.prefix != sys.base_prefix:
        venv = _existing(sys.prefix)
        if venv is not None:
            yield ProtectedPath(venv, "the virtual environment pi-squad runs in", PYTHON_REMEDY)
    library = sysconfig.get_paths()
    for key in LIBRARY_PATHS:
        directory = _existing(library[key]) if key in library else None
        if directory is not None:
            yield ProtectedPath(
                directory, "a library directory of pi-squad's Python", PYTHON_REMEDY
            )
    entries = sys.path if sys.flags.safe_path else sys.path[1:]
    for entry in entries:
        directory = _existing(entry) if entry else None
        if directory is not None and os.path.isdir(directory):
            yield ProtectedPath(directory, "a directory pi-squad imports from", PYTHON_REMEDY)


def _pi_squad(extension: str | None) -> Iterator[ProtectedPath]:
    for name in TOP_LEVEL_PACKAGES:
        for location in importlib.import_module(name).__path__:
            directory = _existing(location)
            if directory is not None:
                yield ProtectedPath(directory, f"pi-squad's own code ({name})", PYTHON_REMEDY)
    if extension is not None:
        directory = _existing(extension)
        if directory is not None:
            yield ProtectedPath(directory, "the Pi extension every child loads", PYTHON_REMEDY)


def _pi_runtime(
    prefix: Sequence[str], environ: Mapping[str, str], runtime_override: str | None
) -> Iterator[ProtectedPath]:
    for item in prefix:
        located = item if os.path.isabs(item) else shutil.which(item, path=environ.get("PATH"))
        found = _existing(located) if located is not None else None
        if found is None or not os.path.isfile(found):
            continue  # an option of the prefix, not a file
        yield ProtectedPath(found, "a file every child's Pi starts from", PI_REMEDY)
        modules = _node_modules(found)
        if modules is not None:
            yield ProtectedPath(modules, "the node_modules tree of the Pi runtime", PI_REMEDY)
    directory = runtime_dir(None, runtime_override)
    resolved = _existing(str(directory)) if directory is not None else None
    if resolved is not None:
        yield ProtectedPath(resolved, "the Pi runtime directory", PI_REMEDY)


def _node_modules(path: str) -> str | None:
    """The outermost ``node_modules`` directory ``path`` lies in."""
    parts = path.split(os.sep)
    if "node_modules" not in parts:
        return None
    return os.sep.join(parts[: parts.index("node_modules") + 1]) or None


def _bridge(environ: Mapping[str, str]) -> Iterator[ProtectedPath]:
    try:
        argv = json.loads(environ.get(BRIDGE_VARIABLE, "null"))
    except ValueError:
        return  # unusable: every child's bridge fails to start, and says so
    if not isinstance(argv, list) or not argv or not isinstance(argv[0], str) or not argv[0]:
        return
    command = argv[0]
    located = command if os.path.isabs(command) else shutil.which(command, path=environ.get("PATH"))
    if located is None:
        return
    executable = _existing(located)
    if executable is not None:
        yield ProtectedPath(executable, "the bridge every child starts", BRIDGE_REMEDY)
    # A virtual environment's ``bin/python`` links to the base interpreter: the environment is
    # the one the link is in, not the one it points to.
    home = os.path.dirname(os.path.dirname(os.path.abspath(located)))
    if os.path.isfile(os.path.join(home, "pyvenv.cfg")):
        venv = _existing(home)
        if venv is not None:
            yield ProtectedPath(venv, "the virtual environment of the bridge", BRIDGE_REMEDY)
