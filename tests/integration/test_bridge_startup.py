"""What a child's bridge loads before it answers: every child Pi process waits for its bridge's
``hello`` and ``session_start`` before its session starts, so the modules imported until then
are start-up paid per task (``bench.child_start``). These are import-set checks, not timings:
they fail when a heavy module comes back onto that path."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import application.ports
from entrypoints.children import bridge_command
from tests.integration.bridge_once import Request, serve_once
from tests.squads import child_environment, multi_chunk_spec, publish_on_disk

# Not needed to serve a child; each once cost its bridge milliseconds (``-X importtime``).
HEAVY = (
    "dependency_injector",  # the containers: the child role is wired by hand
    "asyncio",  # imported by dependency_injector
    "jsonschema",  # spec validation: a child only verifies canonical bytes
    "cattrs",  # the store's codec
    "rich",  # the command line's output
    "argparse",  # the shim always passes exactly --role <role>
    "importlib.resources",  # the reader's schema is read with pkgutil.get_data
    "shutil",  # only remove_tree needs it (no child removes a tree)
    "ctypes",  # only the kernel's no-replace rename needs it (bound at its first use)
    "entrypoints.bridge_container",
    "entrypoints.main_bridge_container",
    "application.ports.store",  # and through it the squad model and layout
    "domain.squad.model",
    "domain.spec.model",
)


def _serve_child(environ: dict[str, str], cwd: Path) -> tuple[list[dict[str, object]], set[str]]:
    """The bridge process as the shim starts it, fed a child's first requests; its answers and
    the modules it had loaded when its input ended."""
    report = (
        "import atexit, json, sys; atexit.register(lambda: sys.stderr.write("
        "'\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')); "
        "from entrypoints.bridge import main; raise SystemExit(main(['--role', 'child']))"
    )
    requests: list[Request] = [
        ("hello", {"role": "child"}),
        ("session_start", {}),
        ("tool_call", {"toolCallId": "c1", "toolName": "bash", "input": {"command": "true"}}),
    ]
    completed = serve_once([bridge_command()[0], "-P", "-c", report], requests, environ, cwd)
    answers = [json.loads(line) for line in completed.stdout.splitlines()]
    marker = completed.stderr.rsplit("\nMODULES ", 1)[1]
    return answers, set(json.loads(marker))


def test_a_spec_childs_bridge_serves_without_the_heavy_modules(tmp_path: Path) -> None:
    published = publish_on_disk(tmp_path, multi_chunk_spec(2))
    environ = {**os.environ, **child_environment(published, "build")}
    answers, modules = _serve_child(environ, tmp_path)
    by_id = {answer["id"]: answer for answer in answers}
    assert by_id[1]["ok"] is True
    assert by_id[1]["result"]["role"] == "child-spec"  # type: ignore[index]
    assert by_id[2]["ok"] is True
    # Still closed: nothing was read yet, so the guard blocks anything but the reader.
    assert by_id[3]["result"]["block"] is True  # type: ignore[index]
    assert sorted(name for name in HEAVY if name in modules) == []


def test_a_legacy_childs_bridge_serves_without_the_heavy_modules(tmp_path: Path) -> None:
    environ = {key: value for key, value in os.environ.items() if not key.startswith("PI_SQUAD")}
    environ["PI_SQUAD_CHILD"] = "1"
    answers, modules = _serve_child(environ, tmp_path)
    assert answers[0]["result"]["role"] == "child-legacy"  # type: ignore[index]
    assert sorted(name for name in HEAVY if name in modules) == []
    # Nothing to read: neither the reader and ledger nor the attestation model nor the locks.
    spec_machinery = (
        "application.child.role",
        "application.spec_reads",
        "domain.attestation",
        # Nor the bash-ro screen: only a bash-ro flow child imports it.
        "application.child.readonly_bash",
        "domain.flows.bash_readonly",
    )
    assert sorted(name for name in spec_machinery if name in modules) == []
    assert "fasteners" not in modules
    # Formatted on a failure only (a spec child loads it with fasteners' logging anyway).
    assert "traceback" not in modules


def test_every_port_is_found_by_its_lazy_package() -> None:
    """``application.ports`` loads its modules on first use: every name each module exports
    resolves to that module's object, and no two modules export one name (the first found
    would win)."""
    on_disk = {info.name for info in pkgutil.iter_modules(application.ports.__path__)}
    assert on_disk == set(application.ports._MODULES)  # a new port module must be listed there
    seen: dict[str, str] = {}
    for module_name in sorted(on_disk):
        module = importlib.import_module(f"application.ports.{module_name}")
        for name in module.__all__:
            assert name not in seen, f"{name} is exported by {seen.get(name)} and {module_name}"
            seen[name] = module_name
            assert getattr(application.ports, name) is getattr(module, name)
    assert set(seen) <= set(dir(application.ports))


def test_a_childs_bridge_imports_no_port_module_it_does_not_use() -> None:
    probe = (
        "import json, sys, entrypoints.bridge; "
        "print(json.dumps([m for m in sys.modules if m.startswith('application.ports.')]))"
    )
    completed = subprocess.run(
        [sys.executable, "-P", "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded = {name.removeprefix("application.ports.") for name in json.loads(completed.stdout)}
    assert loaded <= {"pi_events", "system", "filesystem"}
