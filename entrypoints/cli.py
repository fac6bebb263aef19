"""``pi-squad``: the command line. Every command accepts ``--json`` (one JSON object on stdout)."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from adapters.pi_runtime import PI_VERSION
from application.load_spec import CatalogLookup, load_validated_spec, read_spec_file
from application.ports import FileSystem
from application.squads.create_squad import create_squad
from application.squads.documents import isolation_document, spec_document
from application.squads.operations import Action
from application.squads.verify import audit_squad
from domain.chunks import ChunkTable
from domain.errors import ErrorCode, PiSquadError, SpecError
from domain.isolation import isolation_statement
from domain.squad.references import expand_squad_prefix
from domain.strict_json import JsonDecodeFailure, decode_utf8
from entrypoints import bridge as bridge_entry
from entrypoints.cli_runtime import add_runtime_commands
from entrypoints.commands import Handler
from entrypoints.container import CliContainer
from entrypoints.delegate import add_delegate_commands
from entrypoints.flow import add_flow_commands
from entrypoints.operator_commands import add_operator_commands
from entrypoints.output import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    emit_json,
    error_payload,
    run_reporting,
)
from entrypoints.run import add_run_commands
from entrypoints.trace import add_trace_commands

DISTRIBUTION = "pi-squad"
DESCRIPTION = (
    "pi-squad: squads of Pi agents that provably read every byte of a hash-pinned spec. Every "
    "command accepts --json (one JSON object on stdout). A squad id may be shortened to any "
    "prefix only one squad starts with."
)
SQUAD_REFERENCE_FIELDS = ("squad_id", "squad")


class _Parser(argparse.ArgumentParser):
    """Usage errors exit 2; with ``--json`` anywhere on the line they are JSON too."""

    json_errors = False

    def error(self, message: str) -> NoReturn:
        if self.json_errors:
            emit_json(error_payload(ErrorCode.USAGE, f"{self.prog}: {message}"))
        else:
            # One line, like every other failure: what was wrong and where to look.
            sys.stderr.write(f"pi-squad: USAGE: {self.prog}: {message}; see {self.prog} --help\n")
        raise SystemExit(EXIT_USAGE)


class _JsonErrorsParser(_Parser):
    json_errors = True


def _absolute_cwd(value: str | None) -> str:
    return os.path.abspath(value if value is not None else os.getcwd())


def cmd_validate(args: argparse.Namespace, container: CliContainer) -> int:
    cwd = _absolute_cwd(args.cwd)
    catalog = container.agent_catalog(cwd=cwd)
    path, validated = load_validated_spec(
        container.fs(),
        CatalogLookup(catalog),
        spec_file=args.spec_file,
        spec_sha256=args.spec_sha256,
        cwd=cwd,
    )
    warnings = list(validated.warnings) + [
        f"agent definition {problem.origin} ignored: {problem.reason}"
        for problem in catalog.problems
    ]
    if args.json:
        emit_json(
            {
                "valid": True,
                "spec": {
                    "sha256": validated.sha256,
                    "bytes": validated.byte_length,
                    "chunkCount": validated.chunks.chunk_count,
                },
                "warnings": warnings,
            }
        )
    else:
        print(
            f"valid: {path}\n  sha256 {validated.sha256}\n  {validated.byte_length} bytes, "
            f"{validated.chunks.chunk_count} chunks, {len(validated.spec.tasks)} tasks, "
            f"{len(validated.spec.artifacts)} artifacts"
        )
        for warning in warnings:
            print(f"  warning: {warning}")
    return EXIT_OK


def cmd_chunks(args: argparse.Namespace, container: CliContainer) -> int:
    fs = container.fs()
    path = os.path.abspath(args.path)
    read = read_spec_file(fs, path)
    try:
        decode_utf8(read.data)
    except JsonDecodeFailure as exc:
        raise SpecError(ErrorCode.SPEC_MALFORMED, f"file is not chunkable: {exc.reason}") from None
    table = ChunkTable.of(read.data)
    payload: dict[str, Any] = {
        "bytes": table.spec_bytes,
        "sha256": table.spec_sha256,
        "chunkBytes": table.chunk_bytes,
        "chunkCount": table.chunk_count,
        "chunks": [
            {
                "index": c.index,
                "startByte": c.start_byte,
                "endByteExclusive": c.end_byte_exclusive,
                "bytes": c.bytes,
                "sha256": c.sha256,
            }
            for c in table.chunks
        ],
    }
    if args.json:
        emit_json(payload)
    else:
        print(f"{path}: {table.spec_bytes} bytes, sha256 {table.spec_sha256}")
        print(f"{table.chunk_count} chunks of at most {table.chunk_bytes} bytes")
        for c in table.chunks:
            span = f"[{c.start_byte}, {c.end_byte_exclusive})"
            print(f"  {c.index:>4}  {span:<20}  {c.bytes:>6}  {c.sha256}")
    return EXIT_OK


def cmd_create(args: argparse.Namespace, container: CliContainer) -> int:
    cwd = _absolute_cwd(args.cwd)
    catalog = container.agent_catalog(cwd=cwd)
    published = create_squad(
        container.publisher(),
        catalog,
        spec_file=args.spec_file,
        spec_sha256=args.spec_sha256,
        cwd=cwd,
    )
    spec = published.squad.spec
    assert spec is not None
    payload = {
        "squadId": published.squad.id,
        "squadDir": published.squad_dir,
        "spec": spec_document(spec),
        "tasks": [task.id for task in published.tasks],
    }
    if args.json:
        emit_json(payload)
    else:
        print(f'Squad "{published.squad.id}" published with {len(published.tasks)} tasks.')
        print(f"Canonical spec: {spec.path}")
        print(f"SHA-256: {spec.sha256}")
        print(f"Bytes: {spec.bytes}")
        print(f"Chunks: {spec.chunk_count}")
        for warning in published.warnings:
            print(f"  warning: {warning}")
    return EXIT_OK


def cmd_verify(args: argparse.Namespace, container: CliContainer) -> int:
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


def cmd_bridge(args: argparse.Namespace, container: CliContainer) -> int:
    return bridge_entry.run(args.role)


def _version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser(*, json_errors: bool = False) -> argparse.ArgumentParser:
    parser_class = _JsonErrorsParser if json_errors else _Parser
    parser = parser_class(prog="pi-squad", description=DESCRIPTION)
    parser.add_argument(
        "--version", action="version", version=f"pi-squad {_version()} (Pi {PI_VERSION})"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=parser_class)

    def add(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.add_argument("--json", action="store_true", help="print one JSON object")
        command.set_defaults(handler=handler)
        return command

    validate = add(
        "validate", cmd_validate, "Read and validate a spec file and its artifacts; write nothing."
    )
    validate.add_argument("--spec-file", required=True, metavar="PATH")
    validate.add_argument("--spec-sha256", required=True, metavar="HEX")
    validate.add_argument("--cwd", metavar="DIR", help="resolve a relative --spec-file here")

    create = add(
        "create", cmd_create, "Validate a spec file and publish it as a new squad (no scheduling)."
    )
    create.add_argument("--spec-file", required=True, metavar="PATH")
    create.add_argument("--spec-sha256", required=True, metavar="HEX")
    create.add_argument("--cwd", metavar="DIR", help="the squad's working directory")

    verify = add(
        "verify",
        cmd_verify,
        "Audit a squad's canonical spec and every task attestation (the newest squad in the "
        "root when no ID is given).",
    )
    verify.add_argument("squad_id", metavar="SQUAD_ID", nargs="?")

    chunks = add("chunks", cmd_chunks, "Show the deterministic chunk table of a file (§7).")
    chunks.add_argument("path", metavar="PATH")

    add_runtime_commands(add)
    add_run_commands(add)
    add_operator_commands(add)
    add_flow_commands(add)
    add_trace_commands(add)
    add_delegate_commands(add)

    bridge_help = "Serve the Pi extension shim over stdin/stdout (JSON lines, docs/bridge.md)."
    bridge = sub.add_parser("bridge", help=bridge_help, description=bridge_help)
    bridge_entry.add_arguments(bridge)
    bridge.set_defaults(handler=cmd_bridge, json=False)
    return parser


def expand_squad_references(args: argparse.Namespace, container: CliContainer) -> None:
    """A unique prefix of a squad id stands for that squad (``SQUAD_AMBIGUOUS`` when several
    start with it); ``modify ... cancel`` alone takes only the exact id, as the tool does."""
    if getattr(args, "action", None) == Action.CANCEL.value:
        return
    for field in SQUAD_REFERENCE_FIELDS:
        reference = getattr(args, field, None)
        if isinstance(reference, str) and not _names_a_squad(container, reference):
            ids = container.store().list_squad_ids()  # reads every squad record: only for prefixes
            setattr(args, field, expand_squad_prefix(reference, ids))


def _names_a_squad(container: CliContainer, reference: str) -> bool:
    """Whether ``reference`` is a published squad's exact id (its record exists)."""
    try:
        squad_file = container.store().layout(reference).squad_file
    except PiSquadError:
        return False  # not even a valid id: a prefix, or the store's own refusal later
    fs: FileSystem = container.fs()
    return fs.exists(squad_file)


def main(argv: Sequence[str] | None = None, container: CliContainer | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(json_errors="--json" in arguments).parse_args(arguments)
    active = container if container is not None else CliContainer()
    handler: Handler = args.handler

    def run() -> int:
        expand_squad_references(args, active)
        return handler(args, active)

    return run_reporting(run, as_json=args.json)


if __name__ == "__main__":
    raise SystemExit(main())
