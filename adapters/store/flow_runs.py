"""``FlowRunRecords`` on the file system: ``<squad root>/.flow-runs/<run id>/`` (mode 0700) holds
``run.json`` (the record) and the call files its command re-runs (``call.json``, and a
workflow's ``resume.json``), every one written through ``FileSystem.write_atomic``: a
same-directory temp file (0600), fsync, rename, fsync of the directory. A reader therefore sees
a whole record or the one before it, never half of one, and nothing there is readable by other
users. The directory is pi-squad's own, apart from ``.flows/<run id>/`` where the run's
children keep their sessions: a child cannot rewrite what the record says of it.
"""

from __future__ import annotations

import json
import posixpath
import re
from datetime import datetime
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from adapters.store.json_records import encode_document, parse_timestamp, render_timestamp
from application.ports import FileSystem, ReadFailure, StableReadError, UnreadableRunRecord
from domain.delegation.session import ProcessRecord
from domain.flows.run_record import FlowRunRecord, RecordedError, Rerun, RunState
from domain.names import camel
from domain.strict_json import JsonDecodeFailure, decode_json_object

RUNS_DIR = ".flow-runs"
RECORD_FILE = "run.json"
DIR_MODE = 0o700
MAX_RECORD_BYTES = 4 * 1024 * 1024
# A run id is a flow id: lowercase hex. Nothing else may name a directory here.
_RUN_ID = re.compile(r"^[0-9a-f]{1,64}$")
_FILE_NAME = re.compile(r"^[a-z]+\.json$")


def _converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_unstructure_hook(datetime, render_timestamp)
    converter.register_structure_hook(datetime, lambda value, _t: parse_timestamp(value))
    # Leaves first: a class's hook is built with the hooks of its fields as they are then.
    for cls in (ProcessRecord, Rerun, RecordedError, RunState, FlowRunRecord):
        renames: dict[str, Any] = {
            field.name: override(rename=camel(field.name)) for field in attrs.fields(cls)
        }
        converter.register_unstructure_hook(
            cls, make_dict_unstructure_fn(cls, converter, **renames)
        )
        converter.register_structure_hook(cls, make_dict_structure_fn(cls, converter, **renames))
    return converter


_CONVERTER = _converter()


def encode_record(record: FlowRunRecord) -> bytes:
    document: dict[str, Any] = _CONVERTER.unstructure(record)
    return encode_document(document)


def decode_record(data: bytes) -> FlowRunRecord:
    try:
        record: FlowRunRecord = _CONVERTER.structure(decode_json_object(data), FlowRunRecord)
    except (JsonDecodeFailure, cattrs.BaseValidationError, ValueError, TypeError) as error:
        raise UnreadableRunRecord(f"not a flow run record: {type(error).__name__}") from None
    return record


class FileFlowRunRecords:
    def __init__(self, fs: FileSystem, root: str) -> None:
        self._fs = fs
        self._runs = posixpath.join(root, RUNS_DIR)

    def _run_dir(self, run_id: str) -> str:
        if not _RUN_ID.match(run_id):
            raise ValueError(f"not a flow run id: {run_id!r}")
        return posixpath.join(self._runs, run_id)

    def _ensure(self, run_id: str) -> str:
        directory = self._run_dir(run_id)
        self._fs.ensure_dir(directory, DIR_MODE)
        return directory

    def save_call(self, run_id: str, name: str, document: object) -> str:
        if not _FILE_NAME.match(name) or name == RECORD_FILE:
            raise ValueError(f"not a call file name: {name!r}")
        path = posixpath.join(self._ensure(run_id), name)
        data = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        self._fs.write_atomic(path, data.encode("utf-8"))
        return path

    def save(self, record: FlowRunRecord) -> None:
        path = posixpath.join(self._ensure(record.run_id), RECORD_FILE)
        self._fs.write_atomic(path, encode_record(record))

    def run_ids(self) -> list[str]:
        try:
            names = self._fs.list_dir(self._runs)
        except FileNotFoundError:
            return []
        return [name for name in names if _RUN_ID.match(name)]

    def load(self, run_id: str) -> FlowRunRecord | None:
        path = posixpath.join(self._run_dir(run_id), RECORD_FILE)
        try:
            data = self._fs.read_small(path, MAX_RECORD_BYTES)
        except StableReadError as error:
            if error.failure is ReadFailure.MISSING:
                return None
            raise UnreadableRunRecord(f"{path}: {error.failure.value}") from None
        return decode_record(data)
