"""Publishing real file squads for tests: specs with multibyte text on chunk boundaries, and
a squad published on the real disk."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from adapters.catalogue.agent_files import load_agent_catalog
from adapters.store.json_records import JsonSquadCodec
from adapters.store.lock import FastenersLockFactory
from application.canonical import CanonicalSpec
from application.child.role import chunk_metadata, compact_json
from application.ports import FileSystem, LockFactory
from application.squads.create_squad import PublishedSquad, Publisher, create_squad
from domain.child_environment import ChildEnvironment
from domain.chunks import CHUNK_BYTES
from tests.builders import encode, sha, spec_document, task
from tests.fakes.clock import FakeClock, SequentialIds
from tests.fakes.locks import FakeLockFactory
from tests.host_fs import host_file_system

MIXED = "aé€🙂"  # 1-, 2-, 3- and 4-byte characters


def multibyte_text(size: int) -> str:
    """About ``size`` UTF-8 bytes of text mixing every character width."""
    unit = f"{MIXED} verify the spec; ".encode()
    # Cutting bytes may split the last character; dropping that fragment keeps it UTF-8.
    return (unit * (size // len(unit) + 1))[:size].decode("utf-8", errors="ignore")


def multi_chunk_spec(chunks_wanted: int = 4) -> bytes:
    """A valid spec long enough for ``chunks_wanted`` chunks, multibyte text throughout."""
    per_task = min(120_000, (chunks_wanted * CHUNK_BYTES) // 3)
    tasks = [
        task("design", agent="architect", description=multibyte_text(per_task)),
        task("build", depends=["design"], description=multibyte_text(per_task)),
        task("qa", agent="qa", depends=["build"], description=multibyte_text(per_task)),
    ]
    agents = {name: {"model": None, "thinking": None} for name in ("architect", "backend", "qa")}
    return encode(spec_document(goal=f"Ship {MIXED}", tasks=tasks, agents=agents))


def publish(
    fs: FileSystem,
    root: str,
    data: bytes,
    *,
    cwd: str,
    locks: LockFactory | None = None,
    clock: FakeClock | None = None,
) -> PublishedSquad:
    spec_path = os.path.join(cwd, "squad-spec.json")
    publisher = Publisher(
        fs=fs,
        locks=locks or FakeLockFactory(),
        clock=clock or FakeClock(),
        ids=SequentialIds(),
        codec=JsonSquadCodec(),
        squad_root=root,
    )
    catalog = load_agent_catalog(squad_root=root, cwd=cwd)
    return create_squad(publisher, catalog, spec_file=spec_path, spec_sha256=sha(data), cwd=cwd)


def publish_on_disk(base: Path, data: bytes) -> PublishedSquad:
    """``data`` as ``base/project/squad-spec.json``, published under ``base/root`` on the host's
    file system with real locks: a squad a real bridge or a real Pi can work on."""
    project = base / "project"
    project.mkdir()
    (project / "squad-spec.json").write_bytes(data)
    return publish(
        host_file_system(),
        str(base / "root"),
        data,
        cwd=str(project),
        locks=FastenersLockFactory(),
    )


def child_environment(published: PublishedSquad, task_id: str) -> Mapping[str, str]:
    """The §6 variables, as the scheduler derives them from persisted state."""
    assert published.squad.spec is not None
    return ChildEnvironment.for_task(published.squad, task_id).to_environ()


def reader_texts(published: PublishedSquad, task_id: str, index: int) -> tuple[str, str]:
    """The two text blocks of a successful ``squad_spec_read`` result, as the child returns them."""
    assert published.validated is not None
    canonical = CanonicalSpec(data=published.validated.raw, table=published.validated.chunks)
    metadata = chunk_metadata(published.squad.id, task_id, canonical, index)
    return compact_json(metadata), canonical.chunk_text(index)


# New-task objects every input path refuses with TASK_INPUT_INVALID (``pi-squad modify
# --task-json`` and the main Pi's ``squad_modify`` add_task alike), and what the message names.
_TASK: dict[str, object] = {"id": "x", "title": "t", "agent": "backend"}
BAD_NEW_TASKS: tuple[tuple[dict[str, object], str], ...] = (
    ({**_TASK, "colour": "red"}, "unknown key"),
    ({"id": "x", "title": "t"}, "missing required key(s): agent"),
    ({**_TASK, "depends": "design"}, "depends' must be an array"),
    ({**_TASK, "depends": ["a", 3]}, "depends[1]' must be a string"),
    ({**_TASK, "inheritContext": "yes"}, "inheritContext' must be a boolean"),
    ({**_TASK, "id": 7}, "id' must be a string"),
    ({**_TASK, "forkFromTask": None}, "forkFromTask' must be a string"),
)
