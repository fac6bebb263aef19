"""A fake clock and id source: time moves only when a test says so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs

from application.ports import Clock, Ids


@attrs.define
class FakeClock:
    current: datetime = attrs.field(factory=lambda: datetime(2026, 12, 2, 12, 0, tzinfo=UTC))
    step: timedelta = timedelta(milliseconds=1)
    monotonic_now: float = 1000.0
    reads: int = 0

    def now(self) -> datetime:
        """Each read advances by ``step`` so that successive events have distinct times."""
        self.reads += 1
        value = self.current
        self.current = value + self.step
        return value

    def monotonic(self) -> float:
        return self.monotonic_now

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)
        self.monotonic_now += seconds


@attrs.define
class SequentialIds:
    issued: int = 0

    def uuid4_hex(self) -> str:
        self.issued += 1
        return f"{self.issued:032x}"


_clock_conforms: type[Clock] = FakeClock
_ids_conforms: type[Ids] = SequentialIds
