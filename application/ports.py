"""The ports: small protocols the use cases depend on. Adapters implement them explicitly.

Adapters raise only the exceptions declared here (or ``OSError`` from write operations, which
use cases translate into their own codes), so a use case never has to know which operating
system it runs on.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

import attrs

from domain.agents import AgentCatalog
from domain.attestation.grounding import Observation

# Re-exported: the flavour is a domain notion (the path rules are pure), ports speak it too.
from domain.paths import PathFlavour as PathFlavour  # noqa: PLC0414 (explicit re-export for mypy)
from domain.squad.messages import MailboxEntry, Message
from domain.squad.model import Squad, Task


@attrs.frozen
class FileIdentity:
    """What pins one opened file: compared before, during and after every stable read."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int


@attrs.frozen
class StableRead:
    """All bytes of one regular file, read from one pinned descriptor that did not change."""

    path: str
    data: bytes
    identity: FileIdentity
    sha256: str


@attrs.frozen
class StableDigest:
    """Length and SHA-256 of a file streamed from one pinned descriptor that did not change."""

    path: str
    size: int
    sha256: str
    identity: FileIdentity


class ReadFailure(enum.Enum):
    MISSING = "missing"
    SYMLINK = "symlink"
    NOT_REGULAR = "not a regular file"
    CHANGED = "changed while it was read"
    UNREADABLE = "unreadable"
    TOO_LARGE = "too large"
    INVALID_PATH = "invalid path"
    SIZE_MISMATCH = "not the expected size"


class StableReadError(Exception):
    """A stable read was refused. ``detail`` never contains file content."""

    def __init__(self, failure: ReadFailure, path: str, detail: str, *, size: int | None = None):
        super().__init__(f"{path}: {failure.value}: {detail}")
        self.failure = failure
        self.path = path
        self.detail = detail
        self.size = size


class FileSystem(Protocol):
    """The filesystem as the contract needs it. Paths are absolute native strings.

    A path that is not native absolute for ``flavour`` (``domain.paths``) is refused: by the
    reads with ``StableReadError(INVALID_PATH)``, by every other method with ``ValueError``.
    """

    @property
    def flavour(self) -> PathFlavour: ...

    def read_stable(self, path: str, *, max_bytes: int) -> StableRead:
        """Read a regular, non-symlink file through one pinned descriptor.

        Raises ``StableReadError``: ``TOO_LARGE`` (with ``size``) without reading the content
        when the file is longer than ``max_bytes``; ``MISSING``, ``SYMLINK``, ``NOT_REGULAR``
        (never blocking on a FIFO or device), ``CHANGED`` when identity, size, mtime or ctime
        moved between the checks (also when the path vanished or was replaced between ``lstat``
        and open, or when more bytes arrived than were measured), ``INVALID_PATH`` for a path
        that is not native absolute, ``UNREADABLE`` otherwise (including an identity the
        platform cannot vouch for, such as a zero file index on Windows).
        """
        ...

    def digest_stable(self, path: str, *, expected_size: int | None = None) -> StableDigest:
        """Like ``read_stable`` but streams the file through SHA-256 in bounded memory.

        With ``expected_size``, a file whose pinned descriptor measures another size is
        ``StableReadError(SIZE_MISMATCH)`` (with ``size``) before a single byte is read, so a
        huge or sparse file declared small is refused at once, never hashed.
        """
        ...

    def make_dir_exclusive(self, path: str, mode: int) -> None:
        """Create one directory; ``FileExistsError`` if anything is there already."""
        ...

    def ensure_dir(self, path: str, mode: int) -> None:
        """Create a directory and its parents if missing (used for the squad root only)."""
        ...

    def create_file_exclusive(self, path: str, data: bytes, mode: int) -> None:
        """Create a new file with exactly ``mode`` where the platform has modes (never replacing
        anything, not even a dangling symlink: ``FileExistsError``), write ``data``, fsync it.
        A partially written file is removed before the error propagates."""
        ...

    def write_atomic(self, path: str, data: bytes) -> None:
        """Same-directory temp file (mode ``0600``), fsync, ``os.replace``, fsync the
        directory. The temp file is removed if any step before the replace fails."""
        ...

    def fsync_dir(self, path: str) -> None:
        """Make the directory's entries durable; a no-op on Windows, which cannot."""
        ...

    def rename_no_replace(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target``; ``FileExistsError`` if ``target`` exists, even an
        empty directory. Never merges or replaces."""
        ...

    def mark_read_only(self, path: str) -> None:
        """Mode ``0400`` on POSIX; the read-only attribute on Windows (best effort)."""
        ...

    def list_dir(self, path: str) -> list[str]:
        """Entry names, sorted; ``FileNotFoundError`` if the directory is missing."""
        ...

    def is_dir(self, path: str) -> bool:
        """True for a real directory (a symlink to one is not)."""
        ...

    def exists(self, path: str) -> bool:
        """True if anything, a dangling symlink included, is at ``path``."""
        ...

    def read_small(self, path: str, max_bytes: int) -> bytes:
        """Read a state file the project itself wrote (same refusals as ``read_stable``)."""
        ...

    def identity(self, path: str) -> FileIdentity | None:
        """``lstat`` identity of whatever is at ``path``, ``None`` when nothing is. Cheap: the
        guard compares it on every tool call to decide whether a full re-verification is due."""
        ...

    def append_bytes(self, path: str, data: bytes) -> None:
        """Append to a file (created with 0600 if missing, never through a symlink) and fsync.

        Appends start a new line: when the file is non-empty and its last byte (read through
        the opened descriptor) is not ``\\n``, a ``\\n`` is written before ``data``, so a torn
        last line of a JSON-lines file never swallows the record appended after it.
        """
        ...

    def remove_file(self, path: str) -> None:
        """Unlink one file; missing is fine."""
        ...

    def remove_tree(self, path: str) -> None:
        """Remove a directory tree the project created; never follows symlinks out of it.

        A missing tree is not an error. A symlink at ``path`` itself raises ``OSError``."""
        ...


class Clock(Protocol):
    def now(self) -> datetime:
        """Aware UTC time. Use cases read it once per operation."""
        ...

    def monotonic(self) -> float: ...


class Ids(Protocol):
    """Randomness: fresh identifiers, and suffixes that keep a new name unique (their first
    eight characters are random too)."""

    def uuid4_hex(self) -> str: ...


class TempDirs(Protocol):
    def temporary_dir(self, prefix: str) -> AbstractContextManager[str]:
        """A new private directory whose name starts with ``prefix``; the context yields its
        absolute path and removes it, with everything in it, when it ends."""
        ...


class LockTimeout(Exception):
    """A lock was not acquired within its bound."""


class LockFactory(Protocol):
    def lock(self, path: str, *, timeout: float = 10.0) -> AbstractContextManager[None]:
        """A cross-process exclusive lock named by ``path`` (the lock file); waits up to
        ``timeout`` seconds, then raises ``LockTimeout``."""
        ...

    def try_lock(self, path: str) -> AbstractContextManager[bool]:
        """Take the lock only if it is free now; the context yields whether it was taken.

        A lock held by a process that died is free: the operating system released it.
        """
        ...

    def discard(self, path: str) -> None:
        """Remove a lock file nobody needs any more (missing is fine)."""
        ...


class SquadCodec(Protocol):
    """The persisted form of squads and tasks."""

    def encode_squad(self, squad: Squad) -> bytes: ...

    def encode_task(self, task: Task) -> bytes: ...

    def decode_squad(self, data: bytes) -> Squad: ...

    def decode_task(self, data: bytes) -> Task: ...


# -- the durable squad store ---------------------------------------------------------------------


class SquadTransaction(Protocol):
    """A locked read-modify-write of one squad: records changed here are written atomically
    when the transaction ends without an exception; nothing is written otherwise."""

    @property
    def squad(self) -> Squad: ...

    @property
    def tasks(self) -> Mapping[str, Task]: ...

    def put_squad(self, squad: Squad) -> None: ...

    def put_task(self, task: Task) -> None: ...

    def mailbox(self, task_id: str) -> tuple[MailboxEntry, ...]: ...

    def put_mailbox(self, task_id: str, entries: tuple[MailboxEntry, ...]) -> None: ...

    def append_message(self, task_id: str, message: Message) -> None:
        """Appended when the transaction commits (after the records it explains)."""
        ...


@attrs.frozen
class SquadSnapshot:
    squad: Squad
    tasks: Mapping[str, Task]


class Store(Protocol):
    """Squads under one root, in the upstream layout."""

    @property
    def root(self) -> str: ...

    def squad_dir(self, squad_id: str) -> str: ...

    def task_dir(self, squad_id: str, task_id: str) -> str: ...

    def list_squad_ids(self) -> list[str]:
        """Published squads (never staging directories), oldest first."""
        ...

    def snapshot(self, squad_id: str) -> SquadSnapshot:
        """The squad and its tasks as last committed; ``NotFoundError`` if absent."""
        ...

    def transaction(self, squad_id: str) -> AbstractContextManager[SquadTransaction]: ...

    def messages(self, squad_id: str, task_id: str) -> list[Message]:
        """History plus mailbox entries not yet in it, sorted by time; torn tails skipped."""
        ...

    def mailbox(self, squad_id: str, task_id: str) -> tuple[MailboxEntry, ...]: ...

    def observations(self, squad_id: str, task_id: str) -> tuple[Observation, ...]:
        """The parent's own record of the task's children (spawns, verified deliveries)."""
        ...

    def record_observation(self, squad_id: str, task_id: str, observation: Observation) -> None:
        """Append durably to that record; only the parent ever writes it."""
        ...

    def quarantine(self, squad_id: str, reason: str) -> None:
        """Record a quarantine on the squad alone (used when its tasks cannot be loaded)."""
        ...


# -- the Pi extension host, as the child and main roles see it -----------------------------------


@attrs.frozen
class ToolSpec:
    """A tool the shim registers with Pi; ``parameters`` is a JSON Schema object."""

    name: str
    label: str
    description: str
    parameters: Mapping[str, Any]


@attrs.frozen
class Registrations:
    """What the shim registers in this Pi process. Empty for a legacy child."""

    tools: tuple[ToolSpec, ...] = ()
    guard: bool = False
    message_end: bool = False
    bootstrap: bool = False


@attrs.frozen
class ToolDecision:
    block: bool
    reason: str | None = None


ALLOW = ToolDecision(block=False)


@attrs.frozen
class ToolResult:
    """A successful tool result: text blocks in order, plus ``details``."""

    texts: tuple[str, ...]
    details: Mapping[str, Any]


class ToolFailure(Exception):
    """A tool execution failed; Pi shows ``message`` to the model as an error result."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@attrs.frozen
class SessionNotification:
    """An unsolicited message for the Pi session (the bridge sends it as
    ``{"v":1,"event":event,"data":data}``)."""

    event: str
    data: Mapping[str, Any]


class PiEvents(Protocol):
    """The events a Pi extension forwards to Python, one method per hook the shim installs.

    The shim calls these through the bridge; the fake-Pi harness calls them directly, in the
    order Pi 0.80.10 does. Any exception is a block (for ``tool_call``) or a failed tool.
    """

    def registrations(self) -> Registrations: ...

    def session_start(self) -> None: ...

    def before_agent_start(self) -> str | None:
        """Text to append to the system prompt (after a blank line), or ``None``."""
        ...

    def tool_call(self, tool_call_id: str, tool_name: str, tool_input: object) -> ToolDecision: ...

    def execute_tool(self, tool_call_id: str, tool_name: str, params: object) -> ToolResult: ...

    def message_end(self, message: Mapping[str, Any]) -> None: ...


# -- child Pi processes, as the scheduler sees them ---------------------------------------------


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


@attrs.frozen
class Confinement:
    """What a confined child may write: its task's ledger directory (read ledger and Pi
    session) and the squad's project directory; the runtime adds a private temporary directory,
    Pi's agent directory and ``/dev``. Nothing granted may contain ``squad_root`` or lie
    beneath it outside ``ledger_dir``: either would hand the child the parent's records."""

    squad_root: str
    ledger_dir: str
    project_dir: str


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


class AgentDirectory(Protocol):
    """Agent definitions as seen from a squad's working directory."""

    def catalog(self, cwd: str) -> AgentCatalog: ...


# --- child write isolation -----------------------------------------------------------------


@attrs.frozen
class IsolationSupport:
    """What this machine can enforce on child processes."""

    mode: str = attrs.field(validator=attrs.validators.in_(("landlock", "none")))
    """``"landlock"`` (kernel-enforced) or ``"none"``."""
    abi: int | None
    """The Landlock ABI version when ``mode == "landlock"``, else ``None``."""
    reason: str | None
    """Why ``mode == "none"`` (not Linux, kernel too old, disabled by a setting, ...)."""

    def __attrs_post_init__(self) -> None:
        consistent = (
            self.abi is not None and self.reason is None
            if self.mode == "landlock"
            else self.abi is None and bool(self.reason)
        )
        if not consistent:
            raise ValueError("mode landlock has an ABI and no reason; mode none a reason, no ABI")


class ChildIsolation(Protocol):
    def support(self) -> IsolationSupport: ...

    def confine(self, argv: Sequence[str], *, writable: Sequence[str]) -> list[str]:
        """argv that runs ``argv`` so that it and every descendant can write only beneath
        ``writable`` (absolute directories; an absolute non-directory such as ``/dev/null``
        grants writing that one file). Same process (exec), environment and descriptors:
        already-open descriptors stay writable. Raises ``domain.errors.IsolationUnavailable``
        if ``support().mode != "landlock"``, ``ValueError`` for an empty ``argv`` or a
        relative path."""
        ...
