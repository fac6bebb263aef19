"""One child Pi as its parent watches it, from spawn to end: the one loop every face runs on.

``ChildSession`` starts a child over the ``ChildRuntime`` port and keeps what its stream says:
the text of every assistant message, each message's usage and their sum (the one ``Usage``),
the last message, a pending provider error, whether the child settled or exited. It kills a
child whose message grows past the output ceiling, and says why a child must be stopped:
``wait`` blocks until the child ends or a limit passes on the ``Clock``; ``due`` asks now.
Its owner (a flow run, a delegated attempt, the planner, the advisor) decides what each end
means for its face. The squad scheduler starts and kills its task children through it too, but
reads their stream itself: the store keeps a task's durable record, the monitor its watch.

Events reach ``record`` from the runtime's reader thread, or from the owner's own thread when
it queues them (``start``'s ``deliver``); everything here is kept under one condition.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from application.ports import (
    AssistantText,
    ChildEvent,
    ChildHandle,
    ChildRuntime,
    Clock,
    Exited,
    OutputProgress,
    ProviderError,
    ProviderRecovery,
    Settled,
    SpawnRequest,
    ToolStarted,
)
from domain.child_stops import Stop, next_stop
from domain.usage import Category, Usage

__all__ = ["ChildSession", "Stop", "message_usage"]

# A finalised message that ended so was no answer: the provider failed, or the turn was aborted.
_NOT_A_RESPONSE = ("error", "aborted")


def message_usage(event: AssistantText) -> Usage:
    """One assistant message's usage. Its figures count whatever Pi reported (a message without
    a usage object carries zeros); which categories Pi reported at all is kept beside them, and
    a reported cost is Pi's estimate from its model table, never a bill."""
    reported = event.usage_reported
    categories: dict[Category, bool] = {
        "input": reported,
        "output": reported,
        "cache_read": reported and event.cache_read is not None,
        "cache_write": reported and event.cache_write is not None,
        "cost": reported,
    }
    return Usage(
        input_tokens=event.input_tokens,
        output_tokens=event.output_tokens,
        cache_read_tokens=event.cache_read or 0,
        cache_write_tokens=event.cache_write or 0,
        cost=event.cost,
        turns=1,
        cost_estimated=reported,
        reported=frozenset(name for name, given in categories.items() if given),
    )


def _output_bytes(event: ChildEvent) -> int | None:
    """How large the child's current assistant message is, when ``event`` shows it."""
    if isinstance(event, OutputProgress):
        return event.message_bytes
    if isinstance(event, AssistantText):
        return len(event.text.encode("utf-8"))
    return None


class ChildSession:
    """One child's events until it settles or exits, and the limits it is stopped at.

    ``error_grace``: how long a child whose provider failed may stay silent (``None``: no
    grace; only the deadline stops it). ``output_ceiling``: the most bytes one assistant
    message may hold (``None``: unbounded). ``on_event``: told of every event once it is
    recorded, on the thread that recorded it.
    """

    def __init__(
        self,
        runtime: ChildRuntime,
        clock: Clock,
        *,
        error_grace: float | None = None,
        output_ceiling: int | None = None,
        on_event: Callable[[ChildEvent], None] | None = None,
    ) -> None:
        self._runtime = runtime
        self._clock = clock
        self._error_grace = float("inf") if error_grace is None else error_grace
        self._output_ceiling = output_ceiling
        self._on_event = on_event
        self._condition = threading.Condition()
        self.handle: ChildHandle | None = None
        self.started_at: float | None = None
        self.killed = False
        self.texts: list[str] = []
        self.per_message: list[Usage] = []
        self.usage = Usage()
        self.last: AssistantText | None = None
        # Messages that were answers (not ended by a provider error or an abort).
        self.responses = 0
        # The pending provider error and when it came (cleared when Pi works past it), and the
        # last one ever seen (kept).
        self.provider_error: str | None = None
        self.provider_error_at: float | None = None
        self.last_provider_error: str | None = None
        # Pi working past a provider error: its automatic retries and compactions.
        self.recoveries = 0
        self.settled: Settled | None = None
        self.exited: Exited | None = None
        # Why the child was stopped before it ended (the output ceiling, the owner's budget).
        self.stopped: Stop | None = None
        # The size of the message that crossed the output ceiling.
        self.overflow: int | None = None

    # -- starting and stopping ------------------------------------------------------------------

    def start(
        self, request: SpawnRequest, deliver: Callable[[ChildEvent], None] | None = None
    ) -> ChildHandle:
        """Spawn the child; its events go to ``deliver`` (default: ``record``, on the runtime's
        thread). A session killed while the child started kills it at once. A failed spawn
        raises and leaves the session unstarted: it may start again."""
        with self._condition:
            self.started_at = self._clock.monotonic()
        handle = self._runtime.spawn(request, self.record if deliver is None else deliver)
        with self._condition:
            self.handle = handle
            killed = self.killed
        if killed:
            handle.kill()
        return handle

    def kill(self) -> None:
        """Kill the child (SIGTERM, then SIGKILL; returns once reaped), or the one still
        starting as soon as it is up; waiters look again."""
        with self._condition:
            self.killed = True
            handle = self.handle
            self._condition.notify_all()
        if handle is not None:
            handle.kill()

    def stop(self, reason: Stop) -> None:
        """The owner's own bound was reached: ``wait`` returns ``reason`` (the first one kept);
        the owner kills the child when it has decided."""
        with self._condition:
            if self.stopped is None:
                self.stopped = reason
            self._condition.notify_all()

    def wake(self) -> None:
        """Make ``wait`` look at its predicate again (its ``until`` was set)."""
        with self._condition:
            self._condition.notify_all()

    # -- the stream -----------------------------------------------------------------------------

    def record(self, event: ChildEvent) -> None:
        size = _output_bytes(event)
        ceiling = self._output_ceiling
        with self._condition:
            self._keep(event)
            over = ceiling is not None and size is not None and size > ceiling
            crossed = over and self.overflow is None
            if crossed:
                self.overflow = size
                self.stopped = self.stopped or Stop.OUTPUT
            self._condition.notify_all()
        if crossed:
            # Nothing more of it is read: the chunk past the ceiling is never kept anywhere.
            self.kill()
        if self._on_event is not None:
            self._on_event(event)

    def _keep(self, event: ChildEvent) -> None:
        if isinstance(event, ProviderError):
            self.provider_error = self.last_provider_error = event.message
            self.provider_error_at = self._clock.monotonic()
        elif isinstance(event, AssistantText | ToolStarted | ProviderRecovery):
            self.provider_error = self.provider_error_at = None
        if isinstance(event, ProviderRecovery):
            self.recoveries += 1
        elif isinstance(event, AssistantText):
            self.texts.append(event.text)
            usage = message_usage(event)
            self.per_message.append(usage)
            self.usage = self.usage.plus(usage)
            self.last = event
            if event.stop_reason not in _NOT_A_RESPONSE:
                self.responses += 1
        elif isinstance(event, Settled) and self.settled is None:
            self.settled = event
        elif isinstance(event, Exited) and self.exited is None:
            self.exited = event

    # -- what came of it ------------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        """The child settled or exited."""
        return self.settled is not None or self.exited is not None

    def last_words(self) -> str | None:
        """The last assistant text that says something (``None``: nothing was said)."""
        with self._condition:
            said = [text for text in self.texts if text.strip()]
        return said[-1] if said else None

    def elapsed_ms(self) -> int:
        """Milliseconds since the start (0 when it never started)."""
        if self.started_at is None:
            return 0
        return max(0, round((self._clock.monotonic() - self.started_at) * 1000))

    def deadline(self, seconds: float) -> float:
        """The monotonic moment ``seconds`` after the start (its spawn included)."""
        assert self.started_at is not None, "the session was never started"
        return self.started_at + seconds

    def due(self, deadline: float) -> Stop | None:
        """Why the child must be stopped now, if it must: a stop already decided, ``deadline``
        (monotonic) passed, or a provider error's grace ran out. ``None`` once it ended."""
        with self._condition:
            if self.ended:
                return None
            if self.stopped is not None:
                return self.stopped
            limit, why = next_stop(deadline, self.provider_error_at, self._error_grace)
            return why if self._clock.monotonic() >= limit else None

    def wait(self, deadline: float, until: threading.Event | None = None) -> Stop | None:
        """Block until the child settles or exits (``None``; also when ``until`` is set), or
        return why it must be stopped: a decided stop, ``deadline`` (the clock's monotonic
        time) passed, or a provider error's grace ran out with the child silent."""
        with self._condition:
            while not (self.ended or (until is not None and until.is_set())):
                if self.stopped is not None:
                    return self.stopped
                limit, why = next_stop(deadline, self.provider_error_at, self._error_grace)
                remaining = limit - self._clock.monotonic()
                # A wait that runs its full length saw no event: the limit was reached.
                if remaining <= 0 or not self._condition.wait(remaining):
                    return why
            return None
