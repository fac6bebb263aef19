"""The size and artifact-reference policy of contract §4, measured in UTF-8 bytes.

Limits are checked on the decoded values and reported with the measured and the allowed
number. Nothing is ever sliced: over-limit text must move into an artifact.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

MAX_SPEC_BYTES = 1_048_576
MAX_GOAL_BYTES = 65_536
MAX_TITLE_BYTES = 1_024
MAX_DESCRIPTION_BYTES = 131_072
MAX_CUMULATIVE_TEXT_BYTES = 524_288
MAX_ARTIFACT_PATH_BYTES = 32_768
MAX_TASKS = 128
MAX_AGENTS = 64
MAX_ARTIFACTS = 1_024
MAX_ENCODED_RUN_CHARS = 4_096

# A line of a wrapped Base64 body (MIME wraps at 76, PEM at 64) is at least this long; shorter
# alphabet-only lines (word lists, identifiers) never join a run across a line break.
_WRAPPED_LINE_MIN_CHARS = 40
_ENCODED_RUN = re.compile(r"[A-Za-z0-9+/=_-]+")
_LONG_ENCODED_RUN = re.compile(rf"[A-Za-z0-9+/=_-]{{{_WRAPPED_LINE_MIN_CHARS},}}")
_LINE_BREAK = re.compile(r"\r?\n")
_DATA_URI = re.compile(r"data:[A-Za-z0-9!#$&^_.+-]*/?[A-Za-z0-9!#$&^_.+-]*(?:;[^,\s]{0,256})?,")
_NON_SPACE_RUN = re.compile(r"\S+")

_MOVE_TO_ARTIFACT = "move the text into an artifact (absolute path, bytes, sha256) and reference it"


@attrs.frozen
class LimitViolation:
    path: str
    message: str


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def longest_encoded_run(text: str) -> int:
    """Length in characters of the longest Base64/data-URI-like run in ``text``.

    A run is a stretch of the Base64 alphabet (standard or URL-safe, with padding). Wrapped
    bodies count as one run: a line break joins two stretches when the line before it is at
    least 40 alphabet characters long and holds nothing else. A data URI's payload counts as
    one run up to the next white space, whatever its encoding.
    """
    best = 0
    for uri in _DATA_URI.finditer(text):
        payload = _NON_SPACE_RUN.match(text, uri.end())
        if payload is not None:
            best = max(best, payload.end() - payload.start())
    if not _LONG_ENCODED_RUN.search(text):
        # Without any 40-character stretch no wrapped run exists; the plain maximum suffices.
        runs = (m.end() - m.start() for m in _ENCODED_RUN.finditer(text))
        return max(best, max(runs, default=0))
    current = 0
    previous_end = -1
    previous_line_is_pure = False
    for match in _ENCODED_RUN.finditer(text):
        start, end = match.start(), match.end()
        length = end - start
        joined = (
            current > 0
            and previous_line_is_pure
            and _LINE_BREAK.fullmatch(text, previous_end, start) is not None
        )
        current = current + length if joined else length
        best = max(best, current)
        previous_line_is_pure = length >= _WRAPPED_LINE_MIN_CHARS
        previous_end = end
    return best


def _text_fields(spec: dict[str, Any]) -> Iterator[tuple[str, str, str, int]]:
    """(json path, field label, text, byte cap or 0) of every limited text field."""
    yield "$.goal", "goal", spec["goal"], MAX_GOAL_BYTES
    for i, task in enumerate(spec["tasks"]):
        yield f"$.tasks[{i}].title", "title", task["title"], MAX_TITLE_BYTES
        yield f"$.tasks[{i}].description", "description", task["description"], MAX_DESCRIPTION_BYTES
    for i, artifact in enumerate(spec["artifacts"]):
        yield f"$.artifacts[{i}].purpose", "purpose", artifact["purpose"], 0


def check_limits(spec: dict[str, Any]) -> list[LimitViolation]:
    """Every §4 violation of a schema-valid spec (counts are reported by the schema phase)."""
    found: list[LimitViolation] = []
    cumulative = 0
    for path, _label, text, cap in _text_fields(spec):
        size = utf8_len(text)
        cumulative += size
        if cap and size > cap:
            found.append(
                LimitViolation(
                    path, f"{path} is {size} bytes; allowed {cap} bytes: {_MOVE_TO_ARTIFACT}"
                )
            )
        # Ordinary prose has neither a data URI nor a 40-character alphabet stretch; skipping
        # the full scan for it keeps a 1 MiB spec's check in milliseconds.
        may_hold_run = _DATA_URI.search(text) or _LONG_ENCODED_RUN.search(text)
        run = longest_encoded_run(text) if may_hold_run else 0
        if run > MAX_ENCODED_RUN_CHARS:
            found.append(
                LimitViolation(
                    path,
                    f"{path} holds a Base64/data-URI-like run of {run} characters; allowed "
                    f"{MAX_ENCODED_RUN_CHARS}: {_MOVE_TO_ARTIFACT}",
                )
            )
    if cumulative > MAX_CUMULATIVE_TEXT_BYTES:
        found.append(
            LimitViolation(
                "$",
                f"goal + titles + descriptions + artifact purposes are {cumulative} bytes; allowed "
                f"{MAX_CUMULATIVE_TEXT_BYTES} bytes: an embedded contract does not belong in text "
                f"fields; {_MOVE_TO_ARTIFACT}",
            )
        )
    for i, artifact in enumerate(spec["artifacts"]):
        size = utf8_len(artifact["path"])
        if size > MAX_ARTIFACT_PATH_BYTES:
            found.append(
                LimitViolation(
                    f"$.artifacts[{i}].path",
                    f"$.artifacts[{i}].path is {size} bytes; "
                    f"allowed {MAX_ARTIFACT_PATH_BYTES} bytes",
                )
            )
    return found


COUNT_LIMITS: dict[tuple[str, str], tuple[str, int]] = {
    ("tasks", "maxItems"): ("tasks", MAX_TASKS),
    ("agents", "maxProperties"): ("agents", MAX_AGENTS),
    ("artifacts", "maxItems"): ("artifacts", MAX_ARTIFACTS),
}


def count_violation(
    path: Sequence[str | int], keyword: str, instance: object
) -> LimitViolation | None:
    """A count limit from the schema (``maxItems``/``maxProperties``) reported as a size limit."""
    if len(path) != 1 or not isinstance(path[0], str):
        return None
    entry = COUNT_LIMITS.get((path[0], keyword))
    if entry is None or not isinstance(instance, list | dict):
        return None
    label, allowed = entry
    return LimitViolation(
        f"$.{label}", f"$.{label} has {len(instance)} entries; allowed at most {allowed}"
    )
