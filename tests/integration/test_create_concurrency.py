"""Concurrent ``create`` of one spec (issue 3): every creator gets its own squad, none is merged
into or overwritten, and nothing is left in staging.

Eight real processes import the CLI, report ready, wait for one start file, then run
``pi-squad create`` at the same moment: they derive the same base ID in the same millisecond,
so they collide on the ID, on the suffix, and in the staging sweep of each other's work.
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters.store.json_records import JsonSquadCodec
from application.list_squads import list_squads
from tests.builders import spec_document
from tests.fakes.publication import SQUAD_ROOT, MemoryPublication
from tests.integration.cli_support import (
    CLI_TIMEOUT_SECONDS,
    Sandbox,
    SpecFile,
    canonical_problems,
    create_arguments,
    listed_squads,
    lock_files,
    staging_residue,
)

pytestmark = pytest.mark.slow

CREATORS = 8
TASK_IDS = ("build", "qa")
# Imports everything first, then waits for the start file so that all creators start together.
DRIVER = """
import os, sys, time
from entrypoints.cli import main
from entrypoints.container import CliContainer

container = CliContainer()
container.publisher()
ready, start = sys.argv[1], sys.argv[2]
open(ready, "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(start):
    if time.monotonic() > deadline:
        sys.exit(3)
    time.sleep(0.0005)
sys.exit(main(sys.argv[3:], container))
"""


def start_creators(sandbox: Sandbox, spec: SpecFile, count: int) -> list[subprocess.Popen[str]]:
    start = sandbox.base / "start"
    creators = []
    for number in range(count):
        ready = sandbox.base / f"ready-{number}"
        creators.append(
            subprocess.Popen(
                [sys.executable, "-c", DRIVER, str(ready), str(start), *create_arguments(spec)],
                cwd=sandbox.cwd,
                env=sandbox.environment(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            )
        )
    deadline = time.monotonic() + CLI_TIMEOUT_SECONDS
    while not all((sandbox.base / f"ready-{n}").exists() for n in range(count)):
        assert time.monotonic() < deadline, "creators never became ready"
        assert all(c.poll() is None for c in creators), "a creator exited before the start"
        time.sleep(0.01)
    start.touch()
    return creators


def test_eight_processes_creating_one_spec_at_once_get_eight_whole_distinct_squads(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(spec_document(goal="Race to publish"))
    creators = start_creators(sandbox, spec, CREATORS)
    results = [c.communicate(timeout=CLI_TIMEOUT_SECONDS) for c in creators]

    assert [c.returncode for c in creators] == [0] * CREATORS, [err for _, err in results]
    outputs = [json.loads(out) for out, _ in results]
    ids = sorted(output["squadId"] for output in outputs)
    assert len(set(ids)) == CREATORS
    assert "race-to-publish" in ids
    assert all(i == "race-to-publish" or i.startswith("race-to-publish-") for i in ids)

    listed = listed_squads(sandbox.root)
    assert sorted(listing.id for listing in listed) == ids
    codec = JsonSquadCodec()
    for listing in listed:
        assert canonical_problems(listing, spec.data) == []
        squad_dir = Path(listing.squad_dir)
        # exactly one squad's files: nothing merged in, no temporary files left over
        assert sorted(p.name for p in squad_dir.iterdir()) == sorted(
            ["spec", ".records", "squad.json", *TASK_IDS]
        )
        assert [p.name for p in (squad_dir / "spec").iterdir()] == ["spec.v1.json"]
        for task_id in TASK_IDS:
            assert [p.name for p in (squad_dir / task_id).iterdir()] == []
            records = squad_dir / ".records" / task_id
            assert [p.name for p in records.iterdir()] == ["task.json"]
            task = codec.decode_task((records / "task.json").read_bytes())
            assert task.id == task_id
        assert listing.squad.id == squad_dir.name
    # each process reported the squad it published, not someone else's
    assert sorted(o["squadDir"] for o in outputs) == sorted(s.squad_dir for s in listed)
    assert staging_residue(sandbox.root) == []
    assert lock_files(sandbox.root) == []


# ---- the same race, in process, with the other creator played by a fake -----------------------


@pytest.fixture
def world() -> MemoryPublication:
    return MemoryPublication()


def occupy(world: MemoryPublication, squad_id: str) -> dict[str, bytes | None]:
    """Publish someone else's squad at ``squad_id``; return its tree."""
    world.fs.add_file(f"{SQUAD_ROOT}/{squad_id}/squad.json", b'{"someone": "else"}\n', 0o600)
    world.fs.add_file(f"{SQUAD_ROOT}/{squad_id}/spec/spec.v1.json", b"their spec\n", 0o400)
    return world.fs.tree(f"{SQUAD_ROOT}/{squad_id}")


def staging_dirs(world: MemoryPublication) -> list[str]:
    return [
        call.path
        for call in world.fs.calls_of("make_dir_exclusive")
        if ".creating." in call.path.rsplit("/", 1)[-1]
    ]


def test_a_squad_taking_the_id_during_the_build_is_neither_merged_into_nor_overwritten(
    world: MemoryPublication,
) -> None:
    occupied: dict[str, dict[str, bytes | None]] = {}

    def another_creator_wins() -> None:
        occupied["tree"] = occupy(world, "ship-a-tested-feature")

    world.fs.before("rename_no_replace", another_creator_wins)
    published = world.publish(spec_document())

    assert published.squad.id.startswith("ship-a-tested-feature-")
    assert world.fs.tree(f"{SQUAD_ROOT}/ship-a-tested-feature") == occupied["tree"]
    assert published.squad.spec is not None
    assert world.fs.read(published.squad.spec.path) == world.fs.read(f"{world.cwd}/spec.json")
    # the retry built a fresh staging directory for the new id and left none behind
    first, second = staging_dirs(world)
    assert first != second
    assert f"/{published.squad.id}.creating." in second
    assert [e for e in world.root_entries() if ".creating." in e] == []
    listed = list_squads(world.fs, SQUAD_ROOT, world.codec)
    assert [s.id for s in listed] == [published.squad.id]  # theirs is not a decodable squad


def test_a_rename_refused_because_the_target_exists_is_retried_under_another_id(
    world: MemoryPublication,
) -> None:
    world.fs.fail("rename_no_replace", error=FileExistsError(errno.EEXIST, "exists"))
    published = world.publish(spec_document())

    renames = world.fs.calls_of("rename_no_replace")
    assert len(renames) == 2
    assert renames[0].target == f"{SQUAD_ROOT}/ship-a-tested-feature"
    assert renames[1].target == published.squad_dir != renames[0].target
    assert [s.id for s in list_squads(world.fs, SQUAD_ROOT, world.codec)] == [published.squad.id]
    assert [e for e in world.root_entries() if ".creating." in e] == []
