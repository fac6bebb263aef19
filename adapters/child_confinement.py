"""The write grants of one confined child, and its private temporary directory.

A confined child (``SpawnRequest.confinement``) may write beneath exactly:

- its task's ledger directory ``<squad>/<task>/`` (read ledger, ``session/``);
- the squad's project directory (the user's working tree: the work itself);
- a private temporary directory made for this child, exported as ``TMPDIR``;
- Pi's agent directory (``PI_CODING_AGENT_DIR``, default ``~/.pi/agent``): Pi's own state;
- the file ``/dev/null`` (Node opens it for ignored stdio; granting all of ``/dev`` to a root
  child would expose raw disks).

Every grant is resolved (symbolic links followed, as the kernel does when the rule is added)
and checked by :func:`domain.isolation.grant_problem`: none may contain the squad root or lie
inside it outside the task's ledger directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence

import attrs

from application.ports import ChildIsolation, Confinement
from domain.errors import ErrorCode, PiSquadError
from domain.isolation import grant_problem

DEV_NULL = "/dev/null"


class ConfinementRefused(PiSquadError):
    family_codes = frozenset({ErrorCode.ISOLATION_UNSAFE})


@attrs.frozen
class ConfinedLaunch:
    argv: list[str]
    env: dict[str, str]
    scratch_dir: str


def agent_directory(env: Mapping[str, str]) -> str:
    configured = env.get("PI_CODING_AGENT_DIR")
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
) -> ConfinedLaunch:
    """argv and environment that start ``argv`` confined; the caller removes ``scratch_dir``
    (:func:`remove_scratch`) when the child is gone. Raises ``IsolationUnavailable`` where the
    kernel cannot confine, ``ConfinementRefused`` for grants that would expose squad records."""
    agent_dir = agent_directory(env)
    os.makedirs(agent_dir, mode=0o700, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="pi-squad-child-", dir=temp_parent)
    try:
        directories = [
            confinement.ledger_dir,
            confinement.project_dir,
            scratch,
            agent_dir,
        ]
        resolved = [os.path.realpath(d) for d in directories]
        problem = grant_problem(
            resolved,
            squad_root=os.path.realpath(confinement.squad_root),
            ledger_dir=os.path.realpath(confinement.ledger_dir),
            flavour="posix",
        )
        if problem is not None:
            raise ConfinementRefused(ErrorCode.ISOLATION_UNSAFE, problem)
        confined = isolation.confine(argv, writable=[*resolved, DEV_NULL])
    except BaseException:
        remove_scratch(scratch)
        raise
    return ConfinedLaunch(
        argv=confined,
        env={**env, "TMPDIR": scratch, "TMP": scratch, "TEMP": scratch},
        scratch_dir=scratch,
    )


def remove_scratch(path: str | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(path)


def refuse_project_holding_root(project_dir: str, squad_root: str) -> None:
    """``ConfinementRefused`` when a squad run from ``project_dir`` could never confine a child
    (the project is, or contains, the squad root)."""
    problem = grant_problem(
        [os.path.realpath(project_dir)],
        squad_root=os.path.realpath(squad_root),
        ledger_dir=None,
        flavour="posix",
    )
    if problem is not None:
        raise ConfinementRefused(ErrorCode.ISOLATION_UNSAFE, f"nothing was published: {problem}")
