"""Which write grants a confined child may have (docs/architecture.md, "Trust boundary").

Landlock grants rights on a directory and everything beneath it, so one grant on an ancestor
of the squad root (a project directory that holds the squad root, ``/tmp`` when the root lives
there, the home directory) would make every squad record writable again. Likewise a grant
beneath the squad root outside the task's own ledger directory would hand the child a sibling's
ledger or the parent's records. Pure: the caller resolves symbolic links first.
"""

from __future__ import annotations

from collections.abc import Sequence

from domain import paths
from domain.paths import PathFlavour


def _same(left: str, right: str, flavour: PathFlavour) -> bool:
    return paths.normalise_for_access(left, flavour) == paths.normalise_for_access(right, flavour)


def grant_problem(
    grants: Sequence[str], *, squad_root: str, ledger_dir: str | None, flavour: PathFlavour
) -> str | None:
    """Why ``grants`` (resolved absolute directories) would expose parent-owned records.
    ``ledger_dir`` is the one directory inside the squad root a grant may reach (``None``:
    none may, as for a project directory checked before any task exists)."""
    for grant in grants:
        if paths.absolute_path_problem(grant, flavour) is not None:
            return f"the write grant {grant!r} is not an absolute path"
        if _same(grant, squad_root, flavour) or paths.is_beneath(grant, squad_root, flavour):
            return (
                f"the write grant {grant} contains the squad root {squad_root}, so a child could "
                "rewrite every squad record; keep the squad root outside the project and the "
                "temporary directory, e.g. export PI_SQUAD_ROOT=$HOME/.pi/squad and run from "
                "a project directory that does not contain it"
            )
        inside_root = paths.is_beneath(squad_root, grant, flavour)
        own = ledger_dir is not None and (
            _same(grant, ledger_dir, flavour) or paths.is_beneath(ledger_dir, grant, flavour)
        )
        if inside_root and not own:
            return (
                f"the write grant {grant} lies inside the squad root {squad_root}"
                + (f" outside the task's own directory {ledger_dir}" if ledger_dir else "")
                + "; run the squad from a project directory outside the squad root"
            )
    return None


def isolation_statement(recorded: str | None) -> str:
    """What a squad's recorded isolation means for its proof, for status, verify and report."""
    if recorded == "landlock":
        return (
            "landlock: every child ran under kernel write isolation and could write only its "
            "own read ledger, its session, the project and its temporary directory; no child "
            "could write squad records"
        )
    if recorded == "none":
        return (
            "none: at least one child ran without kernel write isolation, so a child could have "
            "written squad records (task records, other tasks' ledgers, squad.json, the "
            "parent's observations); acceptance rests on the parent's observations, which such "
            "a child could also have rewritten"
        )
    return "not yet decided: no child has run"
