"""What a scripted policy returns (``Reply`` of ``PlannedCall``s) and what it may remember
across requests (``PolicyState``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from adapters.scripted_model.conversation import Conversation


@attrs.frozen
class PlannedCall:
    name: str
    arguments: Mapping[str, Any]


@attrs.frozen
class Reply:
    """The next assistant message: optional text, then tool calls in this order. ``thinking``
    is the reasoning streamed before them, set by the server when the request asks for it."""

    text: str = ""
    tool_calls: tuple[PlannedCall, ...] = ()
    thinking: str = ""


class PolicyState:
    """What a server remembers across requests (thread-safe): first failures (``qa-fail``,
    the worker's ``transient-once``) and how often a reply sequence was answered (``reply``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failed: set[str] = set()
        self._counts: dict[str, int] = {}

    def claim_first_failure(self, key: str) -> bool:
        """True exactly once per key."""
        with self._lock:
            if key in self._failed:
                return False
            self._failed.add(key)
            return True

    def next_index(self, key: str) -> int:
        """0 the first time ``key`` is asked, then 1, 2, ..."""
        with self._lock:
            index = self._counts.get(key, 0)
            self._counts[key] = index + 1
            return index


Policy = Callable[[Conversation, PolicyState], Reply]
