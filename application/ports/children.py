"""Child Pi processes, as the scheduler sees them: spawn requests, their events, handles."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

import attrs

__all__ = [
    "AssistantText",
    "ChildEvent",
    "ChildHandle",
    "ChildRuntime",
    "Confinement",
    "Exited",
    "ForkSession",
    "NewSession",
    "OutputProgress",
    "ProviderError",
    "ProviderRecovery",
    "RequestedCall",
    "ResumeSession",
    "SessionBound",
    "SessionChoice",
    "Settled",
    "SpawnRequest",
    "SteerDelivered",
    "ToolCallsRequested",
    "ToolResultSeen",
    "ToolStarted",
]


@attrs.frozen
class NewSession:
    """Start a fresh Pi session file in ``session_dir`` (``--session-dir``)."""

    session_dir: str


@attrs.frozen
class ResumeSession:
    """Continue the task's bound session file (``--session``)."""

    session_file: str


@attrs.frozen
class ForkSession:
    """Fork ``source_file`` into a new session in ``session_dir`` (``--fork``)."""

    source_file: str
    session_dir: str


SessionChoice = NewSession | ResumeSession | ForkSession


@attrs.frozen
class SpawnRequest:
    """Everything needed to start one child ``pi --mode rpc`` for one task.

    ``environment`` holds only the pi-squad variables (§6); the runtime adds them to its own
    base environment. Spec content is never in ``argv`` or the environment.
    """

    squad_id: str
    task_id: str
    cwd: str
    session: SessionChoice
    system_prompt: str
    first_prompt: str
    environment: Mapping[str, str]
    model: str | None = None
    thinking: str | None = None
    tools: tuple[str, ...] | None = None
    provider: str | None = None
    # Kernel write isolation for the child's whole process tree (None: not confined).
    confinement: Confinement | None = None
    # Report every streamed chunk of an assistant message (``OutputProgress``): for a host
    # that bounds output while it streams (a delegated worker); off for squads and flows.
    observe_output: bool = False
    # A closed context (a delegated worker): no context files either. (No child loads skills,
    # prompt templates or project settings: the runtime starts every one without them.)
    closed_context: bool = False


@attrs.frozen
class Confinement:
    """What a confined child may write: its task's ledger directory (read ledger and Pi
    session) and the squad's project directory; the runtime adds a private temporary directory,
    Pi's agent directory and ``/dev``. Nothing granted may contain ``squad_root`` or lie
    beneath it outside ``ledger_dir``: either would hand the child the parent's records."""

    squad_root: str
    ledger_dir: str
    project_dir: str
    # The child's own Pi agent directory, beneath ``project_dir`` (a delegated worker's, its
    # retries off); ``None``: the runtime seeds a copy of the user's in the child's scratch.
    agent_dir: str | None = None
    # Where the child may read and execute besides what it may write (a delegated worker's
    # allowlist, ``adapters.isolation.readable``); ``None``: reads unrestricted (squad children).
    readable: tuple[str, ...] | None = None


@attrs.frozen
class SessionBound:
    """The child reported its session file (from ``get_state``)."""

    task_id: str
    child_id: str
    session_file: str
    session_id: str | None


@attrs.frozen
class AssistantText:
    """A finalised assistant message: its text blocks joined with newlines, and usage."""

    task_id: str
    child_id: str
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    # The provider reported a numeric cost (else ``cost`` is 0 for want of one): a flow cost
    # ceiling cannot be enforced on an unknown spend (``BUDGET_UNOBSERVABLE``).
    cost_reported: bool = True
    # What the delegation receipt needs beyond the squad's figures; left out of equality so
    # the squad's events compare as before. ``None``: the message did not report it.
    cache_read: int | None = attrs.field(default=None, eq=False)
    cache_write: int | None = attrs.field(default=None, eq=False)
    usage_reported: bool = attrs.field(default=False, eq=False)
    stop_reason: str | None = attrs.field(default=None, eq=False)
    # The model and provider Pi says answered (``None``: not said).
    model: str | None = attrs.field(default=None, eq=False)
    provider: str | None = attrs.field(default=None, eq=False)


@attrs.frozen
class ToolStarted:
    task_id: str
    child_id: str
    tool_name: str
    tool_call_id: str


@attrs.frozen
class RequestedCall:
    """One tool call of a finalised assistant message, with the arguments as the model sent
    them (before Pi's coercion)."""

    tool_call_id: str
    tool_name: str
    arguments: object


@attrs.frozen
class ToolCallsRequested:
    """The tool calls of a finalised assistant message on the child's RPC stream."""

    task_id: str
    child_id: str
    calls: tuple[RequestedCall, ...]


@attrs.frozen
class ToolResultSeen:
    """A finalised tool-result message on the child's RPC stream: its text blocks in order
    (``None`` for a block that is not text)."""

    task_id: str
    child_id: str
    tool_call_id: str
    tool_name: str
    is_error: bool
    texts: tuple[str | None, ...]


@attrs.frozen
class ProviderError:
    """The model's provider failed: a finalised assistant message with ``stopReason: "error"``
    (Pi may still retry it: ``ProviderRecovery`` follows), or Pi's automatic retries gave up
    (``auto_retry_end`` without success). ``message`` is the provider's error text."""

    task_id: str
    child_id: str
    message: str


@attrs.frozen
class ProviderRecovery:
    """Pi is working past a provider error: ``auto_retry_start`` (``reason`` ``retry``) or a
    compaction it retries after (``compaction``)."""

    task_id: str
    child_id: str
    reason: str


@attrs.frozen
class SteerDelivered:
    """A message this handle steered was seen echoed into the child's session (a user message
    carrying exactly its text): the proof it reached the model's context, not just Pi's queue."""

    task_id: str
    child_id: str
    message: str


@attrs.frozen
class OutputProgress:
    """A streamed chunk of an assistant message arrived (``message_update``): the decoded
    bytes of its text, thinking and tool-call deltas so far in this message. Sent only to a
    child spawned with ``observe_output``."""

    task_id: str
    child_id: str
    message_bytes: int


@attrs.frozen
class Settled:
    """``agent_settled``: the child finished its run (never judged on ``agent_end``)."""

    task_id: str
    child_id: str
    turn_count: int
    tool_call_count: int


@attrs.frozen
class Exited:
    """The process ended; ``unexpected`` unless it was settled, killed or aborted by us."""

    task_id: str
    child_id: str
    exit_code: int | None
    stderr_tail: str
    unexpected: bool


ChildEvent = (
    SessionBound
    | AssistantText
    | ToolStarted
    | ToolCallsRequested
    | ToolResultSeen
    | ProviderError
    | ProviderRecovery
    | SteerDelivered
    | OutputProgress
    | Settled
    | Exited
)


class ChildHandle(Protocol):
    @property
    def child_id(self) -> str: ...

    @property
    def task_id(self) -> str: ...

    def alive(self) -> bool: ...

    def steer(self, message: str) -> bool:
        """Deliver ``message`` into the running turn; ``False`` if Pi refused it."""
        ...

    def follow_up(self, message: str) -> bool: ...

    def abort(self) -> None: ...

    def kill(self) -> None:
        """SIGTERM, then SIGKILL after a grace period; reaped, never a zombie."""
        ...


class ChildRuntime(Protocol):
    def spawn(self, request: SpawnRequest, sink: Callable[[ChildEvent], None]) -> ChildHandle:
        """Start the child, bind its session, send ``first_prompt``; events go to ``sink``
        from any thread, in the order the child produced them."""
        ...
