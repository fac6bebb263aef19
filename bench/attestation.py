"""(4) Attestation validation: ``AttestationAuditor.validate_task_attestation`` on one complete
33-chunk attestation of a 1 MiB spec (the one check settlement, ``complete_task``, review and
reconcile all use), with and without re-hashing the squad's 256 MiB of artifacts.

The auditor does not re-hash artifacts (they are verified once, at create); the re-hash is
therefore measured separately, as ``FileSystem.digest_stable`` over every artifact (the same
stable read ``create`` uses), and added to the validation for the "with" figure.

Floors, interleaved: SHA-256 of the 1 MiB spec bytes once (validation must verify the canonical
file's hash); for the re-hash, a plain read + SHA-256 (``hashlib.file_digest``) of every
artifact. Also measured: the form a reconcile pass uses, where one verified canonical read is
shared by every task (``validate_task_attestation(squad, task, canonical)``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

from adapters.store.files import FileStore
from application.attestation_check import AttestationAuditor
from application.spec_reads import AttestationStatus
from bench.common import Result, median, ms_since, parse_args, progress, scratch
from bench.published import publish_spec
from bench.workspace import (
    KIB,
    MIB,
    Adapters,
    ArtifactFile,
    attest,
    auditor_for,
    build_spec,
    make_artifacts,
)
from domain.squad.model import Squad, Task

NAME = "attestation"


@attrs.frozen
class ValidatedTask:
    """What is validated again and again: one task's attestation in its squad, by the auditor,
    over the spec's bytes (hashed once per run for the floor)."""

    auditor: AttestationAuditor
    squad: Squad
    task: Task
    data: bytes


def validations(subject: ValidatedTask, runs: int) -> dict[str, list[float]]:
    auditor, squad, task = subject.auditor, subject.squad, subject.task
    samples: dict[str, list[float]] = {"validate": [], "shared": [], "floor": []}
    canonical = auditor.read_canonical(squad)
    for _ in range(runs):
        begin = time.perf_counter_ns()
        check = auditor.validate_task_attestation(squad, task)
        samples["validate"].append(ms_since(begin))
        if check.status is not AttestationStatus.VALID:
            raise RuntimeError(f"the attestation does not validate: {check}")
        begin = time.perf_counter_ns()
        auditor.validate_task_attestation(squad, task, canonical)
        samples["shared"].append(ms_since(begin))
        begin = time.perf_counter_ns()
        hashlib.sha256(subject.data).hexdigest()
        samples["floor"].append(ms_since(begin))
    return samples


def rehashes(
    adapters: Adapters, subject: ValidatedTask, artifacts: Sequence[ArtifactFile], runs: int
) -> dict[str, list[float]]:
    """Validation plus ``digest_stable`` of every artifact, beside SHA-256 of the spec plus
    ``hashlib.file_digest`` of every artifact; the re-hash alone is kept too."""
    samples: dict[str, list[float]] = {"with": [], "floor": [], "alone": [], "alone_floor": []}
    for _ in range(runs):
        begin = time.perf_counter_ns()
        subject.auditor.validate_task_attestation(subject.squad, subject.task)
        middle = time.perf_counter_ns()
        for artifact in artifacts:
            if adapters.fs.digest_stable(artifact.path).sha256 != artifact.sha256:
                raise RuntimeError(f"artifact {artifact.id} changed")
        samples["with"].append(ms_since(begin))
        samples["alone"].append(ms_since(middle))
        begin = time.perf_counter_ns()
        hashlib.sha256(subject.data).hexdigest()
        middle = time.perf_counter_ns()
        for artifact in artifacts:
            with Path(artifact.path).open("rb") as handle:
                hashlib.file_digest(handle, "sha256").hexdigest()
        samples["floor"].append(ms_since(begin))
        samples["alone_floor"].append(ms_since(middle))
    return samples


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(NAME, "validate_task_attestation with and without artifact re-hash.", argv)
    result = Result(NAME, quick=args.quick)
    if args.quick:
        size, count, each, runs, rehash_runs = 64 * KIB, 8, 16 * KIB, 30, 2
    else:
        size, count, each, runs, rehash_runs = MIB, 1024, 256 * KIB, 300, 7
    adapters = Adapters.real()
    with scratch(NAME, keep=args.keep) as base:
        progress(f"generating {count} artifacts of {each} B")
        artifacts = make_artifacts(base / "artifacts", count, each)
        data = build_spec(size, tasks=128, artifacts=artifacts)
        root = base / "root"
        published = publish_spec(adapters, root, base / "project", data)
        task = published.tasks[0]
        attest(adapters, published, task.id)
        store = FileStore(fs=adapters.fs, locks=adapters.locks, root=str(root))
        auditor = auditor_for(adapters, store)
        snapshot = store.snapshot(published.squad.id)
        subject = ValidatedTask(auditor, snapshot.squad, snapshot.tasks[task.id], data)
        plain = validations(subject, runs)
        rehash = rehashes(adapters, subject, artifacts, rehash_runs)
        progress(
            f"validation {median(plain['validate']):.3f} ms, "
            f"with re-hash {median(rehash['with']):.0f} ms"
        )
    chunks = published.squad.spec.chunk_count  # type: ignore[union-attr]
    sha_floor = ("SHA-256 of the spec bytes once", plain["floor"])
    result.add(
        "validate.no_rehash",
        f"validate_task_attestation, complete {chunks}-chunk attestation, {size} B spec "
        "(canonical read + SHA-256 + attestation check), no artifact re-hash",
        plain["validate"],
        floor=sha_floor,
        p99=True,
        upstream="1.40 ms",
        target="median < 1.0 ms",
        met=median(plain["validate"]) < 1.0,
    )
    result.add(
        "validate.shared_canonical",
        "validate_task_attestation with a canonical read shared by the pass (reconcile form)",
        plain["shared"],
        floor=sha_floor,
        p99=True,
    )
    result.add(
        "validate.with_rehash",
        f"validation + re-hash of {count} artifacts x {each // KIB} KiB "
        f"({count * each // MIB} MiB) by digest_stable (the auditor itself never re-hashes)",
        rehash["with"],
        floor=("SHA-256 of the spec + hashlib.file_digest of every artifact", rehash["floor"]),
    )
    result.add(
        "rehash.digest_stable",
        "artifact re-hash alone: digest_stable over every artifact",
        rehash["alone"],
        floor=("hashlib.file_digest over every artifact", rehash["alone_floor"]),
    )
    result.extra.update(
        {"spec_bytes": size, "chunk_count": chunks, "artifacts": count, "artifact_bytes": each}
    )
    return result.finish(args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
