"""The ports: small protocols the use cases depend on. Adapters implement them explicitly.

One module per concern (file system; clock, ids, temporary directories and locks; the squad
store; the Pi extension host; child Pi processes; agent definitions; child write isolation).
Every name is re-exported here, so ``from application.ports import X`` is the way to use them.
"""

from application.ports.agents import AgentDirectory
from application.ports.children import (
    AssistantText,
    ChildEvent,
    ChildHandle,
    ChildRuntime,
    Confinement,
    Exited,
    ForkSession,
    NewSession,
    RequestedCall,
    ResumeSession,
    SessionBound,
    SessionChoice,
    Settled,
    SpawnRequest,
    ToolCallsRequested,
    ToolResultSeen,
    ToolStarted,
)
from application.ports.filesystem import (
    FileIdentity,
    FileSystem,
    PathFlavour,
    ReadFailure,
    StableDigest,
    StableRead,
    StableReadError,
)
from application.ports.isolation import ChildIsolation, IsolationSupport
from application.ports.pi_events import (
    ALLOW,
    PiEvents,
    Registrations,
    SessionNotification,
    ToolDecision,
    ToolFailure,
    ToolResult,
    ToolSpec,
)
from application.ports.store import SquadCodec, SquadSnapshot, SquadTransaction, Store
from application.ports.system import Clock, Ids, LockFactory, LockTimeout, TempDirs

__all__ = [
    "ALLOW",
    "AgentDirectory",
    "AssistantText",
    "ChildEvent",
    "ChildHandle",
    "ChildIsolation",
    "ChildRuntime",
    "Clock",
    "Confinement",
    "Exited",
    "FileIdentity",
    "FileSystem",
    "ForkSession",
    "Ids",
    "IsolationSupport",
    "LockFactory",
    "LockTimeout",
    "NewSession",
    "PathFlavour",
    "PiEvents",
    "ReadFailure",
    "Registrations",
    "RequestedCall",
    "ResumeSession",
    "SessionBound",
    "SessionChoice",
    "SessionNotification",
    "Settled",
    "SpawnRequest",
    "SquadCodec",
    "SquadSnapshot",
    "SquadTransaction",
    "StableDigest",
    "StableRead",
    "StableReadError",
    "Store",
    "TempDirs",
    "ToolCallsRequested",
    "ToolDecision",
    "ToolFailure",
    "ToolResult",
    "ToolResultSeen",
    "ToolSpec",
    "ToolStarted",
]
