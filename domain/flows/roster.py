"""The model roster: which model and thinking level each tier (``fast``, ``capable``, ``deep``)
names, and why.

Sources, narrowest first (the seed's order, the parts built here): the user's
``<agent dir>/pi-flows.json`` ``models`` overrides > ``PI_FLOWS_FAST_MODEL`` /
``PI_FLOWS_DEEP_MODEL`` > the derived roster > Pi's default.

Derived from the models Pi's registry says this install can run (``AvailableModels``: the
main session's own registry, or Pi's as a headless run queries it); without a registry, or
when it could not be read, from the models ``models.json`` defines. Only usable, priced models
are ranked, and only inside ``settings.json``'s ``enabledModels`` scope when it has one:

- ``capable``: the session model at the session's thinking level (``--model`` with its
  ``--provider`` headless), else ``settings.json``'s ``defaultProvider``/``defaultModel``, else
  no ``--model`` (Pi's own default);
- ``fast``: the cheapest model (input + output price), preferring the session's provider, at
  thinking ``low``;
- ``deep``: the most capable model (extended thinking, then reasoning, then the highest output
  price), at thinking ``max``; when that is the session model, deep differs by thinking level.

Every level is lowered (or raised) to one the chosen model supports, as Pi itself would.

A scope is never widened. When it leaves nothing to rank, ``fast`` and ``deep`` anchor to the
session model; without one they bind to a model the scope names outright; a scope naming none
refuses them (``MODEL_SCOPE_UNSATISFIABLE`` for a role that asks for the tier and pins no model
of its own). Unscoped, a tier with nothing to rank does not resolve (a call's ``tier`` falls
through to the next rung). Either way a ``modelRoster.issue`` line says why, as it does for a
configuration that did not parse.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from domain.errors import ErrorCode
from domain.flows.models import (
    AvailableModels,
    KnownModel,
    find_model,
    matches_scope,
    scope_reference,
)
from domain.flows.roles import TierBinding
from domain.flows.roster_config import (
    ENV_OVERRIDES,
    FLOWS_CONFIG,
    ModelFiles,
    Override,
    read_models_json,
    read_overrides,
    read_settings,
)
from domain.names import TIERS

__all__ = ["ENV_OVERRIDES", "FLOWS_CONFIG", "TIERS", "ModelFiles", "Roster", "derive_roster"]

_REGISTRY = "model this install can run"
_MODELS_JSON = "priced model in models.json"


@attrs.frozen
class Roster:
    bindings: tuple[TierBinding, ...]
    issues: tuple[str, ...] = ()
    # Every model the install can run, unscoped: what a pinned model's thinking is clamped to.
    known: tuple[KnownModel, ...] = ()

    def lines(self) -> list[str]:
        """What ``showConfig`` shows: one line per tier, then one per issue."""
        return [b.line() for b in self.bindings] + [f"modelRoster.issue: {i}" for i in self.issues]


@attrs.frozen
class _Ranking:
    """What one derivation ranks: the usable, priced models in scope (``rankable``), what they
    are called in a reason (``what``), and the session's model (``current`` when known)."""

    rankable: tuple[KnownModel, ...]
    known: tuple[KnownModel, ...]
    scope: tuple[str, ...]
    what: str
    session: str | None
    session_thinking: str | None
    current: KnownModel | None
    provider: str | None

    @property
    def within(self) -> str:
        return " within enabledModels" if self.scope else ""

    def is_current(self, model: KnownModel) -> bool:
        return self.current is not None and model.ref == self.current.ref


def derive_roster(
    files: ModelFiles,
    *,
    session_model: str | None,
    session_provider: str | None,
    session_thinking: str | None = None,
    available: AvailableModels | None = None,
) -> Roster:
    """``session_thinking``: the running session's level, known only inside a Pi session (its
    ``capable`` reason then names the session rather than ``--model``). ``available``: what
    a model registry says this install can run; ``None``: no registry, ``models.json`` alone."""
    issues: list[str] = list(files.read_problems)
    settings = read_settings(files.settings_json, issues)
    overrides = read_overrides(files, issues)
    known, what = _catalogue(files, available, issues)
    session = _session_ref(session_model, session_provider)
    # A level belongs to the session's own model, never to the configured default below.
    thinking = session_thinking if session is not None else None
    origin = (
        "the model this session is running"
        if thinking is not None
        else "the model this run was started with (--model)"
    )
    if session is None and settings.default_model is not None:
        session = _session_ref(settings.default_model, settings.default_provider)
        origin = "Pi's configured default (settings.json), as no --model was given"
    current = find_model(known, session)
    scoped = [m for m in known if not settings.scope or _in_scope(m, settings.scope)]
    provider = session_provider or (current.provider if current is not None else None)
    ranking = _Ranking(
        rankable=tuple(m for m in scoped if m.usable and m.priced),
        known=known,
        scope=settings.scope,
        what=what,
        session=session,
        session_thinking=thinking,
        current=current,
        provider=provider or (session.split("/", 1)[0] if session and "/" in session else None),
    )
    derivations: dict[str, Callable[[list[str]], TierBinding]] = {
        "fast": lambda found: _fast(ranking, found),
        "capable": lambda found: _capable(ranking, origin),
        "deep": lambda found: _deep(ranking, found),
    }
    bindings: list[TierBinding] = []
    for tier in TIERS:
        found: list[str] = []
        override = overrides.get(tier)
        binding = _overridden(derivations[tier](found), override, known)
        # A tier the configuration sets needs no derivation, nor an issue when it has none.
        if override is None or binding.refused:
            issues += found
        bindings.append(binding)
    return Roster(tuple(bindings), tuple(issues), known)


def _catalogue(
    files: ModelFiles, available: AvailableModels | None, issues: list[str]
) -> tuple[tuple[KnownModel, ...], str]:
    if available is not None and available.problem is None:
        if available.warning is not None:
            issues.append(f"{available.source}: {available.warning}")
        return available.models, _REGISTRY
    if available is not None:
        issues.append(
            f"{available.source} could not be read ({available.problem}); the tiers rank the "
            "models of models.json alone"
        )
    return read_models_json(files.models_json, issues), _MODELS_JSON


# -- derivation -------------------------------------------------------------------------------


def _capable(r: _Ranking, origin: str) -> TierBinding:
    if r.session is None:
        return TierBinding(
            "capable", None, None, True, "no --model was given: children load Pi's default"
        )
    level = r.session_thinking
    if level is not None and r.current is not None:
        level = r.current.clamp(level)
    reason = origin if level is None else f"{origin}, at its current thinking level ({level})"
    return TierBinding("capable", r.session, level, True, reason)


def _fast(r: _Ranking, issues: list[str]) -> TierBinding:
    if not r.rankable:
        return _unranked("fast", "low", r, issues)
    own = [m for m in r.rankable if m.provider == r.provider]
    best = min(own or r.rankable, key=lambda m: (m.price, -(m.context_window or 0), m.ref))
    level = best.clamp("low")
    where = f" on {r.provider}" if own else ""
    if r.is_current(best):
        reason = (
            f"the session model is already the cheapest {r.what}{where}{r.within}, so fast "
            f"differs by thinking level ({level}), not by model"
        )
        return TierBinding("fast", r.session, level, True, reason)
    reason = f"cheapest {r.what}{where}{r.within}{_adjusted('low', level)}"
    return TierBinding("fast", best.ref, level, True, reason)


def _strength(model: KnownModel) -> tuple[bool, bool, float]:
    return (model.extended_thinking, model.reasoning, model.output_price or 0.0)


def _deep(r: _Ranking, issues: list[str]) -> TierBinding:
    if not r.rankable:
        return _unranked("deep", "max", r, issues)
    best = max(r.rankable, key=lambda m: (*_strength(m), m.price, m.context_window or 0, m.ref))
    current = next((m for m in r.rankable if r.is_current(m)), None)
    if current is not None and _strength(current) >= _strength(best):
        level = current.clamp("max")
        reason = (
            f"the session model is already the most capable {r.what}{r.within}, so deep "
            f"differs by thinking level ({level}), not by model"
        )
        if level == r.session_thinking:
            reason = (
                f"the session model is already the most capable {r.what}{r.within} and runs "
                f"at the highest thinking level it supports ({level}): deep is capable"
            )
        return TierBinding("deep", r.session, level, True, reason)
    level = best.clamp("max")
    kind = (
        "extended thinking first"
        if best.extended_thinking
        else "reasoning first"
        if best.reasoning
        else "none reasons"
    )
    reason = f"most capable {r.what}{r.within} ({kind}, then the highest output price)"
    return TierBinding("deep", best.ref, level, True, reason + _adjusted("max", level))


def _unranked(tier: str, level: str, r: _Ranking, issues: list[str]) -> TierBinding:
    """A tier with nothing to rank. A scope fails closed down a ladder, never through it: the
    session model; else a model the scope names outright; else refused. Unscoped, the tier
    is not derived and falls through."""
    if r.scope and r.session is not None:
        anchored = r.current.clamp(level) if r.current is not None else level
        reason = (
            f"enabledModels leaves no {r.what} to rank, so the tier anchors to the session "
            f"model at thinking {anchored}"
        )
        return TierBinding(tier, r.session, anchored, True, reason)
    if r.scope:
        reference = next(filter(None, map(scope_reference, r.scope)), None)
        if reference is not None:
            named = find_model(r.known, reference)
            bound = named.clamp(level) if named is not None else level
            reason = (
                f"enabledModels leaves no {r.what} to rank and no session model is known, so "
                f"the tier binds to the model enabledModels names ({reference})"
            )
            return TierBinding(tier, reference, bound, True, reason)
        why = (
            f"enabledModels leaves no {r.what} to rank, names no model outright, and no "
            "session model is known"
        )
        issues.append(
            f"modelTier.{tier} refused ({ErrorCode.MODEL_SCOPE_UNSATISFIABLE}): {why}; a role "
            f"asking for it must name a model, or set models.{tier} in {FLOWS_CONFIG}"
        )
        return TierBinding(tier, None, None, False, f"refused: {why}", refused=True)
    why = _unrankable(r)
    issues.append(
        f"modelTier.{tier} not derived: {why}; set models.{tier} in {FLOWS_CONFIG}"
        + (f" or {ENV_OVERRIDES[tier]}" if tier in ENV_OVERRIDES else "")
    )
    return TierBinding(tier, None, None, False, f"not derived: {why}")


def _unrankable(r: _Ranking) -> str:
    if r.what == _REGISTRY:
        if not r.known:
            return "this install can run no model (no provider has credentials)"
        return "no model this install can run has a context window large enough to rank"
    if not r.known:
        return "models.json defines no model (Pi's model registry was not read)"
    if not any(m.priced for m in r.known):
        return "no model in models.json states a price to rank by"
    return "no priced model in models.json has a context window large enough to rank"


def _overridden(
    binding: TierBinding, override: Override | None, known: tuple[KnownModel, ...]
) -> TierBinding:
    if override is None or (override.model is None and binding.refused):
        return binding  # a level alone names no model: it cannot clear a refusal
    model = override.model if override.model != "default" else None
    if override.model is None:  # only a thinking level: the derived model stays
        model = binding.model
    thinking = override.thinking if override.thinking is not None else binding.thinking
    pinned = find_model(known, model)
    if thinking is not None and pinned is not None:
        thinking = pinned.clamp(thinking)
    reason = f"set in {override.origin}"
    if override.model == "default":
        reason += " (no --model: children load Pi's default)"
    return TierBinding(binding.tier, model, thinking, True, reason)


# -- small helpers ----------------------------------------------------------------------------


def _in_scope(model: KnownModel, scope: tuple[str, ...]) -> bool:
    return any(matches_scope(pattern, model) for pattern in scope)


def _adjusted(asked: str, level: str) -> str:
    return "" if asked == level else f"; it does not support thinking {asked}, so {level}"


def _session_ref(model: str | None, provider: str | None) -> str | None:
    if model is None:
        return None
    return model if "/" in model or provider is None else f"{provider}/{model}"
