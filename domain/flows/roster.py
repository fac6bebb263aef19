"""The model roster: which model and thinking level each tier (``fast``, ``capable``, ``deep``)
names, and why; derived from what Pi's agent directory and the environment say, without
network and without running Pi.

Sources, narrowest first (the seed's order, the parts built here): the user's
``<agent dir>/pi-flows.json`` ``models`` overrides > ``PI_FLOWS_FAST_MODEL`` /
``PI_FLOWS_DEEP_MODEL`` > the derived roster > Pi's default.

Derived, from the models ``models.json`` defines (Pi's built-in catalogue lives in its
JavaScript and is not read), ranked inside the ``enabledModels`` scope of ``settings.json``
when it has one:

- ``capable``: the session model (``--model``, its ``--provider``), else ``settings.json``'s
  ``defaultProvider``/``defaultModel``, else no ``--model`` (Pi's own default);
- ``fast``: the cheapest priced model (input + output price per token), preferring the
  session's provider, at thinking ``low``;
- ``deep``: the most capable priced model (a reasoning model first, then the highest output
  price), at thinking ``max``; when that is the session model, deep differs by thinking level.

A tier that cannot be derived does not resolve (a call's ``tier`` falls through to the next
rung) and says why in a ``modelRoster.issue`` line, as does a configuration that did not parse.
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import attrs

from domain.flows.roles import TierBinding

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
TIERS = ("fast", "capable", "deep")
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
class KnownModel:
    provider: str
    id: str
    reasoning: bool
    # Price per million tokens; ``None`` when models.json states none.
    input_price: float | None
    output_price: float | None

    @property
    def ref(self) -> str:
        return f"{self.provider}/{self.id}"

    @property
    def priced(self) -> bool:
        return self.input_price is not None and self.output_price is not None


@attrs.frozen
class Roster:
    bindings: tuple[TierBinding, ...]
    issues: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """What ``showConfig`` shows: one line per tier, then one per issue."""
        return [b.line() for b in self.bindings] + [f"modelRoster.issue: {i}" for i in self.issues]


@attrs.frozen
class _Override:
    model: str | None
    thinking: str | None
    origin: str


def derive_roster(
    files: ModelFiles, *, session_model: str | None, session_provider: str | None
) -> Roster:
    issues: list[str] = list(files.read_problems)
    models = _models(files.models_json, issues)
    settings = _object(files.settings_json, "settings.json", issues)
    overrides = _overrides(files, issues)
    scope = [p for p in settings.get("enabledModels", []) if isinstance(p, str) and p.strip()]
    in_scope = [m for m in models if not scope or any(_matches(p, m) for p in scope)]
    session = _session_ref(session_model, session_provider)
    if session is None:
        provider, model = settings.get("defaultProvider"), settings.get("defaultModel")
        if isinstance(model, str) and model:
            session = _session_ref(model, provider if isinstance(provider, str) else None)
            origin = "Pi's configured default (settings.json), as no --model was given"
        else:
            origin = ""
    else:
        origin = "the model this run was started with (--model)"
    capable = (
        TierBinding("capable", session, None, True, origin)
        if session is not None
        else TierBinding(
            "capable", None, None, True, "no --model was given: children load Pi's default"
        )
    )
    derived = {
        # A tier the configuration sets needs no derivation, nor an issue when it has none.
        "fast": _fast(
            in_scope, scope, session, session_provider, _unless("fast", overrides, issues)
        ),
        "capable": capable,
        "deep": _deep(in_scope, scope, session, _unless("deep", overrides, issues)),
    }
    bindings = tuple(_overridden(derived[tier], overrides.get(tier)) for tier in TIERS)
    return Roster(bindings, tuple(issues))


# -- derivation -------------------------------------------------------------------------------


def _fast(
    models: list[KnownModel],
    scope: list[str],
    session: str | None,
    session_provider: str | None,
    issues: list[str],
) -> TierBinding:
    priced = [m for m in models if m.priced]
    if not priced:
        return _underived("fast", models, scope, session=session, thinking="low", issues=issues)
    provider = session_provider or (session.split("/", 1)[0] if session and "/" in session else "")
    own = [m for m in priced if m.provider == provider]
    pool = own or priced
    best = min(pool, key=lambda m: (_price(m), m.ref))
    where = f" on {provider}" if own else ""
    return TierBinding(
        "fast", best.ref, "low", True, f"cheapest priced model in models.json{where}{_in(scope)}"
    )


def _deep(
    models: list[KnownModel], scope: list[str], session: str | None, issues: list[str]
) -> TierBinding:
    priced = [m for m in models if m.priced]
    if not priced:
        return _underived("deep", models, scope, session=session, thinking="max", issues=issues)
    best = max(priced, key=lambda m: (m.reasoning, m.output_price or 0.0, _price(m), m.ref))
    current = next((m for m in priced if _same(m.ref, session)), None)
    if current is not None and (current.reasoning, current.output_price) >= (
        best.reasoning,
        best.output_price,
    ):
        return TierBinding(
            "deep",
            session,
            "max",
            True,
            "the model this run uses is already the most capable priced one, so deep differs "
            "by thinking level (max), not by model",
        )
    kind = "reasoning model" if best.reasoning else "model"
    return TierBinding(
        "deep",
        best.ref,
        "max",
        True,
        f"most capable priced {kind} in models.json (highest output price){_in(scope)}",
    )


def _underived(
    tier: str,
    models: list[KnownModel],
    scope: list[str],
    *,
    session: str | None,
    thinking: str,
    issues: list[str],
) -> TierBinding:
    if scope and not models and session is not None:
        # A scope that leaves nothing to rank anchors the tier to the session's own model:
        # it is never widened back to models the user left out.
        return TierBinding(
            tier,
            session,
            thinking,
            True,
            "enabledModels leaves no model of models.json to rank, so the tier anchors to the "
            f"session model at thinking {thinking}",
        )
    why = (
        "enabledModels leaves no model of models.json in scope"
        if scope and not models
        else "no model in models.json states a price to rank by"
        if models
        else "models.json defines no model (Pi's built-in catalogue is not read)"
    )
    issues.append(
        f"modelTier.{tier} not derived: {why}; set models.{tier} in {FLOWS_CONFIG}"
        + (f" or {ENV_OVERRIDES[tier]}" if tier in ENV_OVERRIDES else "")
    )
    return TierBinding(tier, None, None, False, f"not derived: {why}")


def _overridden(binding: TierBinding, override: _Override | None) -> TierBinding:
    if override is None:
        return binding
    model = override.model if override.model != "default" else None
    thinking = override.thinking if override.thinking is not None else binding.thinking
    if override.model is None:  # only a thinking level: the derived model stays
        model = binding.model
    reason = f"set in {override.origin}"
    if override.model == "default":
        reason += " (no --model: children load Pi's default)"
    return TierBinding(binding.tier, model, thinking, True, reason)


# -- reading ----------------------------------------------------------------------------------


def _object(text: str | None, name: str, issues: list[str]) -> dict[str, Any]:
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


def _models(text: str | None, issues: list[str]) -> list[KnownModel]:
    providers = _object(text, "models.json", issues).get("providers")
    found: list[KnownModel] = []
    for provider, config in (providers if isinstance(providers, dict) else {}).items():
        entries = config.get("models") if isinstance(config, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
                continue
            raw_cost = entry.get("cost")
            cost: dict[str, Any] = raw_cost if isinstance(raw_cost, dict) else {}
            found.append(
                KnownModel(
                    provider=provider,
                    id=entry["id"],
                    reasoning=entry.get("reasoning") is True,
                    input_price=_number(cost.get("input")),
                    output_price=_number(cost.get("output")),
                )
            )
    return found


def _overrides(files: ModelFiles, issues: list[str]) -> dict[str, _Override]:
    found: dict[str, _Override] = {}
    for tier, raw in (("fast", files.fast_env), ("deep", files.deep_env)):
        if raw is not None and raw.strip():
            origin = ENV_OVERRIDES[tier]
            parsed = _spec(raw.strip(), origin, issues)
            if parsed is not None:
                found[tier] = parsed
    config = _object(files.flows_json, FLOWS_CONFIG, issues).get("models", {})
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


def _spec(spec: object, origin: str, issues: list[str]) -> _Override | None:
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
    if model is not None and (not isinstance(model, str) or not model or _blank(model)):
        issues.append(f"{origin}: model must be a model name without whitespace, or null")
        return None
    if thinking is not None and thinking not in THINKING_LEVELS:
        issues.append(f"{origin}: thinking must be one of {', '.join(THINKING_LEVELS)}")
        return None
    return _Override(
        model if isinstance(model, str) else None,
        thinking if isinstance(thinking, str) else None,
        origin,
    )


# -- small helpers ----------------------------------------------------------------------------


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def _price(model: KnownModel) -> float:
    return (model.input_price or 0.0) + (model.output_price or 0.0)


def _blank(text: str) -> bool:
    return any(char.isspace() for char in text)


def _matches(pattern: str, model: KnownModel) -> bool:
    """Pi's scope patterns: ``provider/id`` or ``id``, globs allowed, an optional ``:level``."""
    bare, _, level = pattern.rpartition(":")
    pattern = bare if level in THINKING_LEVELS and bare else pattern
    target = model.ref if "/" in pattern else model.id
    return fnmatch.fnmatchcase(target, pattern)


def _session_ref(model: str | None, provider: str | None) -> str | None:
    if model is None:
        return None
    return model if "/" in model or provider is None else f"{provider}/{model}"


def _same(ref: str, session: str | None) -> bool:
    return session is not None and (ref == session or ref.split("/", 1)[1] == session)


def _unless(tier: str, overrides: dict[str, _Override], issues: list[str]) -> list[str]:
    return [] if tier in overrides else issues


def _in(scope: list[str]) -> str:
    return " within enabledModels" if scope else ""
