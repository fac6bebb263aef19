"""``bench.bytecode``: the child-start benchmark's headline rows run pi-squad as installed only
when the install's bytecode is really there, and its cold condition really has none."""

from __future__ import annotations

import py_compile
import time
from pathlib import Path

import pytest

from bench import bytecode
from bench.common import REPO


def test_fresh_bytecode_is_told_from_missing_or_stale(tmp_path: Path) -> None:
    source = tmp_path / "module.py"
    source.write_text("VALUE = 1\n")
    assert not bytecode._fresh(source)  # nothing compiled
    py_compile.compile(str(source))
    assert bytecode._fresh(source)
    time.sleep(0.01)
    source.write_text("VALUE = 22\n")  # another size (and mtime): the cache is stale
    assert not bytecode._fresh(source)


def test_a_missing_module_makes_the_rows_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    sources = [Path("/nowhere/a.py"), Path("/nowhere/b.py")]
    monkeypatch.setattr(bytecode, "_sources", lambda: iter(sources))
    state = bytecode.installed_bytecode()
    assert state == {"modules": 2, "fresh": 0, "complete": False}
    assert "NOT installed" in bytecode.installed_note(state)
    assert bytecode.installed_note({"modules": 2, "fresh": 2, "complete": True}) == ""


def test_every_pi_squad_package_and_bridge_dependency_is_checked() -> None:
    sources = list(bytecode._sources())
    assert REPO / "entrypoints" / "bridge.py" in sources
    assert REPO / "adapters" / "bridge" / "server.py" in sources
    assert any(path.parent.name == "fasteners" for path in sources)
    assert any(path.parent.name == "attr" for path in sources)


def test_the_cold_prefix_keeps_the_standard_library_alone(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    stdlib = prefix / "usr" / "lib" / "python3.11" / "json.cpython-311.pyc"
    ours = prefix / REPO.relative_to(REPO.anchor) / "domain" / "paths.cpython-311.pyc"

    def warm(env: dict[str, str]) -> None:
        assert env["PYTHONPYCACHEPREFIX"] == str(prefix)
        assert "PYTHONDONTWRITEBYTECODE" not in env  # the warming start writes
        for path in (stdlib, ours):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"pyc")

    env = bytecode.cold_environment({"PYTHONDONTWRITEBYTECODE": "1", "A": "b"}, prefix, warm)
    assert env == {
        "A": "b",
        "PYTHONPYCACHEPREFIX": str(prefix),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    assert stdlib.exists()
    assert not ours.exists()
