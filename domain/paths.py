"""Native absolute-path rules for one flavour (``posix`` or ``windows``), as pure functions.

Nothing here touches the host: the host's ``os.path`` would apply the wrong rules when, say,
Windows paths are checked on Linux. Both flavours are parsed by hand so the rules are the same
on every host and are written down in one place.

Exact path strings are preserved by the callers (they are part of the canonical spec bytes).
The normalised forms computed here are lexical and exist only to access and compare:
``..`` is folded without consulting the filesystem, as Node's ``path.normalize`` does.

POSIX rules
    Absolute means a leading ``/``. Repeated slashes collapse to one (Linux treats ``//x`` as
    ``/x``). ``..`` at the root stays at the root. Comparisons are case-sensitive, which fails
    closed on case-insensitive volumes (a differently cased path is "not beneath").

Windows rules
    Accepted absolute forms, with ``\\`` or ``/`` as separators:

    * drive-rooted ``C:\\x`` or ``C:/x``;
    * UNC ``\\\\server\\share\\x`` (server and share both non-empty);
    * verbatim (extended-length) ``\\\\?\\C:\\x`` and ``\\\\?\\UNC\\server\\share\\x``. They are
      accepted because the 32,768-byte artifact-path limit exceeds ``MAX_PATH`` and this is how
      Windows spells long paths. Windows does not normalise them, so they are taken exactly:
      only ``\\`` separates, and ``/``, empty, ``.`` and ``..`` components are refused rather
      than guessed at.

    Refused: drive-relative ``C:foo`` and ``C:`` (they depend on a per-drive working directory),
    rooted-without-drive ``\\foo`` and ``/foo``, device namespace ``\\\\.\\...``, any other
    ``\\\\?\\`` form (volume GUIDs, ``GLOBALROOT``), ``//?/`` spellings, a UNC path without a
    share, and ``:`` after the drive (it would name an alternate data stream, not the file).
    Comparisons fold case one character at a time, as NTFS does by default, and treat a verbatim
    anchor as the same place as its plain spelling. Trailing dots and spaces, which Win32 strips
    from names, are not emulated: pi-squad builds its destinations from validated IDs that
    contain neither.

Both flavours refuse the empty string, NUL and unpaired surrogates (a path that cannot be
encoded cannot be opened, and might map to a different byte string than the spec holds).
"""

from __future__ import annotations

import functools
import re

import attrs

from domain.errors import ArtifactError, ErrorCode, SpecError
from domain.path_parsing import (
    WINDOWS_SEPARATORS,
    Parsed,
    PathFlavour,
    common_problem,
    fold_dots,
    fold_windows,
    parse_absolute,
    split_windows_names,
    windows_parse,
)

# Re-exported: every caller of these rules names the flavour from here.
__all__ = [
    "CANONICAL_DIR",
    "CANONICAL_NAME",
    "PathFlavour",
    "PathRuleError",
    "absolute_path_problem",
    "canonical_spec_path",
    "check_artifact_path",
    "is_beneath",
    "is_immediate_child",
    "is_native_absolute",
    "join_path",
    "normalise_for_access",
    "resolve_against",
    "same_path",
]

# IDs are echoed only when they match the artifact ID pattern of the schema (contract §3).
_ARTIFACT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@attrs.define
class PathRuleError(ValueError):
    """A path refused by a rule here. ``reason`` names the rule and never quotes the path."""

    reason: str


def absolute_path_problem(path: str, flavour: PathFlavour) -> str | None:
    """Why ``path`` is not a native absolute path of ``flavour``; ``None`` when it is one.

    The reason is written for a person and never quotes the path.
    """
    parsed = parse_absolute(path, flavour)
    return parsed if isinstance(parsed, str) else None


def is_native_absolute(path: str, flavour: PathFlavour) -> bool:
    return absolute_path_problem(path, flavour) is None


def check_artifact_path(path: str, flavour: PathFlavour, *, artifact_id: str | None = None) -> None:
    """Raise ``ArtifactError(ARTIFACT_PATH_INVALID)`` unless ``path`` is native absolute.

    The message names the artifact (only if its ID matches the schema pattern), the path's
    UTF-8 length and the rule broken; the path itself is left out.
    """
    problem = absolute_path_problem(path, flavour)
    if problem is None:
        return
    subject = (
        f'artifact "{artifact_id}" path'
        if artifact_id is not None and _ARTIFACT_ID.fullmatch(artifact_id)
        else "artifact path"
    )
    length = len(path.encode("utf-8", "surrogatepass"))
    raise ArtifactError(
        ErrorCode.ARTIFACT_PATH_INVALID,
        f"{subject} ({length} UTF-8 bytes) is not an absolute {flavour} path: {problem}",
    )


def _render(parsed: Parsed, flavour: PathFlavour) -> str:
    separator = "/" if flavour == "posix" else "\\"
    return parsed.anchor + separator.join(parsed.names)


def _require_absolute(path: str, flavour: PathFlavour) -> Parsed:
    parsed = parse_absolute(path, flavour)
    if isinstance(parsed, str):
        raise PathRuleError(parsed)
    return parsed


def normalise_for_access(path: str, flavour: PathFlavour) -> str:
    """The lexically normalised spelling of an absolute path, for opening and comparing only.

    Separators become the flavour's own, repeats and ``.`` vanish, ``..`` folds, no trailing
    separator remains except on a root. Verbatim Windows paths come back unchanged apart from a
    trailing separator. Raises ``PathRuleError`` if ``path`` is not native absolute.
    """
    return _render(_require_absolute(path, flavour), flavour)


def resolve_against(cwd: str, path: str, flavour: PathFlavour) -> str:
    """Resolve a user-supplied path (the ``specFile``) against an absolute working directory.

    An absolute ``path`` ignores ``cwd``. On Windows a rooted ``\\x`` takes the drive or share
    of ``cwd`` and a drive-relative ``C:x`` is accepted only when ``cwd`` is on that same drive
    (any other drive's working directory is process state this function cannot know). The
    result is normalised for access. Raises ``SpecError(SPEC_MALFORMED)`` naming the rule and
    the path's UTF-8 length, never the path.
    """
    try:
        return _resolve(cwd, path, flavour)
    except PathRuleError as error:
        length = len(path.encode("utf-8", "surrogatepass"))
        raise SpecError(
            ErrorCode.SPEC_MALFORMED,
            f"specFile ({length} UTF-8 bytes) cannot be resolved: {error.reason}",
        ) from None


def _resolve(cwd: str, path: str, flavour: PathFlavour) -> str:
    problem = common_problem(path)
    if problem is not None:
        raise PathRuleError(problem)
    if flavour == "posix":
        if path.startswith("/"):
            return normalise_for_access(path, flavour)
        base = _require_cwd(cwd, flavour)
        names = [*base.names, *(name for name in path.split("/") if name not in ("", "."))]
        return _render(attrs.evolve(base, names=fold_dots(names)), flavour)
    parsed = windows_parse(path)
    if isinstance(parsed, str):
        raise PathRuleError(parsed)
    if isinstance(parsed, Parsed):
        return _render(parsed, flavour)
    base = _require_cwd(cwd, flavour)
    relative_names = split_windows_names(parsed.rest)
    if parsed.kind == "rooted":
        names = relative_names
    elif parsed.kind == "drive_relative" and base.anchor_key != fold_windows(parsed.drive) + "\\":
        raise PathRuleError(
            "it is drive-relative (C:name) on a drive other than the working directory's"
        )
    else:
        names = [*base.names, *relative_names]
    # The joined result must pass the absolute rules it will be opened under (no ':' streams,
    # and the stricter verbatim rules when the working directory is verbatim).
    return normalise_for_access(
        _render(attrs.evolve(base, names=fold_dots(names)), flavour), flavour
    )


def _require_cwd(cwd: str, flavour: PathFlavour) -> Parsed:
    parsed = parse_absolute(cwd, flavour)
    if isinstance(parsed, str):
        raise PathRuleError(f"the working directory is unusable: {parsed}")
    return parsed


def join_path(base: str, *names: str, flavour: PathFlavour) -> str:
    """Append single names to an absolute ``base`` with the flavour's separator.

    Each name must be one plain component (non-empty, no separator, not ``.`` or ``..``, no
    NUL), so a built destination cannot leave ``base``. ``base`` keeps its exact spelling.
    """
    if len(base) + len("".join(names)) <= _MEMO_JOIN_LENGTH:
        return _join_memo(base, names, flavour)  # a refusal raises and is not kept
    return _join_path(base, names, flavour)


_MEMO_JOIN_LENGTH = 4096


@functools.lru_cache(maxsize=4096)
def _join_memo(base: str, names: tuple[str, ...], flavour: PathFlavour) -> str:
    """The store builds the same record paths thousands of times per squad run."""
    return _join_path(base, names, flavour)


def _join_path(base: str, names: tuple[str, ...], flavour: PathFlavour) -> str:
    _require_absolute(base, flavour)
    separators = "/" if flavour == "posix" else WINDOWS_SEPARATORS
    for name in names:
        problem = common_problem(name)
        if problem is None and (name in (".", "..") or any(s in name for s in separators)):
            problem = "it is not a single plain name ('.', '..' or a separator)"
        if problem is None and flavour == "windows" and ":" in name:
            problem = "it contains ':', which names an alternate data stream"
        if problem is not None:
            raise PathRuleError(f"a name to join is unusable: {problem}")
    separator = "/" if flavour == "posix" else "\\"
    joined = base
    for name in names:
        joined = joined + name if joined[-1] in separators else joined + separator + name
    return joined


def _comparison_key(path: str, flavour: PathFlavour) -> tuple[str, tuple[str, ...]] | None:
    parsed = parse_absolute(path, flavour)
    if isinstance(parsed, str):
        return None
    if flavour == "posix":
        return parsed.anchor_key, parsed.names
    return parsed.anchor_key, tuple(fold_windows(name) for name in parsed.names)


def is_immediate_child(root: str, candidate: str, flavour: PathFlavour) -> bool:
    """True when ``candidate`` normalises to exactly one name directly inside ``root``.

    Both must be native absolute (otherwise ``False``: the destination check fails closed).
    """
    root_key = _comparison_key(root, flavour)
    candidate_key = _comparison_key(candidate, flavour)
    if root_key is None or candidate_key is None:
        return False
    return (
        root_key[0] == candidate_key[0]
        and len(candidate_key[1]) == len(root_key[1]) + 1
        and candidate_key[1][:-1] == root_key[1]
    )


def is_beneath(directory: str, candidate: str, flavour: PathFlavour) -> bool:
    """True when ``candidate`` normalises to a proper descendant of ``directory``.

    The directory itself is not beneath itself. Both must be native absolute (otherwise
    ``False``).
    """
    directory_key = _comparison_key(directory, flavour)
    candidate_key = _comparison_key(candidate, flavour)
    if directory_key is None or candidate_key is None:
        return False
    depth = len(directory_key[1])
    return (
        directory_key[0] == candidate_key[0]
        and len(candidate_key[1]) > depth
        and candidate_key[1][:depth] == directory_key[1]
    )


# Where a file squad's canonical spec lives: exactly ``<squad-dir>/spec/spec.v1.json``.
CANONICAL_DIR = "spec"
CANONICAL_NAME = "spec.v1.json"


def same_path(first: str, second: str, flavour: PathFlavour) -> bool:
    """True when both normalise to the same absolute path (case-folded on Windows).

    Either not native absolute: ``False`` (fails closed).
    """
    first_key = _comparison_key(first, flavour)
    return first_key is not None and first_key == _comparison_key(second, flavour)


def canonical_spec_path(squad_dir: str, flavour: PathFlavour) -> str:
    """The only place a squad's canonical spec may be: ``<squad-dir>/spec/spec.v1.json``."""
    return join_path(squad_dir, CANONICAL_DIR, CANONICAL_NAME, flavour=flavour)
