"""List the published squads of a squad root (upstream ``listSquads``, pi-squad-upstream.md §2).

A squad is listed only when it is whole: a real directory (not a symlink) directly in the root,
named like a squad, holding a ``squad.json`` that decodes. Everything else in the root is
skipped without error: ``agents``, ``memory.jsonl``, staging directories (any name containing
``.creating.``), dot-names such as ``.staging-locks``, plain files, symlinks, and directories
whose ``squad.json`` is missing, unreadable, corrupt or names another squad. Because
publication renames a complete staging directory into place, a crash at any step leaves
nothing this function lists.

``unreadable_squad_ids`` names the skipped entries that are squads all the same: a directory
named like a squad whose ``squad.json`` is there but does not list. Only pi-squad writes that
file, whole, so it is a damaged squad, never a stranger's directory; a caller that would
otherwise answer "no squads" says so instead (fail closed).
"""

from __future__ import annotations

import attrs

from application.ports import FileSystem, SquadCodec, StableReadError
from domain import paths
from domain.squad.ids import squad_id_problem
from domain.squad.model import Squad

SQUAD_FILE = "squad.json"
MAX_SQUAD_FILE_BYTES = 4 * 1024 * 1024
# The root's own entries (upstream skips these by name).
IGNORED_NAMES = frozenset({"agents", "knowledge", "memory.jsonl"})
STAGING_MARKER = ".creating."


@attrs.frozen
class SquadListing:
    squad: Squad
    squad_dir: str

    @property
    def id(self) -> str:
        return self.squad.id


def is_candidate_name(name: str) -> bool:
    """Whether a root entry's name may be a published squad (before looking at it)."""
    return not (name in IGNORED_NAMES or name.startswith(".") or STAGING_MARKER in name)


def list_squads(fs: FileSystem, squad_root: str, codec: SquadCodec) -> list[SquadListing]:
    """The published squads under ``squad_root``, sorted by creation time, then ID.

    A missing root lists nothing. Reading never writes and never follows a symlink.
    """
    listed, _ = _scan(fs, squad_root, codec)
    return listed


def unreadable_squad_ids(fs: FileSystem, squad_root: str, codec: SquadCodec) -> list[str]:
    """Sorted: the entries ``list_squads`` skips although they are squads, named with a valid
    squad id and holding a ``squad.json`` that is unreadable, corrupt or names another squad."""
    _, unreadable = _scan(fs, squad_root, codec)
    return unreadable


def _scan(
    fs: FileSystem, squad_root: str, codec: SquadCodec
) -> tuple[list[SquadListing], list[str]]:
    listed: list[SquadListing] = []
    unreadable: list[str] = []
    for name in entry_names(fs, squad_root):
        if not is_candidate_name(name):
            continue
        try:
            squad_dir = paths.join_path(squad_root, name, flavour=fs.flavour)
        except ValueError:
            continue  # not one plain name for this flavour: nothing pi-squad published
        if not fs.is_dir(squad_dir):
            continue
        squad = read_squad_file(fs, squad_dir, codec)
        if squad is not None and squad.id == name:
            listed.append(SquadListing(squad=squad, squad_dir=squad_dir))
        elif squad_id_problem(name) is None and fs.exists(
            paths.join_path(squad_dir, SQUAD_FILE, flavour=fs.flavour)
        ):
            # A squad.json naming another squad is not a published squad here, but it is a
            # damaged one: only pi-squad writes that file.
            unreadable.append(name)
    listed.sort(key=lambda listing: (listing.squad.created, listing.squad.id))
    return listed, unreadable


def entry_names(fs: FileSystem, directory: str) -> list[str]:
    """The sorted entry names of ``directory``; a missing directory has none."""
    try:
        return fs.list_dir(directory)
    except FileNotFoundError:
        return []


def read_squad_file(fs: FileSystem, squad_dir: str, codec: SquadCodec) -> Squad | None:
    """The squad ``<squad_dir>/squad.json`` decodes to; ``None`` when that file is missing,
    unreadable or corrupt (or ``squad_dir`` is no usable path)."""
    try:
        squad_file = paths.join_path(squad_dir, SQUAD_FILE, flavour=fs.flavour)
        return codec.decode_squad(fs.read_small(squad_file, MAX_SQUAD_FILE_BYTES))
    except (OSError, StableReadError, ValueError):
        return None
