"""The model roster of a flow in a real Pi 0.80.10 session: the shim hands the flow tool the
session's own model, thinking level and available models (``sessionModels``, docs/bridge.md),
so ``capable`` is the model the session runs and the tiers rank what it can run."""

from __future__ import annotations

import ast
import json

import pytest

from tests.e2e.flow_faces.support import FacesWorld, flow_prompt, is_flow_end, result_text

pytestmark = pytest.mark.realpi


def test_show_config_in_a_session_names_the_sessions_own_model_and_level(
    world: FacesWorld,
) -> None:
    client = world.main_pi()
    try:
        client.skip()
        # First /flows config, which hears the session's models with its own request...
        client.send({"type": "prompt", "message": "/flows config"})
        notice = client.find(
            lambda r: r.get("type") == "extension_ui_request" and r.get("method") == "notify",
            timeout=60,
        )
        # ...then the tool, whose call brings them along as well.
        client.send(flow_prompt({"showConfig": True}))
        records = client.wait_for(lambda r: r.get("type") == "agent_settled", timeout=120)
    finally:
        client.close()
    assert "modelTier.capable: fake/fake-model, thinking off — the model this session" in (
        json.dumps(notice, ensure_ascii=False)
    )
    (end,) = [r for r in records if is_flow_end(r)]
    text = result_text(end)
    assert not end["isError"], text
    roster = ast.literal_eval(text.split("modelRoster: ", 1)[1].split("\n\n", 1)[0])
    # fake-model does not reason: the session runs it at off, as Pi's getThinkingLevel says.
    assert roster[1] == (
        "modelTier.capable: fake/fake-model, thinking off — the model this session is running, "
        "at its current thinking level (off)"
    )
    assert roster[0].startswith("modelTier.fast: fake/fake-model, thinking off — the session")
    assert "model this install can run on fake" in roster[0]
    assert not [line for line in roster if line.startswith("modelRoster.issue")]
