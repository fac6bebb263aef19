"""The ``bash-ro`` read-only command screen (pi-flows' in-child allowlist, flows-brief §6).

``screen(command)`` admits a bash command line only when every simple command in it is a
read-only inspection: git's inspection subcommands (``branch``/``tag``/``remote``/``reflog``
only in listing forms, no output-file, pager, external-diff or config flags), file inspectors
(``ls``, ``cat``, ``grep``, ``rg``, ``find`` without its actions that write or run, ``sed``
printing line ranges, ...), ``env`` without arguments, ``cd``, and the repository's tests
(``npm test``, ``npm run <script>``, ``node --test``). Anything else, an assignment prefix
(``VAR=x cmd``), and every construct ``shell_words`` refuses is blocked with the reason.

It is defence in depth, not the security boundary: where the runtime has Landlock the kernel
refuses every write anyway. Known residue when it stands alone (as in pi-flows): a
repository's own git configuration (``core.fsmonitor``, external diff or textconv drivers) and
the scripts ``npm test``/``npm run``/``node --test`` run are not screened, and git may
refresh its index's stat data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import attrs

from domain.flows.shell_words import DEV_NULL, ShellRefusal, Word, simple_commands

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")

INSPECTORS = frozenset(
    {
        "ls", "cat", "head", "tail", "wc", "grep", "rg", "stat", "file", "pwd", "du", "df",
        "diff", "sort", "uniq", "cut", "tr", "basename", "dirname", "realpath", "which",
        "echo", "printf", "date", "cd", "true",
    }
)  # fmt: skip
GIT_INSPECTION = frozenset(
    {
        "log", "diff", "show", "blame", "status", "rev-parse", "ls-files", "ls-tree",
        "merge-base", "shortlog", "describe", "cat-file", "grep", "name-rev", "branch", "tag",
        "remote", "reflog",
    }
)  # fmt: skip
_FIND_ACTIONS = ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fls", "-fprint")
_GIT_FORBIDDEN_LONG = ("--output", "--output-directory", "--ext-diff", "--open-files-in-pager")
_BRANCH_LISTING = frozenset(
    {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "-l", "--list",
     "--show-current", "--no-color", "--color", "--merged", "--no-merged", "--contains",
     "--no-contains", "--points-at", "-n"}
)  # fmt: skip
# ``sed`` only prints line ranges: ``N``, ``N,M``, ``$`` addresses with ``p``, ``d`` or ``q``.
_SED_RANGE = r"(?:[0-9]+|\$)(?:,(?:[0-9]+|\$))?[pdq]"
_SED_SCRIPT = re.compile(rf"^{_SED_RANGE}(?:;{_SED_RANGE})*\Z")
_DATE_VALUE_FLAGS = frozenset({"-d", "--date", "-r", "--reference", "-f", "--file"})
_SED_FLAGS = frozenset(
    {"-n", "--quiet", "--silent", "-E", "-r", "--regexp-extended", "-s", "-u", "-z"}
)


@attrs.frozen
class Verdict:
    """``admitted``, or blocked with ``reason`` (said to the model as the tool's refusal)."""

    admitted: bool
    reason: str = ""


ADMITTED = Verdict(True)


def screen(command: object) -> Verdict:
    """Whether ``command`` (a bash tool call's ``command``) is a read-only command line."""
    if not isinstance(command, str) or not command.strip():
        return _blocked("an empty or missing command")
    try:
        commands = simple_commands(command)
    except ShellRefusal as refusal:
        return _blocked(refusal.reason)
    for words in commands:
        problem = _command_problem(words)
        if problem is not None:
            return _blocked(problem)
    return ADMITTED


def _blocked(reason: str) -> Verdict:
    return Verdict(
        False,
        f"bash-ro: blocked, not a read-only command: {reason}. This agent's bash is read-only "
        "(inspection commands such as ls, cat, grep, rg, find, git log/diff/show/status); "
        "no file may be written, moved or deleted.",
    )


def _command_problem(words: Sequence[Word]) -> str | None:
    first = words[0]
    if not first.quoted and _ASSIGNMENT.match(first.text):
        return "an environment assignment prefix (`NAME=value command`)"
    name = first.text
    args = [word.text for word in words[1:]]
    check = _CHECKS.get(name)
    if check is not None:
        return check(args)
    if name in INSPECTORS:
        return None
    return f"`{name}` is not an admitted read-only command"


def _git(args: list[str]) -> str | None:
    if args[:1] == ["--no-pager"]:
        args = args[1:]
    if not args:
        return "`git` needs one of its inspection subcommands"
    sub, rest = args[0], args[1:]
    if sub not in GIT_INSPECTION:
        return f"`git {sub}` is not an admitted inspection subcommand"
    for arg in rest:
        if _long(arg, *_GIT_FORBIDDEN_LONG) or arg == "-o" or arg.startswith(("-O", "-c")):
            return f"`git {sub} {arg}` (an output file, pager, external diff or config flag)"
        if arg == "--":
            break
    if sub in ("branch", "tag"):
        return _listing(sub, rest)
    if sub == "remote" and rest not in ([], ["-v"], ["--verbose"]) and rest[:1] != ["get-url"]:
        return "`git remote` only lists (`git remote`, `-v`, `get-url`)"
    if (
        sub == "reflog"
        and rest
        and rest[0] not in ("show", "exists")
        and not rest[0].startswith("-")
    ):
        return "`git reflog` only shows (`git reflog`, `show`, `exists`)"
    return None


def _listing(sub: str, args: list[str]) -> str | None:
    """``git branch``/``git tag`` creating, deleting, moving or copying is refused: positional
    arguments only with ``--list``/``-l`` (patterns) or after a filter taking a commit."""
    listing = "--list" in args or "-l" in args
    previous = ""
    for arg in args:
        if arg.startswith("-"):
            name = arg.split("=", 1)[0]
            if name not in _BRANCH_LISTING and not name.startswith(("--sort", "--format")):
                return f"`git {sub} {arg}` is not a listing flag"
        elif not listing and previous not in ("--contains", "--no-contains", "--merged",
                                              "--no-merged", "--points-at", "-n"):  # fmt: skip
            return f"`git {sub} {arg}` would create or change a {sub}"
        previous = arg
    return None


def _long(arg: str, *forbidden: str) -> bool:
    """Whether ``arg`` is one of the ``forbidden`` long options, also as ``--name=value`` and
    as the unambiguous abbreviation GNU tools and git accept (``--out`` for ``--output``)."""
    name = arg.split("=", 1)[0]
    if not name.startswith("--") or len(name) <= 2:
        return False
    return any(option.startswith(name) or name.startswith(option) for option in forbidden)


def _short(arg: str, letter: str) -> bool:
    """Whether ``arg`` is a cluster of short options (``-rno``) holding ``letter``."""
    return arg.startswith("-") and not arg.startswith("--") and letter in arg[1:]


def _find(args: list[str]) -> str | None:
    for arg in args:
        if arg.startswith(_FIND_ACTIONS):
            return f"`find {arg}` (an action that deletes, runs a command or writes a file)"
    return None


def _sed(args: list[str]) -> str | None:
    scripts: list[str] = []
    expect_script = False
    for arg in args:
        if expect_script:
            scripts.append(arg)
            expect_script = False
        elif arg in ("-e", "--expression"):
            expect_script = True
        elif arg.startswith("-"):
            if arg not in _SED_FLAGS:
                return f"`sed {arg}` (only printing flags; never -i, -f or other options)"
        elif not scripts:
            scripts.append(arg)
    if expect_script or not scripts:
        return "`sed` without a script"
    for script in scripts:
        if not _SED_SCRIPT.match(script):
            return "`sed` only with line-range scripts such as '10,20p' or '5q'"
    return None


def _sort(args: list[str]) -> str | None:
    for arg in args:
        if _long(arg, "--output") or _short(arg, "o"):
            return "`sort -o`/`--output` writes a file"
        if _long(arg, "--compress-program"):
            return "`sort --compress-program` runs a program"
    return None


def _uniq(args: list[str]) -> str | None:
    paths = [arg for arg in args if not arg.startswith("-")]
    return "`uniq` with a second path writes it" if len(paths) > 1 else None


def _date(args: list[str]) -> str | None:
    previous = ""
    for arg in args:
        if _long(arg, "--set") or _short(arg, "s"):
            return "`date -s`/`--set` sets the clock"
        # The value of ``-d``/``-r``/``-f`` is a date or a file to read, not a new time.
        if not arg.startswith(("-", "+")) and previous not in _DATE_VALUE_FLAGS:
            return "`date` with a positional argument sets the clock"
        previous = arg
    return None


def _file(args: list[str]) -> str | None:
    for arg in args:
        if _long(arg, "--compile") or _short(arg, "C"):
            return "`file -C` writes a compiled magic file"
    return None


def _rg(args: list[str]) -> str | None:
    for arg in args:
        if _long(arg, "--pre", "--hostname-bin"):
            return "`rg --pre`/`--hostname-bin` runs a program"
    return None


def _env(args: list[str]) -> str | None:
    return "`env` only without arguments (it would run a command)" if args else None


def _npm(args: list[str]) -> str | None:
    if args == ["test"] or (len(args) == 2 and args[0] == "run" and not args[1].startswith("-")):
        return None
    return "`npm` only as `npm test` or `npm run <script>`"


def _node(args: list[str]) -> str | None:
    # Only test files after ``--test``: an option could evaluate code (``-e``) or write a
    # report file (``--test-reporter-destination``).
    if args[:1] == ["--test"] and not any(arg.startswith("-") for arg in args[1:]):
        return None
    return "`node` only as `node --test [test files]`"


def _tail(args: list[str]) -> str | None:
    # ``tail -f`` never ends on its own; the child's bash would wait out its timeout.
    for arg in args:
        if arg in ("-f", "-F", "--follow") or arg.startswith("--follow="):
            return "`tail -f` never ends"
    return None


_CHECKS: dict[str, Callable[[list[str]], str | None]] = {
    "git": _git,
    "find": _find,
    "sed": _sed,
    "sort": _sort,
    "uniq": _uniq,
    "date": _date,
    "file": _file,
    "rg": _rg,
    "env": _env,
    "npm": _npm,
    "node": _node,
    "tail": _tail,
}

__all__ = ["ADMITTED", "DEV_NULL", "GIT_INSPECTION", "INSPECTORS", "Verdict", "screen"]
