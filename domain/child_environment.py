"""The child environment contract (§6): the one place its variables are named, written and read.

The spawning parent writes ``ChildEnvironment.to_environ()`` from persisted squad state (never
from a prompt); the child's bridge decides which role its Pi process plays from
``ChildEnvironment.from_environ`` alone:

* no spec variable: the user's own Pi (``MainProcess``), or a child of an inline squad or a
  flow when ``PI_SQUAD_CHILD=1`` (``LegacyChild``), or a flow's ``bash-ro`` child when also
  ``PI_SQUAD_BASH_READONLY=1`` (``ReadOnlyBashChild``: its bridge screens every ``bash`` call);
* every variable, each valid: a child of a file squad (``SpecChild``);
* anything else (some spec variables but not all, the flag missing, any invalid value): the
  child fails closed (``FailedClosedChild``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from domain import paths
from domain.chunks import CHUNK_BYTES
from domain.delegation.lease import WorkerLease
from domain.squad.ids import SQUAD_ID_PATTERN, TASK_ID_PATTERN

if TYPE_CHECKING:
    from domain.squad.model import SpecRef, Squad

CHILD_FLAG = "PI_SQUAD_CHILD"
SQUAD_ID = "PI_SQUAD_ID"
TASK_ID = "PI_SQUAD_TASK_ID"
SPEC_PATH = "PI_SQUAD_SPEC_PATH"
SPEC_SHA256 = "PI_SQUAD_SPEC_SHA256"
SPEC_BYTES = "PI_SQUAD_SPEC_BYTES"
SPEC_CHUNK_BYTES = "PI_SQUAD_SPEC_CHUNK_BYTES"
# Set by a flow's dispatcher for a ``bash-ro`` role: the child's bridge (started by the parent,
# out of the child's reach) screens its bash calls. Any value but ``1`` fails closed.
BASH_READONLY = "PI_SQUAD_BASH_READONLY"
# Set by the delegation host for a delegated worker (docs/delegation.md): the child's bridge
# serves only the evidence broker, for the attempt these name. Any unusable value fails closed.
DELEGATION_WORKER = "PI_SQUAD_DELEGATION_WORKER"
DELEGATION_SESSION = "PI_SQUAD_DELEGATION_SESSION"
DELEGATION_BATCH = "PI_SQUAD_DELEGATION_BATCH"
DELEGATION_JOB = "PI_SQUAD_DELEGATION_JOB"
DELEGATION_ATTEMPT = "PI_SQUAD_DELEGATION_ATTEMPT"
DELEGATION_LEASE = "PI_SQUAD_DELEGATION_LEASE"
DELEGATION_DIGEST = "PI_SQUAD_DELEGATION_DIGEST"
# The host's evidence broker, a pathname UNIX socket the host made where the worker cannot
# write (``adapters/delegation/broker_server.py``): absolute, normalised, at most PATH_MAX.
DELEGATION_BROKER = "PI_SQUAD_DELEGATION_BROKER"
MAX_BROKER_SOCKET_BYTES = 4095
DELEGATION_VARIABLES = (
    DELEGATION_SESSION,
    DELEGATION_BATCH,
    DELEGATION_JOB,
    DELEGATION_ATTEMPT,
    DELEGATION_LEASE,
    DELEGATION_DIGEST,
)
# A delegated worker's private directory (its cwd, its Pi session and its own Pi agent
# directory) is named with this prefix; ``adapters.isolation.scratch`` makes such directories
# and sweeps those a crashed driver left behind.
WORKER_DIR_PREFIX = "pi-squad-worker-"
SPEC_VARIABLES = (SQUAD_ID, TASK_ID, SPEC_PATH, SPEC_SHA256, SPEC_BYTES, SPEC_CHUNK_BYTES)
ALL_CHILD_VARIABLES = (CHILD_FLAG, *SPEC_VARIABLES)
_SHA256 = re.compile(r"^[a-f0-9]{64}\Z")
_DECIMAL = re.compile(r"^[1-9][0-9]{0,15}\Z")


@attrs.frozen
class SpecVariables:
    """The spec variables of a child of a file squad, as values."""

    squad_id: str
    task_id: str
    spec_path: str
    spec_sha256: str
    spec_bytes: int
    chunk_bytes: int


@attrs.frozen
class MainProcess:
    """The user's own Pi: the squad tools are registered."""


@attrs.frozen
class LegacyChild:
    """A child of an inline squad: nothing is registered, behaviour is as before."""


@attrs.frozen
class SpecChild(SpecVariables):
    """A child of a file squad whose spec variables held, and the squad directory its spec
    path lies in."""

    squad_dir: str

    def spec_ref(self, chunk_count: int) -> SpecRef:
        # Imported here: a child's bridge classifies its environment at start-up (paid per
        # task) and never needs the squad model's classes for it.
        from domain.squad.model import SpecRef  # noqa: PLC0415

        return SpecRef(
            sha256=self.spec_sha256,
            bytes=self.spec_bytes,
            path=self.spec_path,
            chunk_bytes=self.chunk_bytes,
            chunk_count=chunk_count,
        )

    @property
    def environment(self) -> ChildEnvironment:
        """The environment this child was classified from."""
        # Exactly a SpecVariables (not this subclass), so it equals the parent's for_task.
        variables = {field.name: getattr(self, field.name) for field in attrs.fields(SpecVariables)}
        return ChildEnvironment(SpecVariables(**variables))


@attrs.frozen
class ReadOnlyBashChild:
    """A flow child granted ``bash-ro``: its ``bash`` calls pass the read-only screen."""


@attrs.frozen
class DelegationWorkerChild(WorkerLease):
    """A delegated worker: its bridge serves the closed evidence broker for this lease, asking
    the host's broker at ``broker_socket``."""

    broker_socket: str

    @property
    def lease(self) -> WorkerLease:
        return WorkerLease(
            self.session,
            self.batch_id,
            self.job_id,
            self.attempt_id,
            self.token,
            self.packet_digest,
        )


@attrs.frozen
class FailedClosedChild:
    """Spec variables were present but unusable: every tool is blocked, no reader exists."""

    reason: str


ProcessRole = (
    MainProcess
    | LegacyChild
    | ReadOnlyBashChild
    | DelegationWorkerChild
    | SpecChild
    | FailedClosedChild
)


def delegation_worker_environ(lease: WorkerLease) -> dict[str, str]:
    """What the delegation host puts in the environment of the worker that runs ``lease``."""
    return {
        CHILD_FLAG: "1",
        DELEGATION_WORKER: "1",
        DELEGATION_SESSION: lease.session,
        DELEGATION_BATCH: lease.batch_id,
        DELEGATION_JOB: lease.job_id,
        DELEGATION_ATTEMPT: lease.attempt_id,
        DELEGATION_LEASE: lease.token,
        DELEGATION_DIGEST: lease.packet_digest,
    }


def broker_socket_environ(path: str) -> dict[str, str]:
    """What points a worker's bridge at its host's evidence broker."""
    return {DELEGATION_BROKER: path}


def flow_child_environ(*, read_only_bash: bool) -> dict[str, str]:
    """What a flow's dispatcher puts in one child's environment."""
    environ = {CHILD_FLAG: "1"}
    if read_only_bash:
        environ[BASH_READONLY] = "1"
    return environ


@attrs.frozen
class ChildEnvironment:
    """What a parent puts in one child's environment: the child flag, and for a child of a
    file squad the spec variables (``spec``; ``None`` for a legacy child)."""

    spec: SpecVariables | None = None

    @classmethod
    def for_task(cls, squad: Squad, task_id: str) -> ChildEnvironment:
        """From persisted squad state only: a file squad's spec, or a legacy child."""
        if squad.spec is None:
            return cls()
        return cls(
            SpecVariables(
                squad_id=squad.id,
                task_id=task_id,
                spec_path=squad.spec.path,
                spec_sha256=squad.spec.sha256,
                spec_bytes=squad.spec.bytes,
                chunk_bytes=squad.spec.chunk_bytes,
            )
        )

    def to_environ(self) -> dict[str, str]:
        environ = {CHILD_FLAG: "1"}
        spec = self.spec
        if spec is not None:
            environ.update(
                {
                    SQUAD_ID: spec.squad_id,
                    TASK_ID: spec.task_id,
                    SPEC_PATH: spec.spec_path,
                    SPEC_SHA256: spec.spec_sha256,
                    SPEC_BYTES: str(spec.spec_bytes),
                    SPEC_CHUNK_BYTES: str(spec.chunk_bytes),
                }
            )
        return environ

    @staticmethod
    def from_environ(environ: Mapping[str, str], flavour: paths.PathFlavour) -> ProcessRole:
        """The role of the process whose environment is ``environ`` (see the module docstring)."""
        present = [name for name in SPEC_VARIABLES if name in environ]
        is_child = environ.get(CHILD_FLAG) == "1"
        read_only = environ.get(BASH_READONLY)
        if DELEGATION_WORKER in environ or any(
            n in environ for n in (*DELEGATION_VARIABLES, DELEGATION_BROKER)
        ):
            return _delegation_worker(environ, flavour, present=bool(present), read_only=read_only)
        if not present:
            if not is_child:
                return MainProcess()
            if read_only is None:
                return LegacyChild()
            if read_only == "1":
                return ReadOnlyBashChild()
            return FailedClosedChild(f"{BASH_READONLY} must be 1 when it is set")
        if read_only is not None:
            return FailedClosedChild(f"{BASH_READONLY} is for flow children, not file-squad ones")
        missing = [name for name in ALL_CHILD_VARIABLES if name not in environ]
        if missing:
            return FailedClosedChild(f"missing environment variables: {', '.join(missing)}")
        if not is_child:
            return FailedClosedChild(f"{CHILD_FLAG} must be 1 when spec variables are set")
        return _spec_child(environ, flavour)


_WORKER_VALUE = re.compile(r"^[A-Za-z0-9_.-]{1,128}\Z")


def _delegation_worker(
    environ: Mapping[str, str], flavour: paths.PathFlavour, *, present: bool, read_only: str | None
) -> ProcessRole:
    """A worker needs the flag, the worker flag, every lease variable and its broker's socket,
    and nothing of the other child kinds: any mixture fails closed."""
    if present or read_only is not None:
        return FailedClosedChild("delegation worker variables mixed with another child kind")
    if environ.get(CHILD_FLAG) != "1" or environ.get(DELEGATION_WORKER) != "1":
        return FailedClosedChild(f"{CHILD_FLAG} and {DELEGATION_WORKER} must both be 1")
    values = [environ.get(name, "") for name in DELEGATION_VARIABLES]
    bad = [
        n for n, v in zip(DELEGATION_VARIABLES, values, strict=True) if not _WORKER_VALUE.match(v)
    ]
    broker = environ.get(DELEGATION_BROKER, "")
    if _broker_socket_problem(broker, flavour):
        bad.append(DELEGATION_BROKER)
    if bad:
        return FailedClosedChild(f"missing or invalid: {', '.join(bad)}")
    session, batch, job, attempt, token, digest = values
    return DelegationWorkerChild(session, batch, job, attempt, token, digest, broker)


def _broker_socket_problem(path: str, flavour: paths.PathFlavour) -> bool:
    """The broker's socket is a normalised absolute POSIX path a UNIX socket can have."""
    return (
        flavour != "posix"
        or not paths.is_native_absolute(path, flavour)
        or paths.normalise_for_access(path, flavour) != path
        or any(ord(character) < 0x20 for character in path)
        or len(path.encode("utf-8", "surrogateescape")) > MAX_BROKER_SOCKET_BYTES
    )


def _spec_child(environ: Mapping[str, str], flavour: paths.PathFlavour) -> ProcessRole:
    squad_id = environ[SQUAD_ID]
    task_id = environ[TASK_ID]
    spec_path = environ[SPEC_PATH]
    problems: list[str] = []
    if not SQUAD_ID_PATTERN.match(squad_id):
        problems.append(f"{SQUAD_ID} is not a squad id")
    if not TASK_ID_PATTERN.match(task_id):
        problems.append(f"{TASK_ID} is not a task id")
    if not _SHA256.match(environ[SPEC_SHA256]):
        problems.append(f"{SPEC_SHA256} is not 64 lowercase hex characters")
    if not _DECIMAL.match(environ[SPEC_BYTES]):
        problems.append(f"{SPEC_BYTES} is not a positive decimal integer")
    if environ[SPEC_CHUNK_BYTES] != str(CHUNK_BYTES):
        problems.append(f"{SPEC_CHUNK_BYTES} is not {CHUNK_BYTES}")
    squad_dir = _squad_dir_of(spec_path, squad_id, flavour)
    if squad_dir is None:
        problems.append(f"{SPEC_PATH} is not <squad-dir>/spec/spec.v1.json of squad {SQUAD_ID}")
    if problems or squad_dir is None:
        return FailedClosedChild("; ".join(problems))
    return SpecChild(
        squad_id=squad_id,
        task_id=task_id,
        spec_path=spec_path,
        spec_sha256=environ[SPEC_SHA256],
        spec_bytes=int(environ[SPEC_BYTES]),
        chunk_bytes=CHUNK_BYTES,
        squad_dir=squad_dir,
    )


def _squad_dir_of(spec_path: str, squad_id: str, flavour: paths.PathFlavour) -> str | None:
    """The squad directory the canonical path sits in, if the path has exactly that shape."""
    if not paths.is_native_absolute(spec_path, flavour):
        return None
    normalised = paths.normalise_for_access(spec_path, flavour)
    separator = "\\" if flavour == "windows" else "/"
    parts = normalised.split(separator)
    if len(parts) < 4 or parts[-1] != "spec.v1.json" or parts[-2] != "spec":
        return None
    if parts[-3] != squad_id:
        return None
    squad_dir = separator.join(parts[:-2])
    expected = paths.join_path(squad_dir, "spec", "spec.v1.json", flavour=flavour)
    return squad_dir if expected == normalised else None
