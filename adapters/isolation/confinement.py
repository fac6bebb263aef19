"""The write grants of one confined child, and its private temporary directory.

A confined child (``SpawnRequest.confinement``) may write beneath exactly:

- its task's ledger directory ``<squad>/<task>/`` (read ledger, ``session/``);
- the squad's project directory (the user's working tree: the work itself);
- a private temporary directory made for this child, exported as ``TMPDIR``, which also holds
  the child's private Pi agent directory (below);
- the file ``/dev/null`` (Node opens it for ignored stdio; granting all of ``/dev`` to a root
  child would expose raw disks).

Where ``Confinement.readable`` is given (a delegated worker), the child also reads and executes
only beneath those paths and the ones above; none of them may contain the squad root.

The user's Pi agent directory (``PI_CODING_AGENT_DIR``, default ``~/.pi/agent``) is NOT
granted: Pi auto-loads code and shell commands from there (``extensions/``, ``models.json``
``!command`` keys, ``trust.json``), so a child that could write it could plant code that a later
child or the user's own, unconfined Pi runs. The child gets a private agent directory instead,
``<scratch>/agent``, seeded with a copy of the top-level regular files of the user's one
(``auth.json``, ``settings.json``, ``models.json``, ...) and a link to its ``bin/`` (the
``fd``/``rg`` Pi downloads; read-only to the child, as the kernel judges the link's target).
Nothing else is carried over; what the child writes there is gone with it. Token refreshes a
child makes are therefore not written back (docs/architecture.md, "Trust boundary").

Every grant is resolved (symbolic links followed, as the kernel does when the rule is added)
and checked by :func:`domain.isolation.grant_problem`: none may contain the squad root or lie
inside it outside the task's ledger directory; and by
:func:`domain.isolation.protected_path_problem`: none may reach the code pi-squad and a child's
start run (``adapters.isolation.protected_code``).

``trust.json`` is not copied: it names the projects whose ``.pi`` settings and code Pi would
honour, and a child's project is one a sibling could have written (every child also starts
with ``--no-approve``; this keeps the private directory from trusting anything should that
flag ever be dropped).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Mapping, Sequence

import attrs

from adapters.isolation.scratch import make_scratch
from application.ports import ChildIsolation, Confinement
from domain.errors import ErrorCode, PiSquadError
from domain.isolation import ProtectedPath, grant_problem, protected_path_problem

DEV_NULL = "/dev/null"
AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
PRIVATE_AGENT_DIR_NAME = "agent"
TOOLS_DIR_NAME = "bin"
NOT_COPIED = frozenset({"trust.json"})


class ConfinementRefused(PiSquadError):
    family_codes = frozenset({ErrorCode.ISOLATION_UNSAFE})


@attrs.frozen
class ConfinedLaunch:
    argv: list[str]
    env: dict[str, str]
    scratch_dir: str


def agent_directory(env: Mapping[str, str]) -> str:
    configured = env.get(AGENT_DIR_ENV)
    if configured:
        return configured
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".pi", "agent")


def confined_launch(
    isolation: ChildIsolation,
    argv: Sequence[str],
    env: Mapping[str, str],
    confinement: Confinement,
    *,
    temp_parent: str | None = None,
    protected: Sequence[ProtectedPath] = (),
) -> ConfinedLaunch:
    """argv and environment that start ``argv`` confined; the caller removes ``scratch_dir``
    (:func:`remove_scratch`) when the child is gone. Raises ``IsolationUnavailable`` where the
    kernel cannot confine, ``ConfinementRefused`` for grants that would expose squad records
    or reach ``protected`` code."""
    scratch = make_scratch(temp_parent)  # named after this process: swept if it crashes
    try:
        private_agent_dir = confinement.agent_dir or seed_private_agent_directory(
            agent_directory(env), scratch
        )
        directories = [confinement.ledger_dir, confinement.project_dir, scratch]
        resolved = [os.path.realpath(d) for d in directories]
        if not _beneath(os.path.realpath(private_agent_dir), resolved):
            raise ValueError(f"the agent directory is not granted: {private_agent_dir!r}")
        problem = grant_problem(
            resolved,
            squad_root=os.path.realpath(confinement.squad_root),
            ledger_dir=os.path.realpath(confinement.ledger_dir),
            flavour="posix",
        ) or protected_path_problem(resolved, protected, flavour="posix")
        if problem is not None:
            raise ConfinementRefused(ErrorCode.ISOLATION_UNSAFE, problem)
        readable = _readable(confinement)
        # The squad root read-only in the child's mount namespace (where it has one) but for
        # its ledger: a child cannot chmod parent-owned records there, which Landlock allows.
        confined = isolation.confine(
            argv,
            writable=[*resolved, DEV_NULL],
            read_only=[os.path.realpath(confinement.squad_root)],
            readable=readable,
        )
    except BaseException:
        remove_scratch(scratch)
        raise
    return ConfinedLaunch(
        argv=confined,
        env={
            **env,
            "TMPDIR": scratch,
            "TMP": scratch,
            "TEMP": scratch,
            AGENT_DIR_ENV: private_agent_dir,
        },
        scratch_dir=scratch,
    )


def _readable(confinement: Confinement) -> list[str] | None:
    """The resolved read allowlist (``None``: reads unrestricted); ``ConfinementRefused`` when
    an entry holds the squad root, whose records (the grant, every session) the host reads."""
    if confinement.readable is None:
        return None
    root = os.path.realpath(confinement.squad_root)
    readable = list(dict.fromkeys(os.path.realpath(path) for path in confinement.readable))
    for path in readable:
        if _beneath(root, [path]):
            raise ConfinementRefused(
                ErrorCode.ISOLATION_UNSAFE,
                f"the worker's read allowlist holds {path!r}, which contains the squad root "
                f"{root!r}: export PI_SQUAD_ROOT=<a directory outside {path!r}> and run again",
            )
    return readable


def _beneath(path: str, directories: Sequence[str]) -> bool:
    return any(os.path.commonpath([path, directory]) == directory for directory in directories)


def seed_private_agent_directory(user_agent_dir: str, scratch: str) -> str:
    """``<scratch>/agent``: copies of the top-level regular files of ``user_agent_dir`` but
    ``NOT_COPIED``, and a link to its ``bin/``; every subdirectory that Pi loads code or prompts
    from is left out."""
    private = os.path.join(scratch, PRIVATE_AGENT_DIR_NAME)
    os.mkdir(private, mode=0o700)
    try:
        entries = list(os.scandir(user_agent_dir))
    except FileNotFoundError:
        return private
    for entry in entries:
        target = os.path.join(private, entry.name)
        if entry.name in NOT_COPIED:
            continue
        if entry.name == TOOLS_DIR_NAME and entry.is_dir():
            os.symlink(os.path.realpath(entry.path), target)
        elif entry.is_file():  # follows a link to a regular file, as Pi's own reads would
            shutil.copyfile(entry.path, target)
            os.chmod(target, 0o600)
    return private


def remove_scratch(path: str | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(path)


def refuse_project_holding_root(
    project_dir: str, squad_root: str, *, protected: Sequence[ProtectedPath] = ()
) -> None:
    """``ConfinementRefused`` when a squad run from ``project_dir`` could never confine a child
    (the project is, or contains, the squad root, or reaches ``protected`` code)."""
    project = [os.path.realpath(project_dir)]
    problem = grant_problem(
        project,
        squad_root=os.path.realpath(squad_root),
        ledger_dir=None,
        flavour="posix",
    ) or protected_path_problem(project, protected, flavour="posix")
    if problem is not None:
        raise ConfinementRefused(ErrorCode.ISOLATION_UNSAFE, f"nothing was published: {problem}")
