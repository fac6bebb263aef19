"""RFC 3339 timestamps as the attestation and progress files hold them.

Written: always UTC, always millisecond precision, always ``Z`` (``2026-12-02T11:22:33.456Z``).
Read: RFC 3339 ``date-time`` in general: ``T`` or ``t``, any number of fractional digits, ``Z``,
``z`` or a ``±HH:MM`` offset (``-00:00`` included). A missing offset, a date that does not exist
(February 30), hour 24, minute 60 and anything that is not a string are refused. Leap second
``:60`` is refused too: ``datetime`` cannot represent it and this project never writes one.

Values are held at the millisecond precision the files store, floored. Flooring is monotonic, so
``a >= b`` still holds after both are floored, and a value equals itself after a round trip
through either file.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta, timezone

import attrs

_RFC3339 = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})[Tt]"
    r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]+))?"
    r"(?P<offset>[Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_SECOND = timedelta(seconds=1)
_MAX_OFFSET_HOURS = 23
_MAX_OFFSET_MINUTES = 59
_LEAP_SECOND = 60


@attrs.define
class TimestampInvalid(ValueError):
    """Text that is not an RFC 3339 date-time. ``reason`` never quotes the text."""

    reason: str


def utc_millis(value: datetime) -> datetime:
    """An aware datetime as UTC, floored to whole milliseconds; naive datetimes are refused.

    Used as the attrs converter of every timestamp field, so values are exactly what the files
    can store. A naive datetime is refused rather than assumed local: the domain has no clock or
    time zone of its own.
    """
    if not isinstance(value, datetime):
        raise TypeError(f"expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamps must be timezone-aware")
    as_utc = value.astimezone(UTC)
    return as_utc.replace(microsecond=as_utc.microsecond - as_utc.microsecond % 1000)


# Pure in its argument; the progress file re-formats every recorded delivery on each commit.
# Equal datetimes (whatever their zone) denote one instant, hence one text.
@functools.lru_cache(maxsize=4096)
def format_rfc3339_millis(value: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmmZ`` in UTC (floored to the millisecond)."""
    at = utc_millis(value)
    # Explicit zero padding: strftime's %Y does not pad years below 1000 on every platform.
    return (
        f"{at.year:04d}-{at.month:02d}-{at.day:02d}T"
        f"{at.hour:02d}:{at.minute:02d}:{at.second:02d}.{at.microsecond // 1000:03d}Z"
    )


@attrs.frozen
class Rfc3339Instant:
    """A parsed timestamp: the held value plus an exact ordering key.

    ``at`` is floored to milliseconds like every held timestamp; ``exact_key`` orders instants
    by the full fractional precision of the text, so an ordering rule (``completedAt`` not before
    any ``deliveredAt``) is checked on what was written, not on what survived flooring. Digit
    strings of a fraction, with trailing zeros removed, compare lexicographically exactly as the
    numbers do, so no big-number arithmetic is needed.
    """

    at: datetime
    exact_key: tuple[int, str]


def parse_rfc3339_instant(text: object) -> Rfc3339Instant:
    if not isinstance(text, str):
        raise TimestampInvalid("is not a string")
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise TimestampInvalid("is not an RFC 3339 date-time with a time-zone offset")
    offset_text = match["offset"]
    if offset_text in ("Z", "z"):
        offset = timedelta(0)
    else:
        offset_hours, offset_minutes = int(offset_text[1:3]), int(offset_text[4:6])
        if offset_hours > _MAX_OFFSET_HOURS or offset_minutes > _MAX_OFFSET_MINUTES:
            raise TimestampInvalid("has an offset outside -23:59..+23:59")
        offset = timedelta(hours=offset_hours, minutes=offset_minutes)
        if offset_text[0] == "-":
            offset = -offset
    if int(match["second"]) == _LEAP_SECOND:
        raise TimestampInvalid("is a leap second (:60), which is not accepted")
    fraction = (match["fraction"] or "").rstrip("0")
    try:
        local = datetime(
            int(match["year"]),
            int(match["month"]),
            int(match["day"]),
            int(match["hour"]),
            int(match["minute"]),
            int(match["second"]),
            int(fraction[:6].ljust(6, "0")),
            tzinfo=timezone(offset),
        )
        whole_seconds = local.replace(microsecond=0).astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        # datetime's own messages ("day is out of range for month") name fields, not text.
        raise TimestampInvalid(f"is not a valid calendar date-time ({exc})") from None
    return Rfc3339Instant(
        at=utc_millis(local),
        exact_key=((whole_seconds - _EPOCH) // _ONE_SECOND, fraction),
    )


def parse_rfc3339(text: object) -> datetime:
    """The held (UTC, millisecond) value of an RFC 3339 date-time, or :class:`TimestampInvalid`."""
    return parse_rfc3339_instant(text).at
