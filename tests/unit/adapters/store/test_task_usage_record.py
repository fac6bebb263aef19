"""A task record keeps the squad's usage figures only (``inputTokens``, ``outputTokens``,
``cost``, ``turns``), whatever else the one ``Usage`` value carries: the upstream file shape
does not change, records written before still load, and no other usage key is accepted."""

from __future__ import annotations

import json

import attrs
import pytest

from adapters.store.json_records import CorruptRecord, JsonSquadCodec
from domain.usage import Usage
from tests.builders import task_record

CODEC = JsonSquadCodec()


def test_only_the_squad_figures_are_written() -> None:
    usage = Usage(
        input_tokens=12,
        output_tokens=3,
        cache_read_tokens=7,
        cache_write_tokens=1,
        cost=0.5,
        turns=2,
        cost_estimated=True,
        reported=frozenset({"input", "cache_read"}),
    )
    written = json.loads(CODEC.encode_task(attrs.evolve(task_record("t1"), usage=usage)))
    assert written["usage"] == {"inputTokens": 12, "outputTokens": 3, "cost": 0.5, "turns": 2}


def test_a_written_record_loads_back_equal_when_it_holds_the_squad_figures() -> None:
    task = attrs.evolve(
        task_record("t1"), usage=Usage(input_tokens=12, output_tokens=3, cost=0.5, turns=2)
    )
    assert CODEC.decode_task(CODEC.encode_task(task)) == task


def test_another_usage_key_in_a_record_is_refused() -> None:
    document = json.loads(CODEC.encode_task(task_record("t1")))
    document["usage"]["cacheReadTokens"] = 4
    with pytest.raises(CorruptRecord, match="unknown fields"):
        CODEC.decode_task(json.dumps(document).encode())
