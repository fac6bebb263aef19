"""The on-disk JSON shapes of squads and tasks (upstream layout, camelCase keys).

(De)serialisation lives here at the edge, through a private ``cattrs`` converter that forbids
unknown keys; the domain only sees values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from domain.attestation.grounding import DeliveryObserved, SpawnObserved
from domain.errors import ErrorCode, RecordError
from domain.names import camel
from domain.spec.model import SquadConfig
from domain.squad.messages import MailboxEntry, Message
from domain.squad.model import (
    AgentSetting,
    Review,
    SessionBinding,
    SpecRef,
    Squad,
    Task,
)
from domain.strict_json import JsonDecodeFailure, decode_json_object
from domain.usage import Usage

# What a task's record keeps of its usage (squad.json's and task.json's upstream shape).
TASK_USAGE_FIELDS = ("input_tokens", "output_tokens", "cost", "turns")


def render_timestamp(moment: datetime) -> str:
    """RFC 3339 UTC with milliseconds and ``Z``, as JavaScript's ``toISOString`` writes it."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_timestamp(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    if moment.utcoffset() is None:
        raise ValueError("timestamp without a UTC offset")
    return moment


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_unstructure_hook(datetime, render_timestamp)
    converter.register_structure_hook(datetime, lambda value, _t: parse_timestamp(value))

    def agents_out(agents: tuple[tuple[str, AgentSetting], ...]) -> dict[str, Any]:
        return {name: converter.unstructure(setting) for name, setting in agents}

    def agents_in(value: Mapping[str, Any], _t: Any) -> tuple[tuple[str, AgentSetting], ...]:
        return tuple((name, converter.structure(v, AgentSetting)) for name, v in value.items())

    overrides: dict[type, dict[str, Any]] = {}
    for cls in (
        SquadConfig,
        SpecRef,
        AgentSetting,
        Usage,
        SessionBinding,
        Review,
        Task,
        Squad,
        Message,
        MailboxEntry,
        SpawnObserved,
        DeliveryObserved,
    ):
        renames: dict[str, Any] = {
            field.name: override(rename=camel(field.name))
            for field in attrs.fields(cls)
            if field.init
        }
        if cls is Message:
            renames["sender"] = override(rename="from")
            renames["kind"] = override(rename="type")
        if cls is Squad:
            renames["agents"] = override(unstruct_hook=agents_out, struct_hook=agents_in)
        if cls is Usage:
            for name in renames.keys() - set(TASK_USAGE_FIELDS):
                renames[name] = override(omit=True)
        overrides[cls] = renames

    # Each record's functions are generated at its first use, not here: a command that only
    # reads (``pi-squad status``) never pays for the writers', nor for the records it skips.
    def unstructure_fn(cls: type) -> Any:
        return make_dict_unstructure_fn(cls, converter, **overrides[cls])

    def structure_fn(cls: type) -> Any:
        return make_dict_structure_fn(cls, converter, **overrides[cls])

    converter.register_unstructure_hook_factory(overrides.__contains__, unstructure_fn)
    converter.register_structure_hook_factory(overrides.__contains__, structure_fn)
    return converter


_CONVERTER = _make_converter()


def squad_document(squad: Squad) -> dict[str, Any]:
    document: dict[str, Any] = _CONVERTER.unstructure(squad)
    # reviewOnComplete is not settable (§3) but persisted, unconditionally true, for upstream.
    document["config"]["reviewOnComplete"] = True
    if squad.spec is None:
        del document["spec"]
    if squad.flow_id is None:
        del document["flowId"]  # only an attested flow's squad carries it
    if squad.isolation_layers is None:
        del document["isolationLayers"]  # written once a child starts with layers recorded
    for key in ("cancelledBy", "dismissedAt"):  # kept by pi-squad alone, only once set
        if document[key] is None:
            del document[key]
    return document


def task_document(task: Task) -> dict[str, Any]:
    document: dict[str, Any] = _CONVERTER.unstructure(task)
    return document


def encode_document(document: Mapping[str, Any]) -> bytes:
    """Upstream's write format: two-space JSON plus a newline."""
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


_RECORD_ADVICE = (
    "pi-squad writes its records whole (atomically), so something else truncated or changed "
    "this file: restore it from a backup, or remove the squad's directory and create the squad "
    "again"
)
_EMPTY = "the file is empty"
_EXTRA_FIELDS = re.compile(r"extra fields found \(.*\)")


class CorruptRecord(RecordError, ValueError):
    """A persisted record that does not decode to its value: ``RECORD_CORRUPT``.

    Still a ``ValueError``, so code that skips undecodable records (the squad listing) keeps
    doing so. ``problem`` says what is wrong without quoting the record; the message starts
    with the file's path once the store knows it (``at``), else with the record's name.
    """

    def __init__(self, problem: str, *, record: str = "record", path: str | None = None) -> None:
        super().__init__(ErrorCode.RECORD_CORRUPT, f"{path or record}: {problem}: {_RECORD_ADVICE}")
        self.problem = problem
        self.record = record
        self.path = path

    def at(self, path: str) -> CorruptRecord:
        """The same failure, naming the file it was read from."""
        return CorruptRecord(self.problem, record=self.record, path=path)


def _record_object(data: bytes) -> dict[str, Any]:
    if not data.strip():
        raise JsonDecodeFailure(_EMPTY)
    return decode_json_object(data)


def describe_failure(exc: BaseException) -> str:
    """Why bytes did not decode to a record, without quoting the record's values."""
    if isinstance(exc, CorruptRecord):
        return exc.problem
    if isinstance(exc, JsonDecodeFailure):
        if exc.reason == _EMPTY:
            return _EMPTY
        if exc.reason.startswith("top level is"):
            return f"wrong shape: {exc.reason}"
        return f"not strict JSON: {exc.reason}"
    if isinstance(exc, cattrs.BaseValidationError):
        details = [
            _EXTRA_FIELDS.sub("unknown fields", line) for line in cattrs.transform_error(exc)
        ]
        return "wrong shape: " + "; ".join(details)
    return f"wrong shape ({type(exc).__name__})"


class JsonSquadCodec:
    """``SquadCodec`` over the upstream JSON layout; decoding is strict (one decoder)."""

    def encode_squad(self, squad: Squad) -> bytes:
        return encode_document(squad_document(squad))

    def decode_task(self, data: bytes) -> Task:
        """Raises ``CorruptRecord`` for anything but a valid task record."""
        try:
            document = _record_object(data)
            # Upstream normalisation: a legacy "failed: Cancelled by user" task is cancelled.
            if document.get("status") == "failed" and document.get("error") == "Cancelled by user":
                document = {**document, "status": "cancelled", "error": None}
            task: Task = _CONVERTER.structure(document, Task)
        except (ValueError, TypeError, KeyError, cattrs.BaseValidationError) as exc:
            raise CorruptRecord(
                f"not a valid task record: {describe_failure(exc)}", record="task.json"
            ) from None
        return task

    def encode_task(self, task: Task) -> bytes:
        return encode_document(task_document(task))

    def decode_squad(self, data: bytes) -> Squad:
        """Raises ``CorruptRecord`` (a ``ValueError``) for anything but a valid squad."""
        try:
            return self._decode_squad(data)
        except (ValueError, TypeError, KeyError, cattrs.BaseValidationError) as exc:
            raise CorruptRecord(
                f"not a valid squad record: {describe_failure(exc)}", record="squad.json"
            ) from None

    def _decode_squad(self, data: bytes) -> Squad:
        document = _record_object(data)
        if "taskIds" not in document:
            # Without its pinned task set a squad's tasks would be whatever directories exist.
            raise CorruptRecord(
                "no taskIds (the pinned task set): it was not written by this version of pi-squad",
                record="squad.json",
            )
        config = document.get("config")
        if isinstance(config, dict):
            config = {k: v for k, v in config.items() if k != "reviewOnComplete"}
            document = {**document, "config": config}
        squad: Squad = _CONVERTER.structure(document, Squad)
        return squad
