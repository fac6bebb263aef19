"""The Pi ``models.json`` pointing a provider of each wire protocol at one scripted server.

Provider ``fake`` / model ``fake-model`` is the default: ``openai-completions``, no thinking,
no price (what every test used before the other protocols). Beside it, one provider per wire
protocol Pi supports with a custom ``baseUrl`` (``PROTOCOL_PROVIDERS``), each with one
reasoning model ``fake-model`` priced per million tokens (``RATES``), so Pi computes a non-zero
cost from the usage the server reports, and ``fake`` gains ``fake-thinker``, the same on the
Chat Completions wire.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

PROVIDER = "fake"
MODEL_ID = "fake-model"
THINKING_MODEL_ID = "fake-thinker"

PROTOCOL_PROVIDERS: dict[str, str] = {
    "openai-completions": PROVIDER,
    "openai-responses": "fake-responses",
    "anthropic-messages": "fake-anthropic",
    "google-generative-ai": "fake-google",
}
"""Pi's ``api`` -> the provider name that speaks it to the scripted server."""

RATES: dict[str, float] = {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}
"""Dollars per million tokens of each priced scripted model."""


def protocol_model(api: str) -> tuple[str, str]:
    """The ``(provider, model)`` that runs a reasoning model on ``api``."""
    provider = PROTOCOL_PROVIDERS[api]
    return provider, THINKING_MODEL_ID if provider == PROVIDER else MODEL_ID


def _model(model_id: str, name: str, *, reasoning: bool) -> dict[str, Any]:
    model: dict[str, Any] = {
        "id": model_id,
        "name": name,
        "reasoning": reasoning,
        "input": ["text"],
        "contextWindow": 128000,
        "maxTokens": 4096,
    }
    if reasoning:
        model["cost"] = dict(RATES)
    return model


def models_config(base_url: str) -> dict[str, Any]:
    """The provider configuration Pi 0.80.10 reads (see docs/models.md in the Pi package), for a
    server whose OpenAI base is ``base_url`` (``http://HOST:PORT/v1``)."""
    v1 = base_url.rstrip("/")
    origin = v1.removesuffix("/v1")
    thinker = _model(THINKING_MODEL_ID, "Scripted thinker", reasoning=True)
    thinker["compat"] = {"supportsReasoningEffort": True, "thinkingFormat": "deepseek"}
    return {
        "providers": {
            PROVIDER: {
                "baseUrl": v1,
                "api": "openai-completions",
                "apiKey": "dummy",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [_model(MODEL_ID, "Scripted", reasoning=False), thinker],
            },
            PROTOCOL_PROVIDERS["openai-responses"]: {
                "baseUrl": v1,
                "api": "openai-responses",
                "apiKey": "dummy",
                "models": [_model(MODEL_ID, "Scripted (Responses)", reasoning=True)],
            },
            PROTOCOL_PROVIDERS["anthropic-messages"]: {
                "baseUrl": origin,
                "api": "anthropic-messages",
                "apiKey": "dummy",
                "models": [_model(MODEL_ID, "Scripted (Messages)", reasoning=True)],
            },
            PROTOCOL_PROVIDERS["google-generative-ai"]: {
                "baseUrl": f"{origin}/v1beta",
                "api": "google-generative-ai",
                "apiKey": "dummy",
                "models": [_model(MODEL_ID, "Scripted (Gemini)", reasoning=True)],
            },
        }
    }


def write_models_json(agent_dir: str | os.PathLike[str], base_url: str) -> Path:
    """Write ``<agent_dir>/models.json`` atomically (replacing any) and return its path.

    Select the model with ``pi --provider fake --model fake-model`` (or a pair from
    ``protocol_model``) and ``PI_CODING_AGENT_DIR=<agent_dir>``.
    """
    directory = Path(agent_dir)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "models.json"
    staging = directory / f".models.json.tmp.{os.getpid()}"
    staging.write_text(json.dumps(models_config(base_url), indent=2) + "\n", encoding="utf-8")
    os.replace(staging, target)
    return target
