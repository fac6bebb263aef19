"""``DelegationStore`` over files under ``<root>/delegation/``.

```
<root>/delegation/                    0700
├── policy.json                       the user's grant (read by adapters/delegation/policy.py)
└── sessions/<name>/                  0700
    ├── .session.lock                 every read-modify-write of the session
    ├── state.json                    0600  the head: scalars, ledger, the part of each bucket
    ├── parts/<kind>-<sha256>.json    0600  one bucket, batch, job or outcomes run; never changed
    └── sources/<sha256>              0400  captured bytes, written once, never changed
```

A transaction writes only the parts whose bytes changed (``store_parts.py``: a part's name is
the hash of its bytes), fsyncs them and their directory, then replaces ``state.json``
atomically (temp file, fsync, rename, directory fsync): that replace is the commit. Parts the
new head no longer names are removed after it. A crash therefore leaves the state before or
after an operation, never between: before the replace the old head names only old parts, all
intact; after it, every part the new head names is durable. What a crash leaves behind is
parts no head names, removed by the first transaction of the session a store instance makes.
A ``state.json`` holding the whole state (the layout before parts) is read as it is and
replaced by a head at the session's next write. Snapshots are written (exclusively, then
read-only) before the state that names them, so a state never cites a missing snapshot; an
orphan snapshot after a crash is harmless and reused by the next capture of the same bytes.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import attrs
import cattrs

from adapters.delegation.store_codec import structure_state
from adapters.delegation.store_parts import PartCache, PartDecoder, PartEncoder, is_head
from application.ports import FileSystem, LockFactory, ReadFailure, StableReadError
from domain.delegation.errors import DelegationError
from domain.delegation.session import SessionState, check_session_name
from domain.errors import ErrorCode, RecordError
from domain.strict_json import JsonDecodeFailure, decode_json

MAX_STATE_BYTES = 64 * 1024 * 1024  # the head and every part it names, together
MAX_PART_BYTES = 16 * 1024 * 1024  # any one of them
MAX_SOURCE_BYTES = 64 * 1024 * 1024
LOCK_TIMEOUT = 30.0
# A read without the lock that finds a part gone saw a head replaced meanwhile: read again.
SNAPSHOT_ATTEMPTS = 5
# A head or part of another shape fails as one of these (a key or field missing, a list
# where a mapping belongs).
_DECODE_ERRORS = (
    JsonDecodeFailure,
    cattrs.BaseValidationError,
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
)


class _PartMissing(Exception):
    pass


class _Transaction:
    def __init__(self, state: SessionState | None) -> None:
        self._state = state
        self.pending: SessionState | None = None

    @property
    def state(self) -> SessionState | None:
        return self._state

    def save(self, state: SessionState) -> None:
        self.pending = state


@attrs.frozen
class _Loaded:
    """What a read of the session found: the state and the parts its head names."""

    state: SessionState | None
    data: bytes | None = None
    parts: frozenset[str] = frozenset()


def session_directory(root: str, session: str) -> str:
    """``<root>/delegation/sessions/<session>``: everything one session's transactions write."""
    return f"{root.rstrip('/')}/delegation/sessions/{check_session_name(session)}"


def _corrupt(session: str, file: str, error: Exception) -> RecordError:
    return RecordError(
        ErrorCode.RECORD_CORRUPT,
        f"delegation session '{session}' {file} does not decode "
        f"({type(error).__name__}); nothing was changed",
    )


class FileDelegationStore:
    def __init__(self, fs: FileSystem, locks: LockFactory, root: str) -> None:
        self._fs = fs
        self._locks = locks
        self._root = root
        self._base = f"{root.rstrip('/')}/delegation"
        # Decoded parts per session; the guard orders threads sharing this store.
        self._caches: dict[str, PartCache] = {}
        self._swept: set[str] = set()
        self._guard = threading.Lock()

    def session_dir(self, session: str) -> str:
        return session_directory(self._root, session)

    def _state_file(self, session: str) -> str:
        return f"{self.session_dir(session)}/state.json"

    def _parts_dir(self, session: str) -> str:
        return f"{self.session_dir(session)}/parts"

    def _read_part(self, session: str, name: str) -> bytes:
        try:
            return self._fs.read_small(f"{self._parts_dir(session)}/{name}", MAX_PART_BYTES)
        except FileNotFoundError:
            raise _PartMissing(name) from None
        except StableReadError as error:
            if error.failure is ReadFailure.MISSING:
                raise _PartMissing(name) from None
            raise

    def _load(self, session: str) -> _Loaded:
        path = self._state_file(session)
        if not self._fs.exists(path):
            return _Loaded(None)
        data = self._fs.read_small(path, MAX_STATE_BYTES)
        try:
            document = decode_json(data)
            if not is_head(document):
                return _Loaded(structure_state(document), data)
        except _DECODE_ERRORS as error:
            raise _corrupt(session, "state.json", error) from None
        with self._guard:
            cache = self._caches.setdefault(session, PartCache())
            decoder = PartDecoder(cache, lambda name: self._read_part(session, name))
            try:
                state = decoder.state(document)
            except _DECODE_ERRORS as error:
                raise _corrupt(session, "state parts", error) from None
            cache.prune(decoder.referenced)
            return _Loaded(state, data, decoder.referenced)

    @contextmanager
    def transaction(self, session: str) -> Iterator[_Transaction]:
        directory = self.session_dir(session)
        self._fs.ensure_dir(directory, 0o700)
        with self._locks.lock(f"{directory}/.session.lock", timeout=LOCK_TIMEOUT):
            try:
                loaded = self._load(session)
            except _PartMissing as missing:
                raise _corrupt(session, f"parts/{missing}", FileNotFoundError()) from None
            self._sweep(session, loaded.parts)
            transaction = _Transaction(loaded.state)
            yield transaction
            if transaction.pending is not None:
                self._commit(session, loaded, transaction.pending)

    def _sweep(self, session: str, named: frozenset[str]) -> None:
        """Parts no head names (a transaction that crashed before or after its commit left
        them); under the lock, so that no live writer's part is among them."""
        if session in self._swept:
            return
        self._swept.add(session)
        directory = self._parts_dir(session)
        if self._fs.is_dir(directory):
            for name in self._fs.list_dir(directory):
                if name not in named:
                    self._fs.remove_file(f"{directory}/{name}")

    def _commit(self, session: str, loaded: _Loaded, state: SessionState) -> None:
        with self._guard:
            cache = self._caches.setdefault(session, PartCache())
            encoder = PartEncoder(cache, loaded.parts)
            head = encoder.head(state)
            named = encoder.referenced
        # A read-only operation (status, a collect with nothing to record) changes no byte:
        # nothing is rewritten, so waiting collects do not churn the disk.
        if head == loaded.data:
            return
        self._check_sizes(session, {"state.json": head, **encoder.written}, encoder.total)
        directory = self._parts_dir(session)
        if encoder.written:
            self._fs.ensure_dir(directory, 0o700)
            for name, data in encoder.written.items():
                self._write_part(f"{directory}/{name}", data)
            self._fs.fsync_dir(directory)
        self._fs.write_atomic(self._state_file(session), head)
        for name in sorted(loaded.parts - named):
            self._fs.remove_file(f"{directory}/{name}")

    def _write_part(self, path: str, data: bytes) -> None:
        try:
            self._fs.create_file_exclusive(path, data, 0o600)
        except FileExistsError:
            # An orphan of a crashed transaction, maybe torn: no head names it.
            self._fs.remove_file(path)
            self._fs.create_file_exclusive(path, data, 0o600)

    @staticmethod
    def _check_sizes(session: str, files: dict[str, bytes], total: int) -> None:
        for name, data in files.items():
            if len(data) > MAX_PART_BYTES:
                raise _too_large(session, name, len(data), MAX_PART_BYTES)
        if total > MAX_STATE_BYTES:
            raise _too_large(session, "state.json and its parts", total, MAX_STATE_BYTES)

    def snapshot(self, session: str) -> SessionState | None:
        missing = ""
        for _ in range(SNAPSHOT_ATTEMPTS):
            try:
                return self._load(session).state
            except _PartMissing as gone:
                missing = str(gone)
        raise _corrupt(session, f"parts/{missing}", FileNotFoundError())

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


def _too_large(session: str, file: str, size: int, allowed: int) -> DelegationError:
    return DelegationError(
        ErrorCode.DELEGATE_CAPACITY_EXHAUSTED,
        f"delegation session '{session}': {file} would be {size} bytes, more than the "
        f"{allowed} allowed; nothing was changed. Cancel or collect settled batches "
        f"(`pi-squad delegate status --session {session}`) so that retention prunes them",
    )
