"""Builders of valid specification documents and squad records; tests change one thing at a
time."""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from domain.spec.model import SquadConfig
from domain.squad.model import Squad, SquadStatus, Task, TaskStatus

MOMENT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def squad_record(squad_id: str, **overrides: Any) -> Squad:
    """A running squad record with plain defaults and no tasks; ``overrides`` set its fields."""
    fields: dict[str, Any] = {
        "goal": "g",
        "status": SquadStatus.RUNNING,
        "created": MOMENT,
        "cwd": "/work",
        "config": SquadConfig(max_concurrency=1, auto_unblock=True, max_retries=0),
    }
    return Squad(id=squad_id, **{**fields, **overrides})


def task_record(task_id: str, **overrides: Any) -> Task:
    """A pending task record with plain defaults; ``overrides`` set its fields."""
    fields: dict[str, Any] = {
        "title": f"Task {task_id}",
        "description": "Do it.",
        "agent": "backend",
        "status": TaskStatus.PENDING,
        "depends": (),
        "created": MOMENT,
    }
    return Task(id=task_id, **{**fields, **overrides})


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
