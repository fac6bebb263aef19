"""The encodings of the squad store's task records besides ``task.json``: ``messages.jsonl`` and
``observed.jsonl`` (JSON lines, appended to) and ``mailbox.json``; a record that does not decode
is a ``CorruptRecord``."""

from __future__ import annotations

import json

import cattrs

from adapters.store.json_records import _CONVERTER, CorruptRecord, describe_failure
from domain.attestation.grounding import DeliveryObserved, Observation, SpawnObserved
from domain.squad.messages import MailboxEntry, Message
from domain.strict_json import JsonDecodeFailure, decode_json


def encode_message(message: Message) -> bytes:
    document = _CONVERTER.unstructure(message)
    return (json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def decode_message(data: bytes) -> Message:
    try:
        message: Message = _CONVERTER.structure(decode_json(data), Message)
    except (JsonDecodeFailure, ValueError, TypeError, KeyError, cattrs.BaseValidationError) as exc:
        raise CorruptRecord(
            f"not a valid message record: {describe_failure(exc)}", record="messages.jsonl"
        ) from None
    return message


def decode_mailbox(data: bytes) -> tuple[MailboxEntry, ...]:
    try:
        raw = decode_json(data)
        if not isinstance(raw, list):
            raise CorruptRecord("not a JSON array", record="mailbox.json")
        entries = tuple(_CONVERTER.structure(item, MailboxEntry) for item in raw)
    except (JsonDecodeFailure, ValueError, TypeError, KeyError, cattrs.BaseValidationError) as exc:
        raise CorruptRecord(
            f"not a valid mailbox: {describe_failure(exc)}", record="mailbox.json"
        ) from None
    return entries


def encode_mailbox(entries: tuple[MailboxEntry, ...]) -> bytes:
    return (
        json.dumps([_CONVERTER.unstructure(e) for e in entries], indent=2, ensure_ascii=False)
        + "\n"
    ).encode()


def encode_observation(observation: Observation) -> bytes:
    document: dict[str, object]
    if isinstance(observation, SpawnObserved):
        document = {"kind": "spawn", **_CONVERTER.unstructure(observation)}
    else:
        document = {"kind": "delivery", **_CONVERTER.unstructure(observation)}
    return (json.dumps(document, ensure_ascii=True, separators=(",", ":")) + "\n").encode()


def decode_observation(data: bytes) -> Observation:
    try:
        raw = decode_json(data)
        if not isinstance(raw, dict):
            raise CorruptRecord("not a JSON object", record="observed.jsonl")
        kind = raw.pop("kind", None)
        if kind == "spawn":
            spawn: SpawnObserved = _CONVERTER.structure(raw, SpawnObserved)
            return spawn
        if kind == "delivery":
            delivery: DeliveryObserved = _CONVERTER.structure(raw, DeliveryObserved)
            return delivery
        raise CorruptRecord("no known kind", record="observed.jsonl")
    except (JsonDecodeFailure, ValueError, TypeError, KeyError, cattrs.BaseValidationError) as exc:
        raise CorruptRecord(f"not a valid observation: {exc}", record="observed.jsonl") from None


def decode_observations(data: bytes) -> tuple[Observation, ...]:
    observed: list[Observation] = []
    for line in split_lines(data):
        try:
            observed.append(decode_observation(line))
        except CorruptRecord:
            continue
    return tuple(observed)


def split_lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line.strip()]
