"""Which bytecode a child's bridge starts from, for ``bench.child_start``.

* ``installed_bridge_argv``: what the shim runs in an installed pi-squad, the ``pi-squad``
  console script beside this interpreter (``.venv/bin/pi-squad`` of a checkout);
* ``installed_bytecode``: whether the install left fresh bytecode for every module of
  pi-squad's packages and of the dependencies a child's bridge imports (``make setup``
  compiles both; ``uv sync`` alone compiles neither here);
* ``cold_environment``: an environment where none of those modules has bytecode while the
  standard library keeps its own, so every bridge start compiles pi-squad and its dependencies
  (what a checkout synced without the compile step costs under ``PYTHONDONTWRITEBYTECODE``).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.bridge_client import BRIDGE_ARGV
from bench.common import REPO, Json

PRODUCT_PACKAGES = ("domain", "application", "adapters", "entrypoints")
# The third-party packages a child's bridge imports (tests/integration/test_bridge_startup.py
# keeps the rest off its path).
BRIDGE_DEPENDENCIES = ("attr", "attrs", "fasteners")
_HEADER_BYTES = 16


def installed_bridge_argv() -> list[str]:
    script = Path(sys.executable).parent / "pi-squad"
    return [str(script), "bridge"] if script.is_file() else list(BRIDGE_ARGV)


def _sources() -> Iterator[Path]:
    for package in PRODUCT_PACKAGES:
        yield from sorted((REPO / package).rglob("*.py"))
    for name in BRIDGE_DEPENDENCIES:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            yield from sorted(Path(location).rglob("*.py"))


def _fresh(source: Path) -> bool:
    """The cached bytecode Python would load for ``source`` exists and matches it (the
    timestamp-based check the import system makes: magic, flags 0, mtime and size)."""
    try:
        cached = Path(importlib.util.cache_from_source(str(source)))
        with cached.open("rb") as handle:
            header = handle.read(_HEADER_BYTES)
        status = source.stat()
    except (OSError, ValueError, NotImplementedError):
        return False
    if len(header) != _HEADER_BYTES or header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    mtime = int.from_bytes(header[8:12], "little")
    size = int.from_bytes(header[12:16], "little")
    return (
        int.from_bytes(header[4:8], "little") == 0
        and mtime == int(status.st_mtime) & 0xFFFFFFFF
        and size == status.st_size & 0xFFFFFFFF
    )


def installed_bytecode() -> Json:
    sources = list(_sources())
    fresh = sum(1 for source in sources if _fresh(source))
    return {"modules": len(sources), "fresh": fresh, "complete": fresh == len(sources)}


def installed_note(state: Json) -> str:
    """What a row run "as installed" must say when the install's bytecode is not all there."""
    if state["complete"]:
        return ""
    return (
        f" [bytecode NOT installed here: {state['fresh']} of {state['modules']} modules compiled;"
        " run make setup]"
    )


def cold_environment(
    env: dict[str, str], prefix: Path, warm: Callable[[dict[str, str]], object]
) -> dict[str, str]:
    """``env`` with ``PYTHONPYCACHEPREFIX=prefix`` holding the standard library's bytecode
    alone, and nothing written: ``warm`` starts one bridge that fills the prefix, then the
    trees of this checkout (pi-squad, its virtual environment) and of site-packages go."""
    writing = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    writing["PYTHONPYCACHEPREFIX"] = str(prefix)
    warm(writing)
    purelib = Path(sysconfig.get_paths()["purelib"])
    for tree in {REPO, purelib, purelib.resolve()}:
        shutil.rmtree(prefix / tree.relative_to(tree.anchor), ignore_errors=True)
    return {**env, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"}
