"""Agent files written into real directories, the catalogue loaded from them, and what the tests
compare it by."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters.catalogue.agent_files import load_agent_catalog
from domain.agents import AgentCatalog, AgentFileProblem

BUNDLED_NAMES = [
    "architect",
    "backend",
    "debugger",
    "devops",
    "docs",
    "frontend",
    "fullstack",
    "planner",
    "qa",
    "researcher",
    "reviewer",
    "security",
]
VERDICT_LINES = ("## Verdict: PASS", "## Verdict: PASS WITH ISSUES", "## Verdict: FAIL")


def agent_json(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "role": f"{name} role", "description": "d", "prompt": "p", **fields}


def write_agent(directory: Path, file_name: str, document: dict[str, Any] | bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name
    path.write_bytes(document if isinstance(document, bytes) else json.dumps(document).encode())
    return path


def snapshot(*roots: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under the roots with its mode, size and mtime: any write shows up."""
    state: dict[str, tuple[int, int, int]] = {}
    for root in roots:
        if not root.exists():
            state[str(root)] = (0, 0, 0)
            continue
        for path in [root, *root.rglob("*")]:
            info = path.lstat()
            state[str(path)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return state


def problem_for(problems: tuple[AgentFileProblem, ...], path: Path) -> AgentFileProblem:
    matching = [problem for problem in problems if problem.origin == str(path)]
    assert len(matching) == 1, problems
    return matching[0]


def catalog_for(tmp_path: Path) -> AgentCatalog:
    return load_agent_catalog(squad_root=str(tmp_path / "root"), cwd=str(tmp_path / "repo"))
