"""A ``SessionState`` as a small head document plus content-addressed part files.

The head (``state.json``) holds the session's scalars (its ledger and renewals among them),
the part of each non-empty bucket of its batches (a key's bucket: CRC-32 of the key modulo
``BUCKETS``) and a ``records`` part naming the buckets of its sources, receipts and
idempotency records, which a worker's calls do not change. A batches bucket names one part
per batch; a batch part names one part per job; a job part keeps each attempt's tool outcomes
as parts of ``OUTCOMES_PER_PART`` outcomes. A part's file name is its kind and the SHA-256 of
its bytes, so a name always means the same bytes: a part is written only when the head it
replaces names no file of that name, and a decoded part cached under its name is never stale,
whichever process wrote it. A transaction thus writes the parts on the path to what changed
(a broker call: the last outcomes part, the job, its batch, its bucket and the head), not the
session's history.

``PartCache`` remembers, for the parts of the head last read or written, each decoded value
by name and each name by the identity of its value: a frozen value a transaction did not
change is the same object, so its part is neither encoded nor written again.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import attrs

from adapters.delegation.store_codec import CONVERTER, encode_document
from domain.delegation.receipts import EvidenceReceipt
from domain.delegation.session import Batch, IdempotencyRecord, Job, SessionState, SourceRecord
from domain.strict_json import decode_json

LAYOUT = 2
BUCKETS = 8
OUTCOMES_PER_PART = 16
RECORD_MAPS: dict[str, type[Any]] = {
    "sources": SourceRecord,
    "receipts": EvidenceReceipt,
    "idempotency": IdempotencyRecord,
}
MAPS = (*RECORD_MAPS, "batches")

ReadPart = Callable[[str], bytes]


def bucket_of(key: str) -> str:
    return str(zlib.crc32(key.encode("utf-8")) % BUCKETS)


def part_name(kind: str, data: bytes) -> str:
    return f"{kind}-{hashlib.sha256(data).hexdigest()[:32]}.json"


def is_head(document: Any) -> bool:
    return isinstance(document, dict) and document.get("layout") == LAYOUT


@attrs.frozen
class _Entry:
    value: Any
    # This part and every part under it, and their bytes (a part named twice counted twice).
    closure: frozenset[str]
    size: int


@attrs.define
class PartCache:
    """Decoded parts of one session by name, each with the parts under it; and each name by
    the identity of its value (the value held with it, so that its ``id`` stays its own)."""

    entries: dict[str, _Entry] = attrs.field(factory=dict)
    names: dict[Hashable, tuple[str, Any]] = attrs.field(factory=dict)
    # A whole mapping's buckets by the identity of its keys and values (held, as above): an
    # unchanged map of 200 sources is not bucketed again.
    layouts: dict[Hashable, tuple[tuple[Any, ...], dict[str, str]]] = attrs.field(factory=dict)

    def add(self, name: str, value: Any, size: int, children: Sequence[str]) -> _Entry:
        below = [self.entries[child] for child in children]
        closure = frozenset({name}).union(*(entry.closure for entry in below))
        entry = _Entry(value, closure, size + sum(entry.size for entry in below))
        self.entries[name] = entry
        self.names[_identity(name, value)] = (name, value)
        return entry

    def remember_layout(self, kind: str, mapping: Mapping[str, Any], names: dict[str, str]) -> None:
        values = tuple(mapping.values())
        self.layouts[_layout_key(kind, mapping, values)] = (values, dict(names))

    def layout(self, kind: str, mapping: Mapping[str, Any]) -> dict[str, str] | None:
        found = self.layouts.get(_layout_key(kind, mapping, tuple(mapping.values())))
        return None if found is None else dict(found[1])

    def named(self, kind: str, value: Any) -> str | None:
        found = self.names.get(_identity(kind, value))
        return None if found is None else found[0]

    def prune(self, referenced: frozenset[str]) -> None:
        """Forget parts no longer named, once they outnumber the named ones."""
        if len(self.entries) <= 2 * len(referenced) + 64:
            return
        self.entries = {name: e for name, e in self.entries.items() if name in referenced}
        self.names = {key: found for key, found in self.names.items() if found[0] in referenced}
        self.layouts = {
            key: found
            for key, found in self.layouts.items()
            if referenced.issuperset(found[1].values())
        }


def _layout_key(kind: str, mapping: Mapping[str, Any], values: tuple[Any, ...]) -> Hashable:
    return (kind, tuple(mapping), tuple(map(id, values)))


def _identity(name: str, value: Any) -> Hashable:
    """What an unchanged value keeps: itself, or (for a bucket or a run of outcomes, rebuilt
    by every change) each value it holds."""
    kind = name.split("-", 1)[0]
    if kind in MAPS:
        return (kind, tuple((key, id(item)) for key, item in value.items()))
    if kind == "outcomes":
        return (kind, tuple(id(item) for item in value))
    if kind == "records":  # names only: equal names, equal part
        return (kind, tuple((m, tuple(buckets.items())) for m, buckets in value.items()))
    return (kind, id(value))


class PartDecoder:
    """One read of a head: every part it names, from the cache or read and decoded."""

    def __init__(self, cache: PartCache, read: ReadPart) -> None:
        self._cache = cache
        self._read = read
        self.referenced: frozenset[str] = frozenset()

    def _part(self, name: str, decode: Callable[[Any], tuple[Any, Sequence[str]]]) -> _Entry:
        entry = self._cache.entries.get(name)
        if entry is None:
            data = self._read(name)
            value, children = decode(decode_json(data))
            entry = self._cache.add(name, value, len(data), children)
        return entry

    def state(self, head: Mapping[str, Any]) -> SessionState:
        index = self._part(head["records"], self._records_index)
        tops = [index]
        maps: dict[str, dict[str, Any]] = {}
        for kind, record in RECORD_MAPS.items():
            maps[kind] = {}
            for name in index.value[kind].values():
                maps[kind].update(self._part(name, _records_of(record)).value)
            self._cache.remember_layout(kind, maps[kind], index.value[kind])
        batches: dict[str, Batch] = {}
        for name in head["batches"].values():
            bucket = self._part(name, self._batches_bucket)
            tops.append(bucket)
            batches.update(bucket.value)
        self.referenced = frozenset().union(*(entry.closure for entry in tops))
        scalars = CONVERTER.structure({**head["state"], "batches": {}}, SessionState)
        return attrs.evolve(
            scalars,
            batches=batches,
            sources=maps["sources"],
            receipts=maps["receipts"],
            idempotency=maps["idempotency"],
        )

    def _records_index(self, doc: Any) -> tuple[dict[str, dict[str, str]], Sequence[str]]:
        for kind, record in RECORD_MAPS.items():
            for name in doc[kind].values():
                self._part(name, _records_of(record))
        return doc, [name for buckets in doc.values() for name in buckets.values()]

    def _batches_bucket(self, doc: Any) -> tuple[dict[str, Batch], Sequence[str]]:
        batches = {key: self._part(name, self._batch).value for key, name in doc.items()}
        return batches, list(doc.values())

    def _batch(self, doc: Any) -> tuple[Batch, Sequence[str]]:
        jobs = tuple(self._part(name, self._job).value for name in doc["jobs"])
        batch: Batch = CONVERTER.structure({**doc, "jobs": []}, Batch)
        return attrs.evolve(batch, jobs=jobs), doc["jobs"]

    def _job(self, doc: Any) -> tuple[Job, Sequence[str]]:
        runs = [attempt["toolOutcomes"] for attempt in doc["attempts"]]
        outcomes = [
            tuple(o for name in names for o in self._part(name, _outcomes).value) for names in runs
        ]
        plain = {**doc, "attempts": [{**a, "toolOutcomes": []} for a in doc["attempts"]]}
        job: Job = CONVERTER.structure(plain, Job)
        attempts = tuple(
            attrs.evolve(attempt, tool_outcomes=kept)
            for attempt, kept in zip(job.attempts, outcomes, strict=True)
        )
        return attrs.evolve(job, attempts=attempts), [name for names in runs for name in names]


def _records_of(record: type[Any]) -> Callable[[Any], tuple[dict[str, Any], Sequence[str]]]:
    def decode(doc: Any) -> tuple[dict[str, Any], Sequence[str]]:
        return {key: CONVERTER.structure(value, record) for key, value in doc.items()}, ()

    return decode


def _outcomes(doc: Any) -> tuple[tuple[Any, ...], Sequence[str]]:
    return tuple(doc), ()


def _chunks(outcomes: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    return [
        outcomes[start : start + OUTCOMES_PER_PART]
        for start in range(0, len(outcomes), OUTCOMES_PER_PART)
    ]


class PartEncoder:
    """One commit's parts: each part's name, the bytes of the parts ``existing`` lacks, every
    part the new head names (``referenced``) and the bytes of all of them (``total``)."""

    def __init__(self, cache: PartCache, existing: frozenset[str]) -> None:
        self._cache = cache
        self._existing = existing
        self.written: dict[str, bytes] = {}
        self.referenced: frozenset[str] = frozenset()
        self.total = 0

    def _part(
        self,
        kind: str,
        value: Any,
        children: Callable[[], Sequence[str]],
        document: Callable[[Sequence[str]], Any],
    ) -> tuple[str, _Entry]:
        """The part of ``value``: the one the old head names when ``value`` is unchanged (its
        children not even visited), else encoded anew from its children's names."""
        name = self._cache.named(kind, value)
        if name is not None and self._unchanged(name):
            return name, self._cache.entries[name]
        names = children()
        data = encode_document(document(names))
        name = part_name(kind, data)
        if name not in self._existing:
            self.written[name] = data
        return name, self._cache.add(name, value, len(data), names)

    def _unchanged(self, name: str) -> bool:
        """The old head names the part, and this cache holds it."""
        return name in self._existing and name in self._cache.entries

    def head(self, state: SessionState) -> bytes:
        emptied = attrs.evolve(state, batches={}, sources={}, receipts={}, idempotency={})
        scalars = {k: v for k, v in CONVERTER.unstructure(emptied).items() if k not in MAPS}
        index = {kind: self._buckets(kind, getattr(state, kind))[0] for kind in RECORD_MAPS}
        records, entry = self._part(
            "records",
            index,
            lambda: [name for buckets in index.values() for name in buckets.values()],
            lambda _: index,
        )
        batches, tops = self._buckets("batches", state.batches)
        tops.append(entry)
        head = {"layout": LAYOUT, "state": scalars, "records": records, "batches": batches}
        data = encode_document(head)
        self.referenced = frozenset().union(*(entry.closure for entry in tops))
        self.total = len(data) + sum(entry.size for entry in tops)
        return data

    def _buckets(
        self, kind: str, mapping: Mapping[str, Any]
    ) -> tuple[dict[str, str], list[_Entry]]:
        """The part of each non-empty bucket of ``mapping`` by bucket, and their entries."""
        known = self._cache.layout(kind, mapping)
        if known is not None and all(self._unchanged(name) for name in known.values()):
            return known, [self._cache.entries[name] for name in known.values()]
        buckets: dict[str, dict[str, Any]] = {}
        for key, value in mapping.items():
            buckets.setdefault(bucket_of(key), {})[key] = value
        names, entries = {}, []
        for bucket, content in sorted(buckets.items()):
            names[bucket], entry = self._bucket(kind, dict(sorted(content.items())))
            entries.append(entry)
        self._cache.remember_layout(kind, mapping, names)
        return names, entries

    def _bucket(self, kind: str, entries: dict[str, Any]) -> tuple[str, _Entry]:
        if kind == "batches":
            batches: dict[str, str] = {}

            def children() -> Sequence[str]:
                batches.update((key, self._batch(batch)) for key, batch in entries.items())
                return list(batches.values())

            return self._part(kind, entries, children, lambda _: batches)
        return self._part(
            kind, entries, list, lambda _: {k: CONVERTER.unstructure(v) for k, v in entries.items()}
        )

    def _batch(self, batch: Batch) -> str:
        def document(jobs: Sequence[str]) -> Any:
            return {**CONVERTER.unstructure(attrs.evolve(batch, jobs=())), "jobs": jobs}

        return self._part("batch", batch, lambda: [self._job(j) for j in batch.jobs], document)[0]

    def _job(self, job: Job) -> str:
        runs: list[list[str]] = []

        def children() -> Sequence[str]:
            runs.extend(
                [self._outcomes(chunk) for chunk in _chunks(attempt.tool_outcomes)]
                for attempt in job.attempts
            )
            return [name for names in runs for name in names]

        def document(_: Sequence[str]) -> Any:
            doc = CONVERTER.unstructure(job)
            for attempt, names in zip(doc["attempts"], runs, strict=True):
                attempt["toolOutcomes"] = names
            return doc

        return self._part("job", job, children, document)[0]

    def _outcomes(self, chunk: tuple[Any, ...]) -> str:
        return self._part("outcomes", chunk, list, lambda _: list(chunk))[0]
