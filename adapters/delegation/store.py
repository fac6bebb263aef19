"""``DelegationStore`` over files under ``<root>/delegation/``.

```
<root>/delegation/                    0700
├── policy.json                       the user's grant (read by adapters/delegation/policy.py)
└── sessions/<name>/                  0700
    ├── .session.lock                 every read-modify-write of the session
    ├── state.json                    0600  the whole SessionState, replaced atomically
    └── sources/<sha256>              0400  captured bytes, written once, never changed
```

One transaction is one atomic replace of ``state.json`` (temp file, fsync, rename, directory
fsync: ``FileSystem.write_atomic``), so a crash leaves the state before or after an operation,
never between. Snapshots are written (exclusively, then read-only) before the state that names
them, so a state never cites a missing snapshot; an orphan snapshot after a crash is harmless
and reused by the next capture of the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from application.ports import FileSystem, LockFactory, StableReadError
from domain.delegation.session import SessionState, check_session_name
from domain.delegation.usage_rows import usage_from_totals, usage_totals
from domain.errors import ErrorCode, RecordError
from domain.names import camel
from domain.strict_json import JsonDecodeFailure, decode_json
from domain.usage import Usage

MAX_STATE_BYTES = 64 * 1024 * 1024
MAX_SOURCE_BYTES = 64 * 1024 * 1024
LOCK_TIMEOUT = 30.0


def _converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)

    def renames(cls: type[Any]) -> dict[str, Any]:
        return {f.name: override(rename=camel(f.name)) for f in attrs.fields(cls)}

    def structure(cls: type[Any]) -> Callable[[Any, Any], Any]:
        return make_dict_structure_fn(cls, converter, **renames(cls))

    def unstructure(cls: type[Any]) -> Callable[[Any], Any]:
        return make_dict_unstructure_fn(cls, converter, **renames(cls))

    converter.register_structure_hook_factory(attrs.has, structure)
    converter.register_unstructure_hook_factory(attrs.has, unstructure)
    # A usage keeps the row receipts show: "never reported" is null, not 0.
    converter.register_unstructure_hook(Usage, usage_totals)
    converter.register_structure_hook(Usage, lambda row, _: usage_from_totals(row))
    return converter


CONVERTER = _converter()


def encode_state(state: SessionState) -> bytes:
    document = CONVERTER.unstructure(state)
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode_state(data: bytes) -> SessionState:
    document = decode_json(data)
    state: SessionState = CONVERTER.structure(document, SessionState)
    return state


class _Transaction:
    def __init__(self, state: SessionState | None, loaded: bytes | None) -> None:
        self._state = state
        self.loaded = loaded
        self.pending: SessionState | None = None

    @property
    def state(self) -> SessionState | None:
        return self._state

    def save(self, state: SessionState) -> None:
        self.pending = state


def session_directory(root: str, session: str) -> str:
    """``<root>/delegation/sessions/<session>``: everything one session's transactions write."""
    return f"{root.rstrip('/')}/delegation/sessions/{check_session_name(session)}"


class FileDelegationStore:
    def __init__(self, fs: FileSystem, locks: LockFactory, root: str) -> None:
        self._fs = fs
        self._locks = locks
        self._root = root
        self._base = f"{root.rstrip('/')}/delegation"

    def session_dir(self, session: str) -> str:
        return session_directory(self._root, session)

    def _state_file(self, session: str) -> str:
        return f"{self.session_dir(session)}/state.json"

    def _load(self, session: str) -> SessionState | None:
        return self._load_bytes(session)[0]

    def _load_bytes(self, session: str) -> tuple[SessionState | None, bytes | None]:
        path = self._state_file(session)
        if not self._fs.exists(path):
            return None, None
        data = self._fs.read_small(path, MAX_STATE_BYTES)
        try:
            return decode_state(data), data
        except (JsonDecodeFailure, cattrs.BaseValidationError, ValueError, TypeError) as error:
            raise RecordError(
                ErrorCode.RECORD_CORRUPT,
                f"delegation session '{session}' state does not decode "
                f"({type(error).__name__}); nothing was changed",
            ) from None

    @contextmanager
    def transaction(self, session: str) -> Iterator[_Transaction]:
        directory = self.session_dir(session)
        self._fs.ensure_dir(directory, 0o700)
        with self._locks.lock(f"{directory}/.session.lock", timeout=LOCK_TIMEOUT):
            transaction = _Transaction(*self._load_bytes(session))
            yield transaction
            if transaction.pending is not None:
                data = encode_state(transaction.pending)
                # A read-only operation (status, a collect with nothing to record) changes no
                # byte: nothing is rewritten, so waiting collects do not churn the disk.
                if data != transaction.loaded:
                    self._fs.write_atomic(self._state_file(session), data)

    def snapshot(self, session: str) -> SessionState | None:
        return self._load(session)

    def put_source(self, session: str, sha256: str, data: bytes) -> None:
        directory = f"{self.session_dir(session)}/sources"
        self._fs.ensure_dir(directory, 0o700)
        path = f"{directory}/{sha256}"
        if self._fs.exists(path):
            self.read_source(session, sha256)  # an existing snapshot must still be these bytes
            return
        self._fs.create_file_exclusive(path, data, 0o600)
        self._fs.mark_read_only(path)

    def read_source(self, session: str, sha256: str) -> bytes:
        path = f"{self.session_dir(session)}/sources/{sha256}"
        try:
            data = self._fs.read_stable(path, max_bytes=MAX_SOURCE_BYTES).data
        except StableReadError as error:
            raise ValueError(f"snapshot {sha256}: {error.failure.value}") from None
        if hashlib.sha256(data).hexdigest() != sha256:
            raise ValueError(f"snapshot {sha256} no longer has its captured bytes")
        return data
