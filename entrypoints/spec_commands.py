"""``pi-squad validate``, ``create`` and ``chunks``: what a person does with a spec file."""

from __future__ import annotations

import argparse
import os
from typing import Any

from application.load_spec import CatalogLookup, load_validated_spec, read_spec_file
from application.squads.create_squad import create_squad
from application.squads.documents import spec_document
from domain.chunks import ChunkTable
from domain.errors import ErrorCode, SpecError
from domain.strict_json import JsonDecodeFailure, decode_utf8
from entrypoints.commands import AddCommand
from entrypoints.container import CliContainer
from entrypoints.output import EXIT_OK, emit_json


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


def add_spec_commands(add: AddCommand) -> None:
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


def add_chunks_command(add: AddCommand) -> None:
    chunks = add("chunks", cmd_chunks, "Show the deterministic chunk table of a file (§7).")
    chunks.add_argument("path", metavar="PATH")
