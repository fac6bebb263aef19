"""``pi-squad status`` and ``verify``: the commands that only read a squad.

They are given the ``ReadingContainer`` (``entrypoints/reading_container.py``: the store, the
auditor and the status reader), so a person or a script polling a squad pays for nothing else:
no isolation adapter, no flow runner, no report or watch face.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Protocol

# The ports reading uses, loaded before anything looks a name up in ``application.ports``: it
# then finds them without importing the Pi-event, children, isolation and tracing ports.
import application.ports.filesystem
import application.ports.store
import application.ports.system  # noqa: F401
from application.squads.documents import isolation_document
from application.squads.verify import audit_squad
from domain.isolation import isolation_statement
from entrypoints.commands import AddCommand
from entrypoints.output import EXIT_OK, EXIT_REFUSED, emit_json

if TYPE_CHECKING:
    from application.attestation_check import AttestationAuditor
    from application.squads.status import SquadStatusReader


class SquadReaders(Protocol):
    """The providers these commands call: ``ReadingContainer``'s (``CliContainer`` has them
    too, and tests may pass one)."""

    def status_reader(self) -> SquadStatusReader: ...
    def auditor(self) -> AttestationAuditor: ...


def cmd_status(args: argparse.Namespace, container: SquadReaders) -> int:
    report = container.status_reader().status(args.squad_id)
    if args.json:
        emit_json(report.document())
    else:
        print(report.text())
    return EXIT_OK


def cmd_verify(args: argparse.Namespace, container: SquadReaders) -> int:
    squad_id = args.squad_id or container.status_reader().newest_squad_id()
    audit = audit_squad(container.auditor(), squad_id)
    if args.json:
        canonical: dict[str, Any] = {"ok": audit.canonical_ok}
        if audit.canonical_reason is not None:
            canonical["reason"] = audit.canonical_reason
        tasks = []
        for task in audit.tasks:
            entry: dict[str, Any] = {
                "taskId": task.task_id,
                "status": str(task.status),
                "attestation": str(task.attestation),
                "attestationState": str(task.word.word),
                "attestationText": task.word.text,
            }
            if task.missing_indices is not None:
                entry["missingIndices"] = list(task.missing_indices)
            if task.reason is not None:
                entry["reason"] = task.reason
            tasks.append(entry)
        emit_json(
            {
                "squadId": audit.squad_id,
                "canonical": canonical,
                "isolation": isolation_document(audit.isolation, audit.isolation_layers),
                "tasks": tasks,
                "audit": {"passed": audit.passed},
                "squad": {
                    "status": str(audit.squad_status),
                    "review": None if audit.review_status is None else str(audit.review_status),
                },
            }
        )
    else:
        state = "verifies" if audit.canonical_ok else f"FAILS: {audit.canonical_reason}"
        print(f"squad {audit.squad_id}: canonical spec {state}")
        print(f"squad outcome (not judged here): {audit.outcome_text()}")
        print(f"isolation: {isolation_statement(audit.isolation, audit.isolation_layers)}")
        for task in audit.tasks:
            print(f"  {task.task_id:<24} {task.status!s:<12} attestation {task.word.text}")
        verdict = "PASS" if audit.passed else "FAIL"
        print(f"attestation audit: {verdict} (the proof that every done task read every chunk)")
    return EXIT_OK if audit.passed else EXIT_REFUSED


def add_verify_command(add: AddCommand) -> None:
    verify = add(
        "verify",
        cmd_verify,
        "Audit a squad's canonical spec and every task attestation (the newest squad in the "
        "root when no ID is given).",
    )
    verify.add_argument("squad_id", metavar="SQUAD_ID", nargs="?")


def add_status_command(add: AddCommand) -> None:
    status = add(
        "status",
        cmd_status,
        "Show a squad's status (the newest squad in the root when no ID is given).",
    )
    status.add_argument("squad_id", metavar="SQUAD_ID", nargs="?")
