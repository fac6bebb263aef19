"""One machine's fakes: the in-memory file system, the lock factory, the clock and the ids that
a test world's use cases share (and that outlive a restart of the objects built over them)."""

from __future__ import annotations

import attrs

from tests.fakes.clock import FakeClock, SequentialIds
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.locks import FakeLockFactory


@attrs.define
class FakeMachine:
    fs: InMemoryFileSystem = attrs.field(factory=InMemoryFileSystem, kw_only=True)
    locks: FakeLockFactory = attrs.field(factory=FakeLockFactory, kw_only=True)
    clock: FakeClock = attrs.field(factory=FakeClock, kw_only=True)
    ids: SequentialIds = attrs.field(factory=SequentialIds, kw_only=True)
