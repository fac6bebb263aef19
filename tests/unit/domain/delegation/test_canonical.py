"""The canonical serialisation and the packet digest (seed §3): stable under key order and
re-encoding, sensitive to every content change, integers only."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.delegation.canonical import NotCanonical, canonical_bytes, canonical_digest
from domain.delegation.envelope import (
    EffectiveLimits,
    Envelope,
    ModelRoute,
    SourceDescriptor,
    TaskContent,
    dedup_key,
)

scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.text(max_size=20)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def reorder(value: Any, seed: int) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        if seed % 2:
            items.reverse()
        return {key: reorder(item, seed // 2) for key, item in items}
    if isinstance(value, list):
        return [reorder(item, seed // 2) for item in value]
    return value


@given(values, st.integers(0, 1024))
def test_the_digest_does_not_depend_on_key_order(value: Any, seed: int) -> None:
    assert canonical_digest(reorder(value, seed)) == canonical_digest(value)


@given(values)
def test_canonical_bytes_survive_a_round_trip(value: Any) -> None:
    data = canonical_bytes(value)
    assert canonical_bytes(json.loads(data.decode("utf-8"))) == data
    assert canonical_digest(value) == hashlib.sha256(data).hexdigest()


@given(st.lists(st.integers(), min_size=2, max_size=6, unique=True))
def test_array_order_is_meaningful(items: list[int]) -> None:
    assert canonical_digest(items) != canonical_digest(list(reversed(items)))


def test_the_documented_form() -> None:
    assert canonical_bytes({"b": [2, 1], "a": "é", "c": None}) == (
        '{"a":"é","b":[2,1],"c":null}'.encode()
    )


@pytest.mark.parametrize("value", [1.5, {"x": 0.0}, [float("nan")], {1: "a"}, {"x": object()}])
def test_values_without_a_canonical_form_are_refused(value: Any) -> None:
    with pytest.raises(NotCanonical):
        canonical_bytes(value)


def envelope(
    question: str = "q", sha: str = "a" * 64, batch: str = "b-1", deadline_at_ms: int = 123
) -> Envelope:
    return Envelope(
        batch_id=batch,
        job_id="j-1",
        attempt_id="a-1",
        policy_generation=1,
        task_generation=0,
        model_route=ModelRoute("p", "m", None, 1),
        limits=EffectiveLimits(4, 60_000, 16_384, 96, deadline_at_ms),
        task=TaskContent("o", "review", question, "acc", (), (), None, None, "r", (("R1", "t"),)),
        sources=(SourceDescriptor("src-1", sha, 3, 1, "text/plain", "captured", "a.py"),),
    )


def test_the_packet_binds_content_not_host_identities() -> None:
    assert envelope(batch="b-1").packet_digest() == envelope(batch="b-2").packet_digest()
    assert envelope().packet_digest() != envelope(question="q2").packet_digest()
    assert envelope().packet_digest() != envelope(sha="b" * 64).packet_digest()
    assert envelope().packet()["priorAttempt"] is None  # omitted inputs are explicit


def test_the_packet_and_route_carry_no_secrets() -> None:
    packet = envelope().packet()
    assert set(packet["modelRoute"]) == {"provider", "model", "thinking", "configGeneration"}
    assert packet["capabilities"]["delegate"] is False
    assert packet["capabilities"]["network"] is False


def test_dedup_is_exact_not_semantic() -> None:
    assert dedup_key(envelope(batch="b-1")) == dedup_key(envelope(batch="b-2"))
    assert dedup_key(envelope(question="q")) != dedup_key(envelope(question="q "))
    assert dedup_key(envelope()) != dedup_key(envelope(sha="c" * 64))


def test_the_packet_binds_the_limits_but_not_the_absolute_deadline() -> None:
    later = envelope(deadline_at_ms=999)
    assert envelope().packet()["limits"] == {
        "maxRequests": 4,
        "deadlineMs": 60_000,
        "maxOutputBytes": 16_384,
        "maxToolCalls": 96,
    }
    assert later.document()["limits"]["deadlineAtMs"] == 999
    assert later.packet_digest() == envelope().packet_digest()
    assert dedup_key(later) == dedup_key(envelope())
