"""The bridge command the parent hands to every child runs pi-squad's own bridge, whatever
packages the child's working directory (the user's project, writable by children) holds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from entrypoints.children import bridge_command

HOSTILE = "raise SystemExit('imported from the project directory')\n"


def test_bridge_ignores_packages_in_its_working_directory(tmp_path: Path) -> None:
    for package in ("domain", "application", "adapters", "entrypoints"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(HOSTILE)
    (tmp_path / "entrypoints" / "bridge.py").write_text(HOSTILE)
    hello = json.dumps({"v": 1, "id": 1, "method": "hello", "params": {"role": "main"}})
    answer = subprocess.run(
        [*bridge_command(), "--role", "main"],
        input=hello + "\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert "imported from the project directory" not in answer.stderr
    first = json.loads(answer.stdout.splitlines()[0])
    assert first["ok"] is True, answer.stdout + answer.stderr
    assert first["result"]["role"] == "main"
