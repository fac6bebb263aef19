"""A fake ``ChildRuntime``: records spawns, prompts, steers and kills, and lets a test emit any
child event, in any order, for any child (current or stale)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from application.ports import (
    AssistantText,
    ChildEvent,
    ChildHandle,
    ChildRuntime,
    Exited,
    OutputProgress,
    RequestedCall,
    SessionBound,
    Settled,
    SpawnRequest,
    ToolCallsRequested,
    ToolResultSeen,
    ToolStarted,
)

READER = "squad_spec_read"


@attrs.define
class FakeChild:
    request: SpawnRequest
    sink: Callable[[ChildEvent], None]
    child_id: str
    steers: list[str] = attrs.field(factory=list)
    follow_ups: list[str] = attrs.field(factory=list)
    killed: bool = False
    aborted: bool = False
    finished: bool = False
    accept_steer: bool = True
    bound_session: str | None = None
    pid: int = 4242  # what a worker runtime records for recovery
    # Called with the session file as the child reports it (a world writes the file, as Pi
    # does with its first answer).
    on_bind: Callable[[str], None] | None = None

    @property
    def task_id(self) -> str:
        return self.request.task_id

    def alive(self) -> bool:
        return not (self.killed or self.finished)

    def steer(self, message: str) -> bool:
        self.steers.append(message)
        return self.accept_steer and not self.killed

    def follow_up(self, message: str) -> bool:
        self.follow_ups.append(message)
        return not self.killed

    def abort(self) -> None:
        self.aborted = True

    def kill(self) -> None:
        self.killed = True

    # -- what a test makes the child do ---------------------------------------------------------

    def bind(self, session_file: str, session_id: str | None = "sid") -> None:
        self.bound_session = session_file
        if self.on_bind is not None:
            self.on_bind(session_file)
        self.sink(SessionBound(self.task_id, self.child_id, session_file, session_id))

    def say(self, text: str, *, tokens: int = 10, cost: float = 0.001) -> None:
        self.sink(AssistantText(self.task_id, self.child_id, text, tokens, tokens, cost))

    def stream(self, message_bytes: int) -> None:
        """A streamed piece of the current assistant message, ``message_bytes`` of it so far
        (seen only by a runtime whose request observes output)."""
        self.sink(OutputProgress(self.task_id, self.child_id, message_bytes))

    def read_chunks(self, deliveries: Sequence[tuple[str, object, tuple[str | None, ...]]]) -> None:
        """What the parent sees on the stream of a child that made reader calls: one assistant
        message with the calls (id, raw arguments), then each successful tool result."""
        self.sink(
            ToolCallsRequested(
                self.task_id,
                self.child_id,
                tuple(RequestedCall(call_id, READER, args) for call_id, args, _ in deliveries),
            )
        )
        for call_id, _args, texts in deliveries:
            self.sink(ToolResultSeen(self.task_id, self.child_id, call_id, READER, False, texts))

    def call_tool(self, name: str, arguments: object) -> None:
        """One assistant message requesting one tool call (what the monitor watches)."""
        call = RequestedCall(f"{self.child_id}-call-{len(self.steers)}", name, arguments)
        self.sink(ToolCallsRequested(self.task_id, self.child_id, (call,)))

    def use_tool(self, name: str) -> None:
        self.sink(ToolStarted(self.task_id, self.child_id, name, f"{self.child_id}-{name}"))

    def settle(self, *, turns: int = 1, tool_calls: int = 1) -> None:
        # A real runtime ends the process after settlement.
        self.finished = True
        self.sink(Settled(self.task_id, self.child_id, turns, tool_calls))

    def exit(self, code: int | None = 1, stderr: str = "boom", *, unexpected: bool = True) -> None:
        self.finished = True
        self.sink(Exited(self.task_id, self.child_id, code, stderr, unexpected))


@attrs.define
class FakeChildRuntime:
    spawned: list[FakeChild] = attrs.field(factory=list)
    fail_next_spawn: str | None = None
    on_spawn: Callable[[FakeChild], None] | None = None
    on_bind: Callable[[str], None] | None = None

    def spawn(self, request: SpawnRequest, sink: Callable[[ChildEvent], None]) -> ChildHandle:
        if self.fail_next_spawn is not None:
            reason, self.fail_next_spawn = self.fail_next_spawn, None
            raise RuntimeError(reason)
        child = FakeChild(
            request=request,
            sink=sink,
            child_id=f"child-{len(self.spawned) + 1}",
            on_bind=self.on_bind,
        )
        self.spawned.append(child)
        if self.on_spawn is not None:
            self.on_spawn(child)
        return child

    def for_task(self, task_id: str) -> list[FakeChild]:
        return [c for c in self.spawned if c.task_id == task_id]

    def latest(self, task_id: str) -> FakeChild:
        return self.for_task(task_id)[-1]

    def live_task_ids(self) -> list[str]:
        return sorted(c.task_id for c in self.spawned if c.alive())


_handle_conforms: type[ChildHandle] = FakeChild
_runtime_conforms: type[ChildRuntime] = FakeChildRuntime
