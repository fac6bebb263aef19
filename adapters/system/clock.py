"""The real clock and UUID source behind the ``Clock`` and ``Ids`` ports."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

from application.ports import Clock, Ids


class SystemClock:
    def now(self) -> datetime:
        # Millisecond precision: what the JSON records hold, so values round-trip exactly.
        moment = datetime.now(UTC)
        return moment.replace(microsecond=moment.microsecond - moment.microsecond % 1000)

    def monotonic(self) -> float:
        return time.monotonic()


class RandomIds:
    def uuid4_hex(self) -> str:
        return uuid.uuid4().hex


_clock_conforms: type[Clock] = SystemClock
_ids_conforms: type[Ids] = RandomIds
