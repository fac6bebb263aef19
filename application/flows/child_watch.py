"""One flow child's events as ``ChildDispatcher`` waits on them: what it said, what it used,
whether it settled or exited, and why it must be stopped (its deadline, a provider error's
grace, a budget)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from application.ports import (
    AssistantText,
    ChildEvent,
    Clock,
    Exited,
    ProviderError,
    ProviderRecovery,
    Settled,
    ToolStarted,
)
from domain.flows.child_limits import Stop, next_stop
from domain.flows.runs import Usage

# Told what a running child is doing (its run's key, then "tool <name>" or its latest message).
Activity = Callable[[str, str], None]


class ChildWatch:
    """One child's events until it settles or exits, kept under a condition."""

    def __init__(self, clock: Clock, key: str = "", activity: Activity | None = None) -> None:
        self._clock = clock
        self._key = key
        self._activity = activity
        self._condition = threading.Condition()
        # The pending provider error's message and when it came (cleared when Pi recovers).
        self.provider_error: str | None = None
        self.provider_error_at: float | None = None
        self.texts: list[str] = []
        self.usage = Usage()
        self.settled: Settled | None = None
        self.exited: Exited | None = None
        # A budget stopped the child at a completed response (``FlowBudgets.turn``).
        self.budget_stop = False

    def sink(self, event: ChildEvent) -> None:
        if self._activity is not None:
            if isinstance(event, ToolStarted):
                self._activity(self._key, f"tool {event.tool_name}")
            elif isinstance(event, AssistantText) and event.text.strip():
                self._activity(self._key, event.text.strip().splitlines()[0][:120])
        with self._condition:
            if isinstance(event, ProviderError):
                self.provider_error = event.message
                self.provider_error_at = self._clock.monotonic()
            elif isinstance(event, AssistantText | ToolStarted | ProviderRecovery):
                self.provider_error = self.provider_error_at = None
            if isinstance(event, AssistantText):
                self.texts.append(event.text)
                self.usage = self.usage.plus(
                    Usage(event.input_tokens, event.output_tokens, event.cost, 1)
                )
            elif isinstance(event, Settled) and self.settled is None:
                self.settled = event
            elif isinstance(event, Exited) and self.exited is None:
                self.exited = event
            self._condition.notify_all()

    def stop_for_budget(self) -> None:
        with self._condition:
            self.budget_stop = True
            self._condition.notify_all()

    def wake(self) -> None:
        """Make ``wait`` look at its predicate again (the flow was cancelled)."""
        with self._condition:
            self._condition.notify_all()

    def wait(self, deadline: float, grace: float, cancelled: threading.Event) -> Stop | None:
        """``None`` once the child settled or exited (or the flow was cancelled); else why it
        must be stopped: ``deadline`` (the clock's) passed, or a provider error's ``grace``."""
        with self._condition:
            while not (self.settled is not None or self.exited is not None or cancelled.is_set()):
                if self.budget_stop:
                    return Stop.BUDGET
                limit, why = next_stop(deadline, self.provider_error_at, grace)
                remaining = limit - self._clock.monotonic()
                # A wait that runs its full length saw no event: the limit was reached.
                if remaining <= 0 or not self._condition.wait(remaining):
                    return why
            return None
