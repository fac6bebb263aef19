"""Builders of valid specification documents; tests change one thing at a time."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any


def task(task_id: str, agent: str = "backend", **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": task_id,
        "title": f"Task {task_id}",
        "description": f"Do {task_id} and run the tests to verify it.",
        "agent": agent,
        "depends": [],
        "inheritContext": False,
        "artifactRefs": [],
    }
    base.update(overrides)
    return base


def spec_document(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schemaVersion": 1,
        "goal": "Ship a tested feature.",
        "tasks": [
            task("build"),
            task("qa", agent="qa", depends=["build"]),
        ],
        "agents": {
            "backend": {"model": None, "thinking": None},
            "qa": {"model": "some-model", "thinking": "low"},
        },
        "config": {"maxConcurrency": 2, "autoUnblock": True, "maxRetries": 2},
        "artifacts": [],
    }
    base.update(copy.deepcopy(overrides))
    return base


def encode(document: Any, *, indent: int | None = 2) -> bytes:
    return (json.dumps(document, indent=indent, ensure_ascii=False) + "\n").encode("utf-8")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def artifact(artifact_id: str, path: str, data: bytes, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": artifact_id,
        "path": path,
        "sha256": sha(data),
        "bytes": len(data),
        "purpose": f"context for {artifact_id}",
    }
    base.update(overrides)
    return base
