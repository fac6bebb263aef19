"""Which write grants a confined child may have (docs/architecture.md, "Trust boundary").

Landlock grants rights on a directory and everything beneath it, so one grant on an ancestor
of the squad root (a project directory that holds the squad root, ``/tmp`` when the root lives
there, the home directory) would make every squad record writable again. Likewise a grant
beneath the squad root outside the task's own ledger directory would hand the child a sibling's
ledger or the parent's records. Nor may a grant reach code that runs outside the child's
control (``ProtectedPath``: the Python running pi-squad, pi-squad's own packages, the Pi
runtime, the bridge): a child that could rewrite it would run code in the next child before that
child is confined, and in the operator's own ``pi-squad``. Pure: the caller resolves symbolic
links first.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from domain import paths
from domain.isolation_level import layers_statement
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


@attrs.frozen
class ProtectedPath:
    """Code pi-squad or a child's start runs (a file, or a directory of code), which no write
    grant may reach. ``path``: resolved and absolute. ``what``: what it is, for the refusal
    (``"the Python interpreter running pi-squad"``). ``remedy``: the way out, said to the
    user."""

    path: str
    what: str
    remedy: str


def protected_path_problem(
    grants: Sequence[str], protected: Sequence[ProtectedPath], *, flavour: PathFlavour
) -> str | None:
    """Why one of ``grants`` (resolved absolute directories) would let a child rewrite code
    in ``protected``: the grant is the protected path, contains it, or lies inside it (a
    directory of code: anything written in it is code too). A relative grant is refused as
    such; a relative protected path matches nothing (the caller resolves them)."""
    for grant in grants:
        if paths.absolute_path_problem(grant, flavour) is not None:
            return f"the write grant {grant!r} is not an absolute path"
        for code in protected:
            if paths.same_path(grant, code.path, flavour) or paths.is_beneath(
                grant, code.path, flavour
            ):
                relation = "contains"
            elif paths.is_beneath(code.path, grant, flavour):
                relation = "lies inside"
            else:
                continue
            return (
                f"the write grant {grant} {relation} {code.what} ({code.path}), so a child "
                "could rewrite code that the next child's start or your own pi-squad runs; "
                f"{code.remedy}"
            )
    return None


def isolation_statement(recorded: str | None, layers: str | None = None) -> str:
    """What a squad's recorded isolation means for its proof, for status, verify and report:
    the mode's meaning, then the ``layers`` that held for every child
    (``domain.isolation_level``)."""
    layered = layers_statement(recorded, layers)
    suffix = "" if layered is None else f"; {layered}"
    if recorded == "landlock":
        return (
            "landlock: every child ran under kernel write isolation and could write only its "
            "own read ledger, its session, the project and its temporary directory; no child "
            "could write squad records" + suffix
        )
    if recorded == "none":
        return (
            "none: at least one child ran without kernel write isolation, so a child could have "
            "written squad records (task records, other tasks' ledgers, squad.json, the "
            "parent's observations); acceptance rests on the parent's observations, which such "
            "a child could also have rewritten" + suffix
        )
    return "not yet decided: no child has run"
