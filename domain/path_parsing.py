"""Parsing an absolute path of one flavour into its anchor and names: the lexical work behind
``domain.paths``, whose docstring states the rules implemented here.

Pure: it never asks the host, so Windows paths parse the same on Linux and the other way round.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

import attrs

PathFlavour = Literal["posix", "windows"]

WINDOWS_SEPARATORS = "\\/"
_DRIVE = re.compile(r"[A-Za-z]:")


@attrs.frozen
class Parsed:
    """An absolute path split into what compares as the root and the names beneath it.

    ``anchor`` is the spelling used to rebuild an access path; ``anchor_key`` is what two
    anchors compare by (plain and verbatim spellings of one root share it).
    """

    anchor: str
    anchor_key: str
    names: tuple[str, ...]


@attrs.frozen
class WindowsRelative:
    """A Windows path that is not absolute but can be resolved against a working directory."""

    kind: Literal["relative", "rooted", "drive_relative"]
    drive: str
    rest: str


def common_problem(path: str) -> str | None:
    if path == "":
        return "it is empty"
    if "\x00" in path:
        return "it contains a NUL character"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "it contains an unpaired surrogate"
    return None


def _posix_parse(path: str) -> Parsed | str:
    if not path.startswith("/"):
        return "it is relative; a POSIX absolute path starts with '/'"
    names = fold_dots([name for name in path.split("/") if name not in ("", ".")])
    return Parsed(anchor="/", anchor_key="/", names=names)


def fold_dots(names: list[str]) -> tuple[str, ...]:
    """Lexically fold ``..``; it cannot climb above the root, as on both systems."""
    folded: list[str] = []
    for name in names:
        if name == "..":
            if folded:
                folded.pop()
        else:
            folded.append(name)
    return tuple(folded)


def split_windows_names(rest: str) -> list[str]:
    return [name for name in re.split(r"[\\/]", rest) if name not in ("", ".")]


def windows_parse(path: str) -> Parsed | WindowsRelative | str:
    """Classify a Windows path: absolute (parsed), resolvable relative form, or a refusal."""
    if path.startswith("\\\\?\\"):
        return _windows_parse_verbatim(path[4:])
    if len(path) >= 2 and path[0] in WINDOWS_SEPARATORS and path[1] in WINDOWS_SEPARATORS:
        return _windows_parse_unc(path)
    if _DRIVE.match(path):
        drive, rest = path[:2], path[2:]
        if rest == "" or rest[0] not in WINDOWS_SEPARATORS:
            return WindowsRelative(kind="drive_relative", drive=drive, rest=rest)
        names = split_windows_names(rest)
        if any(":" in name for name in names):
            return "it contains ':' after the drive, which names an alternate data stream"
        return Parsed(
            anchor=drive + "\\",
            anchor_key=fold_windows(drive) + "\\",
            names=fold_dots(names),
        )
    if path[0] in WINDOWS_SEPARATORS:
        return WindowsRelative(kind="rooted", drive="", rest=path)
    return WindowsRelative(kind="relative", drive="", rest=path)


def _windows_parse_unc(path: str) -> Parsed | str:
    parts = re.split(r"[\\/]", path[2:], maxsplit=2)
    server = parts[0]
    share = parts[1] if len(parts) > 1 else ""
    if server in (".", "?"):
        return "it is a device-namespace path (\\\\.\\ or //?/), not a file path"
    if server == "" or share == "":
        return "it is a UNC path without both a server and a share (\\\\server\\share\\...)"
    rest = parts[2] if len(parts) > 2 else ""
    names = split_windows_names(rest)
    if any(":" in name for name in names):
        return "it contains ':' in a name, which names an alternate data stream"
    anchor = f"\\\\{server}\\{share}\\"
    return Parsed(anchor=anchor, anchor_key=fold_windows(anchor), names=fold_dots(names))


def _windows_parse_verbatim(tail: str) -> Parsed | str:
    if _DRIVE.match(tail):
        if tail[2:3] != "\\":
            return "it is a verbatim (\\\\?\\) drive without a root separator (the volume itself)"
        drive, rest = tail[:2], tail[3:]
        anchor, key = f"\\\\?\\{drive}\\", fold_windows(drive) + "\\"
    elif tail[:4].upper() == "UNC\\":
        parts = tail[4:].split("\\", 2)
        if len(parts) < 2 or parts[0] == "" or parts[1] == "":
            return "it is a verbatim UNC path without both a server and a share"
        rest = parts[2] if len(parts) > 2 else ""
        anchor = f"\\\\?\\{tail[:3]}\\{parts[0]}\\{parts[1]}\\"
        key = fold_windows(f"\\\\{parts[0]}\\{parts[1]}\\")
    else:
        return "it is a verbatim (\\\\?\\) path that names neither a drive nor a UNC share"
    names = rest.split("\\")
    if names and names[-1] == "":
        names.pop()  # one trailing separator is harmless
    if "/" in rest:
        return "it is a verbatim (\\\\?\\) path containing '/', which Windows does not translate"
    if any(name in ("", ".", "..") for name in names):
        return "it is a verbatim (\\\\?\\) path with an empty, '.' or '..' component"
    if any(":" in name for name in names):
        return "it contains ':' after the drive, which names an alternate data stream"
    return Parsed(anchor=anchor, anchor_key=key, names=tuple(names))


def fold_windows(text: str) -> str:
    """Upper-case one character at a time, like the NTFS upcase table (so ``ß`` stays ``ß``)."""
    return "".join(upper if len(upper := char.upper()) == 1 else char for char in text)


_WINDOWS_RELATIVE_REASONS = {
    "relative": "it is relative; use a drive-rooted (C:\\...) or UNC (\\\\server\\share\\...) path",
    "rooted": "it is rooted without a drive (\\... or /...); name the drive or UNC share",
    "drive_relative": "it is drive-relative (C:name); put a separator after the drive colon",
}


_MEMO_PATH_LENGTH = 4096
"""Paths up to this length are parsed once per process (the store and the file system adapter
parse the same few hundred record paths thousands of times); longer ones, which only a
child's tool arguments could bring, are never kept."""


def parse_absolute(path: str, flavour: PathFlavour) -> Parsed | str:
    if len(path) <= _MEMO_PATH_LENGTH:
        return _parse_memo(path, flavour)
    return _parse_absolute(path, flavour)


@functools.lru_cache(maxsize=4096)
def _parse_memo(path: str, flavour: PathFlavour) -> Parsed | str:
    return _parse_absolute(path, flavour)


def _parse_absolute(path: str, flavour: PathFlavour) -> Parsed | str:
    problem = common_problem(path)
    if problem is not None:
        return problem
    if flavour == "posix":
        return _posix_parse(path)
    parsed = windows_parse(path)
    if isinstance(parsed, WindowsRelative):
        return _WINDOWS_RELATIVE_REASONS[parsed.kind]
    return parsed
