"""What the model roster (``domain.flows.roster``) reads from Pi's agent directory and the
environment: the files as text (``ModelFiles``), parsed here without I/O into the models
``models.json`` defines, ``settings.json``'s scope and default, and the tier overrides of
``pi-flows.json`` and ``PI_FLOWS_FAST_MODEL`` / ``PI_FLOWS_DEEP_MODEL``.

Whatever does not parse is an issue line (``modelRoster.issue``), never a silent default.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from domain.flows.models import KnownModel, known_model
from domain.names import THINKING_LEVELS, TIERS

FLOWS_CONFIG = "pi-flows.json"
ENV_OVERRIDES = {"fast": "PI_FLOWS_FAST_MODEL", "deep": "PI_FLOWS_DEEP_MODEL"}


@attrs.frozen
class ModelFiles:
    """What the agent directory and the environment hold about models, as read: each file's
    text (``None`` when absent), the override variables, and any file that could not be read."""

    agent_dir: str = ""
    models_json: str | None = None
    settings_json: str | None = None
    flows_json: str | None = None
    fast_env: str | None = None
    deep_env: str | None = None
    read_problems: tuple[str, ...] = ()


@attrs.frozen
class Override:
    """A tier set by configuration: ``model`` ``"default"`` is no ``--model``, ``None`` keeps
    the derived one."""

    model: str | None
    thinking: str | None
    origin: str


@attrs.frozen
class Settings:
    """``settings.json``'s say: the ``enabledModels`` scope (empty: unscoped) and Pi's
    configured default model (``provider/id`` or a bare id)."""

    scope: tuple[str, ...] = ()
    default_model: str | None = None
    default_provider: str | None = None


def read_object(text: str | None, name: str, issues: list[str]) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        issues.append(f"{name} is not JSON ({error.__class__.__name__}); ignored")
        return {}
    if not isinstance(value, dict):
        issues.append(f"{name} is not a JSON object; ignored")
        return {}
    return value


def read_settings(text: str | None, issues: list[str]) -> Settings:
    settings = read_object(text, "settings.json", issues)
    raw_scope = settings.get("enabledModels")
    scope = tuple(
        p for p in (raw_scope if isinstance(raw_scope, list) else []) if isinstance(p, str)
    )
    provider, model = settings.get("defaultProvider"), settings.get("defaultModel")
    return Settings(
        scope=tuple(p for p in scope if p.strip()),
        default_model=model if isinstance(model, str) and model else None,
        default_provider=provider if isinstance(provider, str) and provider else None,
    )


def read_models_json(text: str | None, issues: list[str]) -> tuple[KnownModel, ...]:
    """The models ``models.json`` defines, with the price, reasoning flag, thinking map and
    context window each states."""
    providers = read_object(text, "models.json", issues).get("providers")
    found: list[KnownModel] = []
    for provider, config in (providers if isinstance(providers, dict) else {}).items():
        entries = config.get("models") if isinstance(config, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            model = known_model(entry, provider=provider)
            if model is not None:
                found.append(model)
    return tuple(found)


def read_overrides(files: ModelFiles, issues: list[str]) -> dict[str, Override]:
    found: dict[str, Override] = {}
    for tier, raw in (("fast", files.fast_env), ("deep", files.deep_env)):
        if raw is not None and raw.strip():
            origin = ENV_OVERRIDES[tier]
            parsed = _spec(raw.strip(), origin, issues)
            if parsed is not None:
                found[tier] = parsed
    config = read_object(files.flows_json, FLOWS_CONFIG, issues).get("models", {})
    if not isinstance(config, dict):
        issues.append(f"{FLOWS_CONFIG}: models is not an object; ignored")
        return found
    for tier, spec in config.items():
        origin = f"{FLOWS_CONFIG} models.{tier}"
        if tier not in TIERS:
            issues.append(f"{origin}: not a tier (fast, capable, deep); ignored")
            continue
        parsed = _spec(spec, origin, issues)
        if parsed is not None:
            found[tier] = parsed  # the config file outranks the environment
    return found


def _spec(spec: object, origin: str, issues: list[str]) -> Override | None:
    """``"provider/model[:level]"``, ``"default"``, or ``{"model": ..., "thinking": ...}``."""
    if isinstance(spec, str):
        name, _, level = spec.rpartition(":")
        spec = (
            {"model": name, "thinking": level}
            if level in THINKING_LEVELS and name
            else {"model": spec}
        )
    if not isinstance(spec, dict) or set(spec) - {"model", "thinking"}:
        issues.append(f'{origin}: expected "provider/model[:level]" or {{model, thinking}}')
        return None
    model: object = spec.get("model")
    thinking: object = spec.get("thinking")
    if "model" in spec and model is None:
        model = "default"
    if model is not None and (
        not isinstance(model, str) or not model or any(c.isspace() for c in model)
    ):
        issues.append(f"{origin}: model must be a model name without whitespace, or null")
        return None
    if thinking is not None and thinking not in THINKING_LEVELS:
        issues.append(f"{origin}: thinking must be one of {', '.join(THINKING_LEVELS)}")
        return None
    return Override(
        model if isinstance(model, str) else None,
        thinking if isinstance(thinking, str) else None,
        origin,
    )
