"""What every wire protocol of the scripted model does alike, over real HTTP on loopback with
each protocol's client (no Pi): the same request gets the same bytes, and a diligent child reads
every chunk in batches of three, last first, then passes."""

from __future__ import annotations

import pytest

from adapters.scripted_model import ScriptedModelServer
from adapters.scripted_model.policies import VERDICT_PASS
from adapters.scripted_model.wire import protocol_for
from tests.integration.scripted_model import (
    anthropic_client,
    completions_client,
    google_client,
    responses_client,
)
from tests.integration.scripted_model.wires import Wire, diligent_reading

WIRES = [
    completions_client.WIRE,
    anthropic_client.WIRE,
    responses_client.WIRE,
    google_client.WIRE,
]
every_wire = pytest.mark.parametrize("wire", WIRES, ids=[wire.api for wire in WIRES])


@every_wire
def test_same_request_same_bytes(server: ScriptedModelServer, wire: Wire) -> None:
    system = "scripted-policy: diligent\nsquad-spec-chunks: 4"
    body = wire.request(system, "go", thinking=True, **wire.offer_reader)
    assert wire.post(server, body)[2] == wire.post(server, body)[2]


@every_wire
def test_diligent_reads_every_chunk_in_reverse_batches_of_three_then_passes(
    server: ScriptedModelServer, wire: Wire
) -> None:
    *reading, final = diligent_reading(wire, server)
    batches = [[call.arguments["index"] for call in wire.calls(reply)] for reply in reading]
    assert batches == [[6, 5, 4], [3, 2, 1], [0]]
    assert wire.calls(final) == []
    assert "[0, 1, 2, 3, 4, 5, 6] of 7" in final["text"]
    assert final["text"].rstrip().endswith(VERDICT_PASS)


# Every path a protocol with fixed paths answers on; Google's names the model, see its tests.
FIXED_PATHS = {
    "openai-completions": ("/v1/chat/completions", "/chat/completions"),
    "openai-responses": ("/v1/responses", "/responses"),
    "anthropic-messages": ("/v1/messages",),
}


@pytest.mark.parametrize("api", list(FIXED_PATHS))
def test_each_fixed_path_is_answered_by_its_protocol(api: str) -> None:
    answering = [protocol_for(path) for path in FIXED_PATHS[api]]
    assert [protocol.api if protocol else None for protocol in answering] == [api] * len(answering)


@pytest.mark.parametrize("path", ["/messages", "/v1/completions", "/v1/responses/x", "/"])
def test_no_protocol_claims_an_unknown_path(path: str) -> None:
    assert protocol_for(path) is None
