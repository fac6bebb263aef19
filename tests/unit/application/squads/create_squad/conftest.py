"""``create_squad`` over fakes (contract §5 destination rules, issue 3 publication).

Everything runs against the in-memory file system, so each test can look at every call the
use case made, in order, and at the whole tree it left behind.
"""

from __future__ import annotations

import pytest

from tests.fakes.clock import FakeClock
from tests.fakes.publication import MemoryPublication
from tests.unit.application.squads.create_squad.staging_calls import CLOCK_START


@pytest.fixture
def world() -> MemoryPublication:
    return MemoryPublication(clock=FakeClock(current=CLOCK_START))
