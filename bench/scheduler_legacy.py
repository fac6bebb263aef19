"""The inline (legacy) squad of ``bench.scheduler``: the same DAG with no spec, so settlement
needs no attestation; its drive is the file squad's floor in the same round."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from adapters.store.json_records import JsonSquadCodec
from bench.workspace import task_ids
from domain.spec.model import SquadConfig
from domain.squad.model import Squad, SquadStatus, Task, TaskStatus

LEGACY_ID = "legacy-bench-squad"


def write_legacy(root: Path, project: Path, tasks: int, concurrency: int) -> Path:
    from bench.workspace import _dependencies

    created = datetime.now(UTC).replace(microsecond=0)
    squad = Squad(
        id=LEGACY_ID,
        goal="Benchmark the scheduler.",
        status=SquadStatus.RUNNING,
        created=created,
        cwd=str(project),
        config=SquadConfig(max_concurrency=concurrency, auto_unblock=True, max_retries=2),
        task_ids=tuple(task_ids(tasks)),
    )
    codec = JsonSquadCodec()
    squad_dir = root / LEGACY_ID
    squad_dir.mkdir(parents=True)
    (squad_dir / "squad.json").write_bytes(codec.encode_squad(squad))
    for index, task_id in enumerate(task_ids(tasks)):
        depends = tuple(_dependencies(index, tasks))
        task = Task(
            id=task_id,
            title=f"Task {task_id}",
            description="Do it and run the tests.",
            agent="backend",
            status=TaskStatus.BLOCKED if depends else TaskStatus.PENDING,
            depends=depends,
            created=created,
        )
        (squad_dir / task_id).mkdir()
        (squad_dir / ".records" / task_id).mkdir(parents=True)
        (squad_dir / ".records" / task_id / "task.json").write_bytes(codec.encode_task(task))
    return squad_dir
