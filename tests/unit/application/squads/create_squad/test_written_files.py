"""``create_squad``: what the published squad holds (``squad-spec.json``, ``squad.json``, task
records, the canonical copy of the spec)."""

from __future__ import annotations

import json
from typing import Any

from tests.builders import sha, spec_document, task
from tests.fakes.publication import SQUAD_ROOT, MemoryPublication


def squad_json(world: MemoryPublication, squad_id: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(world.fs.read(f"{SQUAD_ROOT}/{squad_id}/squad.json"))
    return document


def task_json(world: MemoryPublication, squad_id: str, task_id: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(
        world.fs.read(f"{SQUAD_ROOT}/{squad_id}/.records/{task_id}/task.json")
    )
    return document


def test_squad_spec_has_exactly_the_contract_shape(world: MemoryPublication) -> None:
    _, data = world.write_spec(spec_document())
    published = world.create(data)
    squad_id = published.squad.id
    assert squad_json(world, squad_id)["spec"] == {
        "schemaVersion": 1,
        "sha256": sha(data),
        "bytes": len(data),
        "path": f"{SQUAD_ROOT}/{squad_id}/spec/spec.v1.json",
        "chunkBytes": 32768,
        "chunkCount": 1,
    }


def test_the_chunk_count_in_squad_spec_follows_the_chunk_algorithm(
    world: MemoryPublication,
) -> None:
    long_description = "é" * 40_000  # 80,000 bytes: three chunks
    _, data = world.write_spec(spec_document(tasks=[task("build", description=long_description)]))
    published = world.create(data)
    assert squad_json(world, published.squad.id)["spec"]["chunkCount"] == 3


def test_squad_json_carries_goal_cwd_agents_running_status_and_review_on_complete(
    world: MemoryPublication,
) -> None:
    published = world.publish(spec_document())
    document = squad_json(world, published.squad.id)
    assert document["id"] == published.squad.id
    assert document["goal"] == "Ship a tested feature."
    assert document["status"] == "running"
    assert document["cwd"] == world.cwd
    assert document["config"] == {
        "maxConcurrency": 2,
        "autoUnblock": True,
        "maxRetries": 2,
        "reviewOnComplete": True,
    }
    assert document["agents"] == {
        "backend": {"model": None, "thinking": None},
        "qa": {"model": "some-model", "thinking": "low"},
    }


def test_tasks_without_dependencies_are_pending_and_the_others_blocked(
    world: MemoryPublication,
) -> None:
    tasks = [
        task("design", agent="architect"),
        task("build", depends=["design"]),
        task("docs", agent="docs"),
        task("qa", agent="qa", depends=["build", "docs"]),
    ]
    agents = {name: {"model": None, "thinking": None} for name in ("architect", "backend", "docs")}
    agents["qa"] = {"model": None, "thinking": None}
    published = world.publish(spec_document(tasks=tasks, agents=agents))
    assert [t.id for t in published.tasks] == ["design", "build", "docs", "qa"]
    statuses = {t: task_json(world, published.squad.id, t)["status"] for t in ("design", "build")}
    statuses |= {t: task_json(world, published.squad.id, t)["status"] for t in ("docs", "qa")}
    assert statuses == {
        "design": "pending",
        "build": "blocked",
        "docs": "pending",
        "qa": "blocked",
    }
    qa = task_json(world, published.squad.id, "qa")
    assert (qa["agent"], qa["depends"], qa["title"]) == ("qa", ["build", "docs"], "Task qa")


def test_the_canonical_copy_is_the_source_bytes_exactly(world: MemoryPublication) -> None:
    # insignificant whitespace and no final newline: kept as they are, never reserialised
    data = json.dumps(spec_document(), indent=7).encode() + b"\n\n  "
    world.fs.add_file(f"{world.cwd}/spec.json", data)
    published = world.create(data)
    assert published.squad.spec is not None
    assert world.fs.read(published.squad.spec.path) == data


def test_the_canonical_copy_is_created_exclusively_0600_then_read_only_before_the_rename(
    world: MemoryPublication,
) -> None:
    published = world.publish(spec_document())
    calls = world.fs.calls
    [create] = [
        c
        for c in calls
        if c.operation == "create_file_exclusive" and c.path.endswith("/spec/spec.v1.json")
    ]
    [mark] = [c for c in calls if c.operation == "mark_read_only"]
    [rename] = [c for c in calls if c.operation == "rename_no_replace"]
    assert create.path.endswith("/spec/spec.v1.json")
    assert create.mode == 0o600
    assert mark.path == create.path
    assert calls.index(create) < calls.index(mark) < calls.index(rename)
    assert published.squad.spec is not None
    assert world.fs.mode(published.squad.spec.path) == 0o400


def test_the_canonical_copy_is_verified_against_the_hash_before_it_is_published(
    world: MemoryPublication,
) -> None:
    world.publish(spec_document())
    operations = world.fs.operations()
    reads = [c for c in world.fs.calls_of("read_stable") if c.path.endswith("/spec.v1.json")]
    assert len(reads) == 1
    assert world.fs.calls.index(reads[0]) < operations.index("rename_no_replace")
