"""The models a Pi install can run, as values the model roster (``domain.flows.roster``) ranks:
each model's price, reasoning support and thinking levels, and which thinking level it really
runs at when asked for one.

Thinking levels follow pi-ai 0.80.10 exactly (``getSupportedThinkingLevels`` and
``clampThinkingLevel``), so the level a roster line states is the level the child's Pi applies:
a model that does not reason supports only ``off``; a level its ``thinkingLevelMap`` maps to
``null`` is unsupported; ``xhigh`` and ``max`` exist only where the map names them. A level the
model lacks becomes the nearest supported one above it, else the nearest below.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping

import attrs

from domain.names import THINKING_LEVELS

__all__ = [
    "MIN_CONTEXT_WINDOW",
    "AvailableModels",
    "KnownModel",
    "SessionModels",
    "find_model",
    "known_model",
    "matches_scope",
    "parse_available",
    "scope_reference",
]

# A model that cannot hold a delegated task and its system prompt is no cheap expert, it is a
# failed run: below this many tokens of context a model is never ranked for a tier.
MIN_CONTEXT_WINDOW = 32_000
_EXTENDED_LEVELS = ("xhigh", "max")
_GLOB_CHARACTERS = frozenset("*?[")


@attrs.frozen
class KnownModel:
    provider: str
    id: str
    reasoning: bool
    # Price per million tokens; ``None`` where the source states none.
    input_price: float | None
    output_price: float | None
    # Pi's ``thinkingLevelMap`` as ``(level, provider value)`` pairs; ``None`` value: unsupported.
    thinking_map: tuple[tuple[str, str | None], ...] = ()
    context_window: int | None = None

    @property
    def ref(self) -> str:
        return f"{self.provider}/{self.id}"

    @property
    def priced(self) -> bool:
        return self.input_price is not None and self.output_price is not None

    @property
    def price(self) -> float:
        return (self.input_price or 0.0) + (self.output_price or 0.0)

    @property
    def usable(self) -> bool:
        """Worth a tier: not an embedding model, and a context window a task fits in (an
        unstated one is taken as large enough)."""
        small = self.context_window is not None and self.context_window < MIN_CONTEXT_WINDOW
        return not small and "embedding" not in self.id.lower()

    @property
    def extended_thinking(self) -> bool:
        """Whether it thinks past ``high`` (``xhigh`` or ``max``): every reasoning model
        reaches ``high``, so only these tell extended thinking apart."""
        return any(level in _EXTENDED_LEVELS for level in self.thinking_levels())

    def thinking_levels(self) -> tuple[str, ...]:
        """pi-ai's ``getSupportedThinkingLevels``."""
        if not self.reasoning:
            return ("off",)
        mapped = dict(self.thinking_map)
        return tuple(
            level
            for level in THINKING_LEVELS
            if not (level in mapped and mapped[level] is None)
            and (level not in _EXTENDED_LEVELS or level in mapped)
        )

    def clamp(self, level: str) -> str:
        """pi-ai's ``clampThinkingLevel``: ``level`` if supported, else the nearest supported
        level above it, else the nearest below."""
        supported = self.thinking_levels()
        if level in supported:
            return level
        if level not in THINKING_LEVELS:
            return supported[0] if supported else "off"
        index = THINKING_LEVELS.index(level)
        above = [c for c in THINKING_LEVELS[index:] if c in supported]
        below = [c for c in reversed(THINKING_LEVELS[:index]) if c in supported]
        return next(iter(above + below), supported[0] if supported else "off")


@attrs.frozen
class AvailableModels:
    """What a Pi model registry says this install can run (the models with configured auth).

    ``source`` names the registry (``this session's model registry``, ``Pi's model
    registry``); ``problem``: it could not be read (``models`` is then empty and the roster
    ranks ``models.json`` alone); ``warning``: it was read, and Pi itself complained (a
    ``models.json`` it could not load)."""

    models: tuple[KnownModel, ...]
    source: str
    problem: str | None = None
    warning: str | None = None


@attrs.frozen
class SessionModels:
    """What a running Pi session says about models (the main session's shim sends it with
    each flow call): its model (``provider``, ``model`` as ``provider/id``; ``None``: none
    selected), its thinking level, and what its own model registry says it can run."""

    model: str | None
    provider: str | None
    thinking: str | None
    available: AvailableModels


def parse_available(entries: object) -> tuple[tuple[KnownModel, ...], int]:
    """The models of a registry listing (``[{provider, id, reasoning, cost: {input, output},
    thinkingLevelMap, contextWindow}]``, as the shim and ``model-registry.mjs`` write it) and
    how many entries were skipped as malformed."""
    found: list[KnownModel] = []
    skipped = 0
    for entry in entries if isinstance(entries, list) else []:
        model = known_model(entry, provider=None)
        if model is None:
            skipped += 1
        else:
            found.append(model)
    return tuple(found), skipped


def known_model(entry: object, *, provider: str | None) -> KnownModel | None:
    """One model entry (a registry's, or ``models.json``'s under ``provider``); ``None`` when
    it names no provider and id."""
    if not isinstance(entry, Mapping):
        return None
    name = provider if provider is not None else entry.get("provider")
    model_id = entry.get("id")
    if not isinstance(name, str) or not name or not isinstance(model_id, str) or not model_id:
        return None
    raw_cost = entry.get("cost")
    cost: Mapping[str, object] = raw_cost if isinstance(raw_cost, Mapping) else {}
    raw_map = entry.get("thinkingLevelMap")
    # Only ``null`` unsupports a level: any other value maps it, as pi-ai reads the map.
    thinking_map = tuple(
        (level, None if value is None else str(value))
        for level, value in (raw_map.items() if isinstance(raw_map, Mapping) else ())
        if level in THINKING_LEVELS
    )
    window = entry.get("contextWindow")
    return KnownModel(
        provider=name,
        id=model_id,
        reasoning=entry.get("reasoning") is True,
        input_price=_number(cost.get("input")),
        output_price=_number(cost.get("output")),
        thinking_map=thinking_map,
        context_window=window if isinstance(window, int) and not isinstance(window, bool) else None,
    )


def find_model(
    models: tuple[KnownModel, ...], ref: str | None, *, provider: str | None = None
) -> KnownModel | None:
    """The model ``ref`` names: ``provider/id``, or a bare ``id`` as ``--model`` takes it, on
    ``provider`` (the child's ``--provider``) when one is given. A bare id that several
    providers define, with no provider to tell them apart, names none: which one Pi picks is
    not known here, and a level clamped to the wrong model would be wrong."""
    if ref is None:
        return None
    exact = next((m for m in models if m.ref == ref), None)
    if exact is not None or "/" in ref:
        return exact
    if provider is not None:
        return next((m for m in models if m.provider == provider and m.id == ref), None)
    named = [m for m in models if m.id == ref]
    return named[0] if len(named) == 1 else None


def matches_scope(pattern: str, model: KnownModel) -> bool:
    """Pi's scope patterns (``enabledModels``): ``provider/id`` or ``id``, globs allowed, an
    optional ``:level``."""
    pattern = _without_level(pattern)
    target = model.ref if "/" in pattern else model.id
    return fnmatch.fnmatchcase(target, pattern)


def scope_reference(pattern: str) -> str | None:
    """The model a scope pattern names outright (no glob, the ``:level`` dropped), or
    ``None`` for a pattern that only describes models."""
    reference = _without_level(pattern.strip())
    if not reference or any(char in _GLOB_CHARACTERS or char.isspace() for char in reference):
        return None
    return reference


def _without_level(pattern: str) -> str:
    bare, _, level = pattern.rpartition(":")
    return bare if level in THINKING_LEVELS and bare else pattern


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        return number if math.isfinite(number) and number >= 0 else None
    return None
