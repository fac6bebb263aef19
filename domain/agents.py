"""Agent definitions and the catalog that merges them: bundled, then user, then project.

Pure values, no I/O. Files are read by ``adapters/catalogue/agent_files``; this module decides what
a valid
definition is and which definition wins. Precedence is by the ``name`` field, never by file name:
a project definition named ``qa`` replaces the user's and the bundled ``qa`` whatever its file is
called. A winning definition with ``disabled: true`` hides the agent: it is not listed and
resolving it fails with reason ``disabled``, it does not fall back to a lower-precedence one.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from domain.input_errors import InvalidField
from domain.names import AGENT_NAME, THINKING_LEVELS, TIERS

# ``fullmatch`` rather than ``^...$``: ``$`` also matches before a trailing newline.
AGENT_NAME_PATTERN = re.compile(AGENT_NAME)


class InvalidAgentField(InvalidField):
    """One field of an agent definition breaks a rule. ``field`` is the JSON key."""


def is_agent_name(value: str) -> bool:
    return AGENT_NAME_PATTERN.fullmatch(value) is not None


def show_agent_name(value: str) -> str:
    """A name as a message may show it: quoted once it passed the pattern, withheld otherwise.

    Names come from task lists and files; one that failed the pattern is content, not an ID.
    """
    return f"'{value}'" if is_agent_name(value) else "(a name not shown)"


def agent_name_rule(value: str) -> str:
    """Why ``value`` is not an agent name. The value failed the pattern, so it is not shown:
    only its length is."""
    return (
        "must be 1 to 64 characters from A-Z a-z 0-9 . _ - starting with a letter or digit "
        f"(found a string of {len(value)} characters)"
    )


def _check_name(_instance: Any, _attribute: attrs.Attribute[str], value: str) -> None:
    if not is_agent_name(value):
        raise InvalidAgentField("name", agent_name_rule(value))


def _check_model(
    _instance: Any, _attribute: attrs.Attribute[str | None], value: str | None
) -> None:
    # An empty model would be passed on as ``--model ""``; null is how "no preference" is said.
    if value is not None and not value.strip():
        raise InvalidAgentField("model", "must be null or a non-blank string")


def _check_thinking(
    _instance: Any, _attribute: attrs.Attribute[str | None], value: str | None
) -> None:
    if value is not None and value not in THINKING_LEVELS:
        raise InvalidAgentField(
            "thinking",
            f"must be null or one of {', '.join(THINKING_LEVELS)}",
        )


def _check_tier(_instance: Any, _attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and value not in TIERS:
        raise InvalidAgentField("tier", f"must be null or one of {', '.join(TIERS)}")


def _check_items(field: str, values: Iterable[str]) -> None:
    for index, item in enumerate(values):
        if not item.strip():
            raise InvalidAgentField(f"{field}[{index}]", "must be a non-blank string")


def _check_tools(
    _instance: Any,
    _attribute: attrs.Attribute[tuple[str, ...] | None],
    value: tuple[str, ...] | None,
) -> None:
    if value is not None:
        _check_items("tools", value)


def _check_tags(
    _instance: Any, _attribute: attrs.Attribute[tuple[str, ...]], value: tuple[str, ...]
) -> None:
    _check_items("tags", value)


_string = attrs.validators.instance_of(str)
_strings = attrs.validators.deep_iterable(
    member_validator=_string, iterable_validator=attrs.validators.instance_of(tuple)
)


@attrs.frozen
class AgentDefinition:
    """One agent as its JSON file states it (upstream fields, same names).

    ``tools`` is ``None`` for "all tools"; an empty tuple means "no tools". ``model`` and
    ``thinking`` are ``None`` when the agent leaves the choice to the squad or the settings.
    ``tier`` is the model roster's tier a flow runs the agent on when nothing narrower names a
    model (docs/flows.md, "Model and thinking precedence"); squads do not read it.
    """

    name: str = attrs.field(validator=[_string, _check_name])
    role: str = attrs.field(validator=_string)
    description: str = attrs.field(validator=_string)
    prompt: str = attrs.field(validator=_string)
    model: str | None = attrs.field(
        default=None, validator=[attrs.validators.optional(_string), _check_model]
    )
    thinking: str | None = attrs.field(
        default=None, validator=[attrs.validators.optional(_string), _check_thinking]
    )
    tools: tuple[str, ...] | None = attrs.field(
        default=None, validator=[attrs.validators.optional(_strings), _check_tools]
    )
    tier: str | None = attrs.field(
        default=None, validator=[attrs.validators.optional(_string), _check_tier]
    )
    tags: tuple[str, ...] = attrs.field(default=(), validator=[_strings, _check_tags])
    disabled: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


class AgentSource(enum.Enum):
    """Where a definition came from, lowest precedence first."""

    BUNDLED = "bundled"
    USER = "user"
    PROJECT = "project"


@attrs.frozen
class LoadedAgent:
    """A definition together with where it was read from (``origin`` is a file path)."""

    definition: AgentDefinition
    source: AgentSource
    origin: str

    @property
    def name(self) -> str:
        return self.definition.name


@attrs.frozen
class AgentFileProblem:
    """A file that was not loaded, and why. The catalog keeps these so the CLI can warn."""

    origin: str
    reason: str
    source: AgentSource | None = None


class UnavailableReason(enum.Enum):
    MISSING = "missing"
    DISABLED = "disabled"


@attrs.frozen
class UnavailableAgent:
    """The answer to a lookup that found no usable definition.

    For ``DISABLED``, ``source`` and ``origin`` name the definition that disabled the agent.
    """

    name: str
    reason: UnavailableReason
    source: AgentSource | None = None
    origin: str | None = None

    def describe(self) -> str:
        if self.reason is UnavailableReason.DISABLED:
            source = f"{self.source.value} " if self.source is not None else ""
            where = f" by the {source}definition in {self.origin}" if self.origin else ""
            return f"agent {show_agent_name(self.name)} is disabled{where}"
        return f"agent {show_agent_name(self.name)} is missing: no definition has that name"


class AgentUnavailable(LookupError):
    """Raised by :meth:`AgentCatalog.resolve`. Callers translate it into their own code.

    (File-mode squads report it as ``SPEC_MALFORMED``; inline squads remap to ``fullstack``.)
    """

    def __init__(self, unavailable: UnavailableAgent) -> None:
        super().__init__(unavailable.describe())
        self.unavailable = unavailable

    @property
    def name(self) -> str:
        return self.unavailable.name

    @property
    def reason(self) -> UnavailableReason:
        return self.unavailable.reason


def _index_by_name(entries: tuple[LoadedAgent, ...]) -> dict[str, LoadedAgent]:
    return {entry.name: entry for entry in entries}


@attrs.frozen
class AgentCatalog:
    """The merged set of definitions: one winner per name, the losers, and the problems.

    ``entries`` holds every winning definition sorted by name, disabled ones included (so a
    lookup can say "disabled" rather than "missing"). ``shadowed`` holds the definitions a
    higher-precedence source replaced, for listings that want to show overrides.
    """

    entries: tuple[LoadedAgent, ...] = attrs.field(default=())
    shadowed: tuple[LoadedAgent, ...] = ()
    problems: tuple[AgentFileProblem, ...] = ()
    _by_name: dict[str, LoadedAgent] = attrs.field(
        init=False,
        repr=False,
        eq=False,
        hash=False,
        default=attrs.Factory(lambda self: _index_by_name(self.entries), takes_self=True),
    )

    @entries.validator
    def _unique_names(
        self, _attribute: attrs.Attribute[tuple[LoadedAgent, ...]], value: tuple[LoadedAgent, ...]
    ) -> None:
        if len({entry.name for entry in value}) != len(value):
            raise ValueError("a catalog holds one definition per agent name")

    @classmethod
    def merge(
        cls,
        bundled: Sequence[LoadedAgent],
        user: Sequence[LoadedAgent],
        project: Sequence[LoadedAgent],
        *,
        problems: Sequence[AgentFileProblem] = (),
    ) -> AgentCatalog:
        """Merge the three layers: project overrides user overrides bundled, by ``name``.

        Within one layer two definitions with the same name are ambiguous: the first in the
        given order (the loader passes sorted file names) is kept and each later one becomes a
        problem, so the outcome never depends on directory listing order.
        """
        collected = list(problems)
        winners: dict[str, LoadedAgent] = {}
        shadowed: list[LoadedAgent] = []
        for source, layer in (
            (AgentSource.BUNDLED, bundled),
            (AgentSource.USER, user),
            (AgentSource.PROJECT, project),
        ):
            seen_in_layer: dict[str, LoadedAgent] = {}
            for entry in layer:
                if entry.source is not source:
                    raise ValueError(
                        f"{entry.origin} is a {entry.source.value} definition "
                        f"passed as a {source.value} one"
                    )
                first = seen_in_layer.get(entry.name)
                if first is not None:
                    collected.append(
                        AgentFileProblem(
                            origin=entry.origin,
                            reason=(
                                f"agent name {show_agent_name(entry.name)} is already defined by "
                                f"{first.origin}; this file is ignored"
                            ),
                            source=source,
                        )
                    )
                    continue
                seen_in_layer[entry.name] = entry
                previous = winners.get(entry.name)
                if previous is not None:
                    shadowed.append(previous)
                winners[entry.name] = entry
        return cls(
            entries=tuple(winners[name] for name in sorted(winners)),
            shadowed=tuple(shadowed),
            problems=tuple(collected),
        )

    def get(self, name: str) -> LoadedAgent | UnavailableAgent:
        """The enabled definition with this name, or why there is none (never a disabled one)."""
        entry = self._by_name.get(name)
        if entry is None:
            return UnavailableAgent(name=name, reason=UnavailableReason.MISSING)
        if entry.definition.disabled:
            return UnavailableAgent(
                name=name,
                reason=UnavailableReason.DISABLED,
                source=entry.source,
                origin=entry.origin,
            )
        return entry

    def resolve(self, name: str) -> AgentDefinition:
        """The enabled definition with this name; :class:`AgentUnavailable` otherwise."""
        found = self.get(name)
        if isinstance(found, UnavailableAgent):
            raise AgentUnavailable(found)
        return found.definition

    def enabled(self) -> list[LoadedAgent]:
        """Enabled agents sorted by name: what the planner and the hints may offer."""
        return [entry for entry in self.entries if not entry.definition.disabled]

    def enabled_names(self) -> list[str]:
        return [entry.name for entry in self.enabled()]
