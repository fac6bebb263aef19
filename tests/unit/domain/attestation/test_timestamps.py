"""RFC 3339 rendering (UTC, milliseconds, ``Z``) and general RFC 3339 parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.attestation import TimestampInvalid, format_rfc3339_millis, parse_rfc3339
from domain.attestation.timestamps import parse_rfc3339_instant, utc_millis


def test_format_is_utc_milliseconds_with_z() -> None:
    at = datetime(2026, 12, 2, 11, 22, 33, 456000, tzinfo=UTC)
    assert format_rfc3339_millis(at) == "2026-12-02T11:22:33.456Z"


def test_format_floors_to_the_millisecond() -> None:
    at = datetime(2026, 12, 2, 11, 22, 33, 456999, tzinfo=UTC)
    assert format_rfc3339_millis(at) == "2026-12-02T11:22:33.456Z"


def test_format_always_writes_three_fraction_digits() -> None:
    assert format_rfc3339_millis(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == (
        "2026-01-02T03:04:05.000Z"
    )


def test_format_converts_offsets_to_utc() -> None:
    at = datetime(2026, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1)))
    assert format_rfc3339_millis(at) == "2025-12-31T23:30:00.000Z"


def test_format_pads_small_years() -> None:
    assert format_rfc3339_millis(datetime(999, 1, 1, tzinfo=UTC)) == "0999-01-01T00:00:00.000Z"


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        format_rfc3339_millis(datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        utc_millis(datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-02T11:22:33.456Z", datetime(2026, 12, 2, 11, 22, 33, 456000, tzinfo=UTC)),
        ("2026-12-02t11:22:33.456z", datetime(2026, 12, 2, 11, 22, 33, 456000, tzinfo=UTC)),
        ("2026-12-02T11:22:33Z", datetime(2026, 12, 2, 11, 22, 33, tzinfo=UTC)),
        ("2026-12-02T11:22:33.4Z", datetime(2026, 12, 2, 11, 22, 33, 400000, tzinfo=UTC)),
        (
            "2026-12-02T11:22:33.456789123456Z",
            datetime(2026, 12, 2, 11, 22, 33, 456000, tzinfo=UTC),
        ),
        ("2026-12-02T17:00:00+05:30", datetime(2026, 12, 2, 11, 30, tzinfo=UTC)),
        ("2026-12-01T23:00:00-12:00", datetime(2026, 12, 2, 11, 0, tzinfo=UTC)),
        ("2026-12-02T11:00:00-00:00", datetime(2026, 12, 2, 11, 0, tzinfo=UTC)),
        ("2024-02-29T00:00:00Z", datetime(2024, 2, 29, tzinfo=UTC)),
    ],
)
def test_parse_accepts_rfc3339(text: str, expected: datetime) -> None:
    parsed = parse_rfc3339(text)
    assert parsed == expected
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("2026-12-02T11:22:33.456", "is not an RFC 3339 date-time with a time-zone offset"),
        ("2026-12-02T11:22:33+0530", "is not an RFC 3339 date-time"),
        ("2026-12-02T11:22:33+05", "is not an RFC 3339 date-time"),
        ("2026-12-02 11:22:33Z", "is not an RFC 3339 date-time"),
        ("2026-12-02T11:22:33.Z", "is not an RFC 3339 date-time"),
        ("2026-12-02T11:22Z", "is not an RFC 3339 date-time"),
        ("26-12-02T11:22:33Z", "is not an RFC 3339 date-time"),
        ("2026-12-02T11:22:33Z\n", "is not an RFC 3339 date-time"),
        (" 2026-12-02T11:22:33Z", "is not an RFC 3339 date-time"),
        ("２０２６-12-02T11:22:33Z", "is not an RFC 3339 date-time"),
        ("2026-12-02", "is not an RFC 3339 date-time"),
        ("", "is not an RFC 3339 date-time"),
        ("2026-02-30T00:00:00Z", "is not a valid calendar date-time"),
        ("2025-02-29T00:00:00Z", "is not a valid calendar date-time"),
        ("2026-13-01T00:00:00Z", "is not a valid calendar date-time"),
        ("2026-00-10T00:00:00Z", "is not a valid calendar date-time"),
        ("2026-12-00T00:00:00Z", "is not a valid calendar date-time"),
        ("2026-12-02T24:00:00Z", "is not a valid calendar date-time"),
        ("2026-12-02T11:60:00Z", "is not a valid calendar date-time"),
        ("2026-12-31T23:59:60Z", "is a leap second"),
        ("0000-01-01T00:00:00Z", "is not a valid calendar date-time"),
        ("0001-01-01T00:00:00+01:00", "is not a valid calendar date-time"),
        ("9999-12-31T23:00:00-01:00", "is not a valid calendar date-time"),
        ("2026-12-02T11:22:33+24:00", "has an offset outside -23:59..+23:59"),
        ("2026-12-02T11:22:33+05:60", "has an offset outside -23:59..+23:59"),
    ],
)
def test_parse_refuses(text: str, reason: str) -> None:
    with pytest.raises(TimestampInvalid) as caught:
        parse_rfc3339(text)
    assert caught.value.reason.startswith(reason)


@pytest.mark.parametrize("value", [None, 1700000000, 1.5, True, [], {}])
def test_parse_refuses_non_strings(value: object) -> None:
    with pytest.raises(TimestampInvalid, match="is not a string"):
        parse_rfc3339(value)


def test_exact_key_orders_beyond_the_held_precision() -> None:
    earlier = parse_rfc3339_instant("2026-12-02T11:22:33.4561Z")
    later = parse_rfc3339_instant("2026-12-02T11:22:33.4569Z")
    assert earlier.at == later.at
    assert earlier.exact_key < later.exact_key


def test_exact_key_ignores_trailing_zeros_and_offsets() -> None:
    plain = parse_rfc3339_instant("2026-12-02T11:22:33.5Z")
    padded = parse_rfc3339_instant("2026-12-02T13:22:33.500000000+02:00")
    assert plain.exact_key == padded.exact_key


@given(
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.sampled_from([UTC, timezone(timedelta(hours=-9, minutes=-30))]),
    )
)
def test_format_then_parse_round_trips_the_held_value(at: datetime) -> None:
    text = format_rfc3339_millis(at)
    assert parse_rfc3339(text) == utc_millis(at)
    assert format_rfc3339_millis(parse_rfc3339(text)) == text


@given(
    st.lists(
        st.datetimes(
            min_value=datetime(2000, 1, 1),
            max_value=datetime(2100, 1, 1),
            timezones=st.just(UTC),
        ),
        min_size=2,
        max_size=2,
    )
)
def test_floored_order_never_contradicts_the_original_order(pair: list[datetime]) -> None:
    first, second = pair
    if first <= second:
        assert utc_millis(first) <= utc_millis(second)
