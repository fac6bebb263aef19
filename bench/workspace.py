"""Deterministic benchmark inputs on the real file system, and squads published from them.

* ``make_artifacts``: ``count`` files of ``size`` bytes; file ``i`` holds
  ``random.Random(f"{seed}-{i}").randbytes(size)``, so content (and digests) are the same in
  every run; only the directory differs.
* ``build_spec``: a valid schema-1 spec of exactly ``target_bytes`` bytes: ``tasks`` tasks (the
  first half roots, each of the second half depending on two of them), every artifact
  referenced, descriptions of mixed 1- to 4-byte UTF-8 text (so chunk ends move back, as the
  contract's 1 MiB spec with 33 chunks requires), and the rest JSON whitespace. Text stays
  within the §4 limits (cumulative text <= 512 KiB, no long Base64-like runs).
* ``publish``: ``create_squad`` with the real adapters (POSIX file system, fasteners locks, the
  system clock), exactly what ``pi-squad create`` wires.
* ``attest``: a complete attestation for one task, through the child role (reader, finalised
  ``message_end``, commit), as a real child produces it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from dependency_injector import providers

from adapters.catalogue.agent_files import load_agent_catalog
from adapters.system.clock import SystemClock
from application.attestation_check import AttestationAuditor
from application.child.role import READER_TOOL, SpecChildRole
from application.ports import FileSystem, Ids, LockFactory, Store, ToolResult
from application.squads.create_squad import PublishedSquad, Publisher, create_squad
from domain.agents import AgentCatalog
from domain.attestation.grounding import DeliveryObserved, SpawnObserved
from domain.child_environment import ChildEnvironment
from domain.chunks import CHUNK_BYTES, ChunkTable
from domain.spec.limits import MAX_CUMULATIVE_TEXT_BYTES, MAX_DESCRIPTION_BYTES
from domain.squad.model import SessionBinding
from entrypoints.bridge_container import BridgeContainer
from entrypoints.concerns.system import SystemAdapters
from entrypoints.container import CliContainer
from tests.support.containers import override_system

MIXED_UNIT = "aé€🙂 verify the spec before acting; ".encode()
SPEC_NAME = "squad-spec.json"
KIB = 1024
MIB = 1024 * 1024


@attrs.frozen
class ArtifactFile:
    id: str
    path: str
    sha256: str
    bytes: int


def make_artifacts(
    directory: Path, count: int, size: int, *, seed: str = "pi-squad"
) -> list[ArtifactFile]:
    directory.mkdir(parents=True, exist_ok=True)
    made: list[ArtifactFile] = []
    for i in range(count):
        data = random.Random(f"{seed}-{size}-{i}").randbytes(size)
        path = directory / f"a{i:04d}.bin"
        path.write_bytes(data)
        made.append(
            ArtifactFile(
                id=f"a{i:04d}", path=str(path), sha256=hashlib.sha256(data).hexdigest(), bytes=size
            )
        )
    return made


def multibyte_text(size: int) -> str:
    """At most ``size`` UTF-8 bytes of mixed-width text (whole code points only)."""
    raw = (MIXED_UNIT * (size // len(MIXED_UNIT) + 1))[:size]
    return raw.decode("utf-8", errors="ignore")


def task_ids(count: int) -> list[str]:
    return [f"t{i:03d}" for i in range(count)]


def _dependencies(index: int, count: int) -> list[str]:
    """Two-layer DAG: the first ``ceil(count/2)`` tasks are roots; task ``half + j`` depends on
    roots ``j`` and ``j + 1`` (mod the number of roots)."""
    roots = (count + 1) // 2
    if index < roots:
        return []
    j = index - roots
    ids = task_ids(count)
    first, second = j % roots, (j + 1) % roots
    return [ids[first]] if first == second else [ids[first], ids[second]]


def _document(
    *,
    tasks: int,
    artifacts: Sequence[ArtifactFile],
    description_bytes: int,
    max_concurrency: int,
    agent: str,
) -> dict[str, Any]:
    ids = task_ids(tasks)
    refs: list[list[str]] = [[] for _ in range(tasks)]
    for position, artifact in enumerate(artifacts):
        refs[position % tasks].append(artifact.id)
    return {
        "schemaVersion": 1,
        "goal": "Benchmark the attestation contract at its limits.",
        "tasks": [
            {
                "id": task_id,
                "title": f"Task {task_id}",
                "description": multibyte_text(description_bytes),
                "agent": agent,
                "depends": _dependencies(i, tasks),
                "inheritContext": False,
                "artifactRefs": refs[i],
            }
            for i, task_id in enumerate(ids)
        ],
        "agents": {agent: {"model": None, "thinking": None}},
        "config": {
            "maxConcurrency": max_concurrency,
            "autoUnblock": True,
            "maxRetries": 2,
        },
        "artifacts": [
            {
                "id": a.id,
                "path": a.path,
                "sha256": a.sha256,
                "bytes": a.bytes,
                "purpose": f"benchmark input {a.id}",
            }
            for a in artifacts
        ],
    }


def _encode(document: Mapping[str, Any]) -> bytes:
    return (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _text_bytes(document: Mapping[str, Any]) -> int:
    total = len(document["goal"].encode())
    for task in document["tasks"]:
        total += len(task["title"].encode()) + len(task["description"].encode())
    for artifact in document["artifacts"]:
        total += len(artifact["purpose"].encode())
    return total


def build_spec(
    target_bytes: int,
    *,
    tasks: int,
    artifacts: Sequence[ArtifactFile] = (),
    max_concurrency: int = 64,
    agent: str = "backend",
    text_share: float = 0.45,
) -> bytes:
    """Exactly ``target_bytes`` of valid spec; raises ``ValueError`` if they cannot hold it."""
    concurrency = max(1, min(max_concurrency, tasks, 64))
    document_with = functools.partial(
        _document, tasks=tasks, artifacts=artifacts, max_concurrency=concurrency, agent=agent
    )
    skeleton = document_with(description_bytes=0)
    base = len(_encode(skeleton))
    if base > target_bytes:
        raise ValueError(f"{tasks} tasks and {len(artifacts)} artifacts need {base} bytes")
    text_room = MAX_CUMULATIVE_TEXT_BYTES - _text_bytes(skeleton) - 1024
    wanted = min(int(target_bytes * text_share), target_bytes - base, text_room)
    per_task = max(0, min(MAX_DESCRIPTION_BYTES, wanted // tasks))
    document = document_with(description_bytes=per_task)
    body = _encode(document)
    room = target_bytes - len(body)
    if room < 0:
        raise ValueError("the spec outgrew its target")
    # Padding is JSON whitespace; moving one byte of it in front of the document shifts every
    # chunk end, so a size that is a multiple of the chunk size still gets moved-back ends.
    for lead in range(64):
        if lead > room:
            break
        data = b" " * lead + body + _padding(room - lead)
        table = ChunkTable.of(data)
        if target_bytes % CHUNK_BYTES or table.chunk_count > target_bytes // CHUNK_BYTES:
            return data
    return data


def _padding(size: int) -> bytes:
    line = b" " * 127 + b"\n"
    full, rest = divmod(size, len(line))
    return line * full + b" " * rest


# -- publishing -----------------------------------------------------------------------------------


@attrs.frozen
class Adapters:
    fs: FileSystem
    locks: LockFactory
    clock: SystemClock
    ids: Ids

    @classmethod
    def real(cls) -> Adapters:
        """The system adapters every production root uses."""
        system = SystemAdapters()
        return cls(fs=system.fs(), locks=system.locks(), clock=system.clock(), ids=system.ids())


def write_spec(project: Path, data: bytes) -> Path:
    project.mkdir(parents=True, exist_ok=True)
    path = project / SPEC_NAME
    path.write_bytes(data)
    return path


def container_for(adapters: Adapters, root: Path, store: Store | None = None) -> CliContainer:
    """The production composition root over the bench's adapters and squad root."""
    container = CliContainer()
    override_system(container, {"PI_SQUAD_ROOT": str(root)}, adapters)
    if store is not None:
        container.store.override(providers.Object(store))
    return container


def publisher_for(adapters: Adapters, root: Path) -> Publisher:
    return container_for(adapters, root).use_cases().publisher()


def auditor_for(adapters: Adapters, store: Store) -> AttestationAuditor:
    """The completion check over ``store``, on the bench's adapters."""
    return container_for(adapters, Path(store.root), store).use_cases().auditor()


def catalog_for(root: Path, project: Path) -> AgentCatalog:
    return load_agent_catalog(squad_root=str(root), cwd=str(project))


def create(
    publisher: Publisher, catalog: AgentCatalog, project: Path, sha256: str
) -> PublishedSquad:
    """``create_squad`` of ``project/squad-spec.json`` exactly as ``pi-squad create`` runs it."""
    return create_squad(
        publisher,
        catalog,
        spec_file=str(project / SPEC_NAME),
        spec_sha256=sha256,
        cwd=str(project),
    )


def publish(adapters: Adapters, root: Path, project: Path, data: bytes) -> PublishedSquad:
    """Create a squad from ``project/squad-spec.json`` (which must hold ``data``)."""
    return create(
        publisher_for(adapters, root),
        catalog_for(root, project),
        project,
        hashlib.sha256(data).hexdigest(),
    )


def child_environment(published: PublishedSquad, task_id: str) -> dict[str, str]:
    """The §6 variables, as the scheduler derives them from persisted state."""
    assert published.squad.spec is not None
    return ChildEnvironment.for_task(published.squad, task_id).to_environ()


def spec_role(adapters: Adapters, published: PublishedSquad, task_id: str) -> SpecChildRole:
    """The role a child of ``task_id`` runs: the child bridge's container over ``adapters``."""
    bridge = BridgeContainer()
    override_system(bridge, child_environment(published, task_id), adapters)
    role = bridge.child_events(bridge.process_role())
    if not isinstance(role, SpecChildRole):
        raise RuntimeError(f"the child environment does not make a spec child: {role}")
    return role


def tool_result_message(
    tool_call_id: str, result: ToolResult | Mapping[str, Any]
) -> dict[str, Any]:
    """The finalised tool-result message Pi emits with ``message_end`` for a reader call."""
    if isinstance(result, ToolResult):
        texts, details = list(result.texts), dict(result.details)
    else:
        texts, details = list(result["texts"]), dict(result["details"])
    return {
        "role": "toolResult",
        "toolCallId": tool_call_id,
        "toolName": READER_TOOL,
        "content": [{"type": "text", "text": text} for text in texts],
        "details": details,
        "isError": False,
        "timestamp": 0,
    }


def attest(adapters: Adapters, published: PublishedSquad, task_id: str) -> None:
    """Every chunk read and committed through the child role; the attestation is then complete."""
    role = spec_role(adapters, published, task_id)
    role.session_start()
    spec = published.squad.spec
    assert spec is not None
    store = container_for(adapters, Path(published.squad_dir).parent).store()
    session = f"{published.squad_dir}/{task_id}/session/bench.jsonl"
    # What Pi leaves of the session: its file, which an attestation is judged against.
    Path(session).parent.mkdir(exist_ok=True)
    Path(session).write_bytes(b'{"type":"session"}\n')
    with store.transaction(published.squad.id) as tx:
        tx.put_task(attrs.evolve(tx.tasks[task_id], session=SessionBinding(session)))
    # What the parent records watching its child (grounding), so validation pays its cost.
    store.record_observation(
        published.squad.id, task_id, SpawnObserved(at=adapters.clock.now(), child_id="bench")
    )
    for index in range(spec.chunk_count):
        call_id = f"{task_id}-pre-{index}"
        result = role.execute_tool(call_id, READER_TOOL, {"index": index})
        role.message_end(tool_result_message(call_id, result))
        store.record_observation(
            published.squad.id,
            task_id,
            DeliveryObserved(
                at=adapters.clock.now(),
                child_id="bench",
                session_file=session,
                tool_call_id=call_id,
                index=index,
                chunk_sha256=published.validated.chunks.chunk(index).sha256
                if published.validated
                else "",
            ),
        )
    role.context()  # Pi's event before its next model call: every delivery committed
    attestation = Path(published.squad_dir, task_id, "spec-read-attestation.json")
    if not attestation.is_file():
        raise RuntimeError(f"no attestation was written for {task_id}")


def inherited_environment() -> dict[str, str]:
    """This process's environment without any ``PI_SQUAD_*`` variable."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PI_SQUAD_")}
