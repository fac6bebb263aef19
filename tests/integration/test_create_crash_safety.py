"""Crash safety of ``pi-squad create`` (contract §5, issue 3): a process killed at any step of
publication leaves no squad that is listed half-built, and an injected I/O error at any step is
``PUBLISH_FAILED`` with nothing left behind.

The steps are not written down here: one ``create`` runs in-process through a recording
``FileSystem`` wrapper, and every ``(operation, n)`` it made becomes a fault point for a real
``pi-squad create`` subprocess, run through ``tests.support.fault_cli`` (the CLI's own container
with its file system wrapped in ``FaultingFileSystem``). A new step in the publication code is
therefore covered without touching this file.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from adapters.fs.platform import native_file_system
from adapters.store.json_records import JsonSquadCodec
from application.list_squads import SquadListing
from application.squads.create_squad import STAGING_LOCKS_DIR
from tests.builders import artifact, spec_document, task
from tests.fakes.faulting_filesystem import RecordingFileSystem
from tests.integration.cli_support import (
    Sandbox,
    SpecFile,
    canonical_problems,
    create_arguments,
    create_in_process,
    listed_squads,
    lock_files,
    run_cli,
    staging_residue,
)

pytestmark = pytest.mark.slow

Step = tuple[str, int]
# What a ``kill`` fault ends the process with (Windows has no SIGKILL: os.kill
# terminates the process with the signal number as its exit code).
KILLED = -signal.SIGKILL if os.name == "posix" else int(signal.SIGTERM)
TASK_IDS = ["build", "docs", "qa"]
# Codes expected when the fault hits a read that precedes publication.
VALIDATION_READ_CODES = {
    ("read_stable", 1): "SPEC_UNSTABLE",
    ("digest_stable", 1): "ARTIFACT_UNSTABLE",
}
WORKERS = min(4, os.cpu_count() or 2)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> SpecFile:
    """One spec with an artifact and three tasks (one blocked), shared by every case."""
    directory = tmp_path_factory.mktemp("source")
    notes = b"release notes \xe2\x82\xac\n"
    notes_path = directory / "notes.txt"
    notes_path.write_bytes(notes)
    document = spec_document(
        goal="Crash-proof publication",
        tasks=[
            task("build", artifactRefs=["notes"]),
            task("docs", agent="docs"),
            task("qa", agent="qa", depends=["build", "docs"]),
        ],
        agents={
            "backend": {"model": None, "thinking": None},
            "docs": {"model": None, "thinking": None},
            "qa": {"model": None, "thinking": None},
        },
        artifacts=[artifact("notes", str(notes_path), notes)],
    )
    sandbox = Sandbox.create(directory)
    return sandbox.write_spec(document)


@pytest.fixture(scope="module")
def trace(source: SpecFile, tmp_path_factory: pytest.TempPathFactory) -> RecordingFileSystem:
    """The file-system calls of one ``create`` into an empty root."""
    recorder = RecordingFileSystem(native_file_system())
    create_in_process(Sandbox.create(tmp_path_factory.mktemp("trace")), source, fs=recorder)
    return recorder


@pytest.fixture(scope="module")
def steps(trace: RecordingFileSystem) -> list[Step]:
    """Every call as a fault point, in order."""
    return trace.steps()


def _done_by_then(steps: list[Step], step: Step, action: str, milestone: Step) -> bool:
    """Whether ``milestone`` had completed when the fault at ``step`` fired."""
    position, reached = steps.index(step), steps.index(milestone)
    return position > reached or (position == reached and action == "kill-after")


def is_published(steps: list[Step], step: Step, action: str) -> bool:
    """Whether the squad is in place when the fault fires: the rename happened before it."""
    return _done_by_then(steps, step, action, ("rename_no_replace", 1))


def is_staged(steps: list[Step], step: Step, action: str) -> bool:
    """Whether a staging directory is left: created, and not yet renamed away."""
    return _done_by_then(steps, step, action, ("make_dir_exclusive", 1)) and not is_published(
        steps, step, action
    )


def holds_staging_lock(steps: list[Step], step: Step) -> bool:
    """The staging lock is taken just before the staging directory is created."""
    return steps.index(step) >= steps.index(("make_dir_exclusive", 1))


def task_problems(listing: SquadListing) -> list[str]:
    codec = JsonSquadCodec()
    problems = []
    for task_id in TASK_IDS:
        path = Path(listing.squad_dir) / ".records" / task_id / "task.json"
        try:
            decoded = codec.decode_task(path.read_bytes())
        except (OSError, ValueError) as exc:
            problems.append(f"{listing.id}/{task_id}/task.json: {exc}")
            continue
        if decoded.id != task_id:
            problems.append(f"{listing.id}/{task_id}/task.json names task {decoded.id}")
    return problems


def follow_up_problems(sandbox: Sandbox, source: SpecFile, already_listed: int) -> list[str]:
    """The next ``create`` succeeds, is listed whole, and clears what the crash left."""
    try:
        new_id = create_in_process(sandbox, source)
    except Exception as exc:
        return [f"the next create failed: {exc!r}"]
    listed = listed_squads(sandbox.root)
    problems = []
    if len(listed) != already_listed + 1 or new_id not in [s.id for s in listed]:
        problems.append(f"after the next create {[s.id for s in listed]} are listed")
    for listing in listed:
        problems += canonical_problems(listing, source.data) + task_problems(listing)
    if staging_residue(sandbox.root):
        problems.append(f"staging left after the next create: {staging_residue(sandbox.root)}")
    if lock_files(sandbox.root):
        problems.append(f"stale staging locks after the next create: {lock_files(sandbox.root)}")
    return problems


def kill_case(
    base: Path, source: SpecFile, steps: list[Step], step: Step, action: str
) -> list[str]:
    sandbox = Sandbox.create(base)
    run = run_cli(sandbox, create_arguments(source), fault=f"{step[0]}:{step[1]}:{action}")
    if run.returncode != KILLED:
        return [f"exit status {run.returncode}, not killed; stderr: {run.stderr[-400:]!r}"]
    listed = listed_squads(sandbox.root)
    published = is_published(steps, step, action)
    problems = []
    if len(listed) != (1 if published else 0):
        problems.append(f"{'1 squad' if published else 'no squad'} expected, listed: {listed}")
    for listing in listed:
        problems += canonical_problems(listing, source.data) + task_problems(listing)
    # What the next create has to clean up (so the cleanup is really exercised).
    if bool(staging_residue(sandbox.root)) != is_staged(steps, step, action):
        problems.append(f"staging after the kill: {staging_residue(sandbox.root)}")
    if bool(lock_files(sandbox.root)) != holds_staging_lock(steps, step):
        problems.append(f"staging locks after the kill: {lock_files(sandbox.root)}")
    return problems + follow_up_problems(sandbox, source, already_listed=len(listed))


def oserror_case(
    base: Path, source: SpecFile, steps: list[Step], step: Step, action: str
) -> list[str]:
    del steps, action
    sandbox = Sandbox.create(base)
    run = run_cli(sandbox, create_arguments(source), fault=f"{step[0]}:{step[1]}:oserror")
    expected = VALIDATION_READ_CODES.get(step, "PUBLISH_FAILED")
    problems = []
    if run.returncode != 1 or run.stderr:
        problems.append(f"exit status {run.returncode}, stderr {run.stderr[-400:]!r}")
        return problems
    if run.error_code() != expected:
        problems.append(f"{run.error_code()} instead of {expected}: {run.json()}")
    leftovers = sorted(p.name for p in sandbox.root.iterdir()) if sandbox.root.exists() else []
    if [name for name in leftovers if name != STAGING_LOCKS_DIR] or lock_files(sandbox.root):
        problems.append(f"residue: root {leftovers}, locks {lock_files(sandbox.root)}")
    return problems + follow_up_problems(sandbox, source, already_listed=0)


Case = Callable[[Path, SpecFile, list[Step], Step, str], list[str]]


def run_every_step(
    tmp_path: Path,
    source: SpecFile,
    steps: list[Step],
    *,
    targets: list[Step],
    actions: tuple[str, ...],
    case: Case,
) -> dict[str, list[str]]:
    """Run ``case`` for every target step and action in parallel; the failures, by point."""
    points = [(step, action) for step in targets for action in actions]
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {
            f"{step[0]}:{step[1]}:{action}": pool.submit(
                case, tmp_path / f"{step[0]}-{step[1]}-{action}", source, steps, step, action
            )
            for step, action in points
        }
        outcomes = {point: future.result() for point, future in futures.items()}
    return {point: problems for point, problems in outcomes.items() if problems}


def report(failures: dict[str, list[str]]) -> str:
    return f"{len(failures)} fault points failed:\n" + "\n".join(
        f"  {point}: {'; '.join(problems)}" for point, problems in failures.items()
    )


def test_the_traced_create_goes_through_every_publication_step(steps: list[Step]) -> None:
    operations = [operation for operation, _ in steps]
    for operation in (
        "read_stable",
        "digest_stable",
        "ensure_dir",
        "make_dir_exclusive",
        "create_file_exclusive",
        "mark_read_only",
        "fsync_dir",
        "rename_no_replace",
    ):
        assert operation in operations
    # the canonical copy is made read-only before the squad becomes visible
    assert steps.index(("mark_read_only", 1)) < steps.index(("rename_no_replace", 1))
    # the canonical copy, one task.json per task and squad.json, each created in place in staging
    assert operations.count("create_file_exclusive") == 1 + len(TASK_IDS) + 1
    assert "write_atomic" not in operations


@pytest.mark.parametrize(
    ("action", "case"),
    [
        # Nothing partial is listed and the next create succeeds.
        pytest.param("kill", kill_case, id="kill-before-the-step"),
        # The create fails with its code and leaves no residue.
        pytest.param("oserror", oserror_case, id="io-error-at-the-step"),
    ],
)
def test_a_kill_or_an_io_error_at_any_step_leaves_no_partial_squad(
    tmp_path: Path, source: SpecFile, steps: list[Step], action: str, case: Case
) -> None:
    failures = run_every_step(tmp_path, source, steps, targets=steps, actions=(action,), case=case)
    assert not failures, report(failures)


def test_a_kill_after_any_step_lists_no_partial_squad_and_the_next_create_succeeds(
    tmp_path: Path, source: SpecFile, steps: list[Step], trace: RecordingFileSystem
) -> None:
    # A call that raised (listing the lock directory before any lock exists) has no "after".
    succeeded = [step for step in steps if step not in trace.failed_steps()]
    failures = run_every_step(
        tmp_path, source, steps, targets=succeeded, actions=("kill-after",), case=kill_case
    )
    assert not failures, report(failures)
