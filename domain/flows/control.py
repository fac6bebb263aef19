"""Control tokens: how a judging child's answer steers a flow (flows-brief §1).

A judge, a loop's checker, a router and a scorer answer in prose; only one exact line of it is
authoritative, so a child cannot steer the flow by a phrase buried in its reasoning or by a
quoted instruction it read. The rules:

- the **first non-empty line** decides, and only if it is exactly ``MARKER: value`` (marker and
  value case-insensitive, white space around the line and around the colon ignored, nothing
  else on the line: no Markdown emphasis, no trailing words);
- failing that, a JSON fallback: the first non-empty line, or else the whole answer, is one
  JSON object whose field (``verdict``, ``loop``, ``route``, ``score``) has the exact type (a
  string; for ``score`` a whole number, never a boolean);
- a contracted role's prose is never read: only its schema-validated ``data.<field>``, spelled
  as the schema has it (lowercase);
- anything else is unparseable and means the cautious reading: ``REVISE``, ``CONTINUE``, an
  unresolved route, a score of 0.

Each reading says where it came from (``line``, ``json``, ``contract`` or ``default``) so a
trace can show why a flow went the way it did.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping, Sequence
from typing import TypeVar

import attrs

SCORE_MIN = 0
SCORE_MAX = 100


class Marker(enum.StrEnum):
    """A control token's marker; the value is its JSON and contract field too."""

    VERDICT = "verdict"
    LOOP = "loop"
    ROUTE = "route"
    SCORE = "score"


class Verdict(enum.StrEnum):
    PASS = "pass"
    REVISE = "revise"


class LoopState(enum.StrEnum):
    DONE = "done"
    CONTINUE = "continue"


class Source(enum.StrEnum):
    """Where a reading came from."""

    LINE = "line"
    JSON = "json"
    CONTRACT = "contract"
    # Nothing parseable: the cautious reading.
    DEFAULT = "default"


# ``MARKER: value`` and nothing else; the value is one run without white space.
_TOKEN = re.compile(r"(?P<marker>[A-Za-z]+)[ \t]*:[ \t]*(?P<value>\S+)")
# Route candidates are agent names; anything else on the line is not a route.
NO_ROUTE = "none"


@attrs.frozen
class Reading:
    """The raw value a token carried (lower-cased string or whole number) and its source;
    ``value`` is ``None`` when nothing parseable was found."""

    value: str | int | None
    source: Source


def first_line(text: str) -> str | None:
    """The first line with anything but white space on it, stripped; ``None`` if none."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None


def read_token(text: str, marker: Marker) -> Reading:
    """The value ``marker`` carries in a child's answer ``text``, by the line rule, then the
    JSON fallback; ``Reading(None, DEFAULT)`` when neither holds."""
    line = first_line(text)
    if line is None:
        return Reading(None, Source.DEFAULT)
    match = _TOKEN.fullmatch(line)
    if match is not None:
        if match["marker"].lower() != marker.value:
            return Reading(None, Source.DEFAULT)
        return _typed(match["value"], marker, Source.LINE)
    for candidate in (line, text.strip()):
        found = _json_field(candidate, marker)
        if found is not None:
            return found
    return Reading(None, Source.DEFAULT)


def read_contract(data: Mapping[str, object], marker: Marker) -> Reading:
    """A contracted role's token: only ``data[marker]`` of its schema-validated envelope."""
    return _field(data, marker, Source.CONTRACT) or Reading(None, Source.DEFAULT)


def _json_field(candidate: str, marker: Marker) -> Reading | None:
    if not candidate.startswith("{"):
        return None
    try:
        document = json.loads(candidate)
    except ValueError:
        return None
    return _field(document, marker, Source.JSON) if isinstance(document, dict) else None


def _field(document: Mapping[str, object], marker: Marker, source: Source) -> Reading | None:
    value = document.get(marker.value)
    if marker is Marker.SCORE:
        if isinstance(value, int) and not isinstance(value, bool):
            return Reading(value, source)
        return None
    if not isinstance(value, str):
        return None
    # A contract's schema fixes the spelling (lowercase); a bare JSON answer is read as a line.
    return Reading(value if source is Source.CONTRACT else value.lower(), source)


def _typed(raw: str, marker: Marker, source: Source) -> Reading:
    if marker is not Marker.SCORE:
        return Reading(raw.lower(), source)
    if re.fullmatch(r"[0-9]{1,3}", raw) is None:
        return Reading(None, Source.DEFAULT)
    return Reading(int(raw), source)


# -- what each reading means ------------------------------------------------------------------


@attrs.frozen
class VerdictReading:
    verdict: Verdict
    source: Source


@attrs.frozen
class LoopReading:
    state: LoopState
    source: Source


@attrs.frozen
class RouteReading:
    """``route`` is the chosen candidate as the call spelled it; ``None`` with ``declined``
    when the router said ``none``, ``None`` without it when the answer named no candidate."""

    route: str | None
    declined: bool
    source: Source

    @property
    def resolved(self) -> bool:
        return self.route is not None


@attrs.frozen
class ScoreReading:
    score: int
    source: Source


Word = TypeVar("Word", bound=enum.StrEnum)


def _member(reading: Reading, words: type[Word], cautious: Word) -> tuple[Word, Source]:
    """The word of ``words`` the reading carried and its source; else ``cautious``, read by
    default."""
    for word in words:
        if reading.value == word.value:
            return word, reading.source
    return cautious, Source.DEFAULT


def verdict_of(reading: Reading) -> VerdictReading:
    return VerdictReading(*_member(reading, Verdict, Verdict.REVISE))


def loop_of(reading: Reading) -> LoopReading:
    return LoopReading(*_member(reading, LoopState, LoopState.CONTINUE))


def route_of(reading: Reading, candidates: Sequence[str]) -> RouteReading:
    """A candidate matched without regard to case, returned as the call spelled it."""
    if reading.value == NO_ROUTE:
        return RouteReading(None, True, reading.source)
    if isinstance(reading.value, str):
        for candidate in candidates:
            if candidate.lower() == reading.value:
                return RouteReading(candidate, False, reading.source)
    return RouteReading(None, False, Source.DEFAULT)


def score_of(reading: Reading) -> ScoreReading:
    value = reading.value
    if isinstance(value, int) and SCORE_MIN <= value <= SCORE_MAX:
        return ScoreReading(value, reading.source)
    return ScoreReading(SCORE_MIN, Source.DEFAULT)
