"""The wire protocols the scripted model speaks: every API Pi 0.80.10 supports with a custom
``baseUrl``, each answering on its own path of one server (see ``common.WireProtocol``)."""

from __future__ import annotations

from adapters.scripted_model.wire.anthropic_messages import AnthropicMessages
from adapters.scripted_model.wire.common import (
    ApiRefusal,
    Encoded,
    TokenUsage,
    Turn,
    WireProtocol,
    fitted,
    thinking_for,
    token_usage,
)
from adapters.scripted_model.wire.google_generative_ai import GoogleGenerativeAI
from adapters.scripted_model.wire.openai_completions import OpenAICompletions
from adapters.scripted_model.wire.openai_responses import OpenAIResponses

PROTOCOLS: tuple[WireProtocol, ...] = (
    OpenAICompletions(),
    OpenAIResponses(),
    AnthropicMessages(),
    GoogleGenerativeAI(),
)


def protocol_for(path: str) -> WireProtocol | None:
    """The protocol a POST to ``path`` (query removed, no trailing slash) speaks, if any."""
    return next((protocol for protocol in PROTOCOLS if protocol.handles(path)), None)


__all__ = [
    "PROTOCOLS",
    "ApiRefusal",
    "Encoded",
    "TokenUsage",
    "Turn",
    "WireProtocol",
    "fitted",
    "protocol_for",
    "thinking_for",
    "token_usage",
]
