"""Read flow preset files (docs/flows.md) from the three places they live, never writing.

- bundled: ``adapters/catalogue/flow_presets/*.md``, shipped as package data;
- user:    ``<squad root>/flow-presets/*.md`` and pi-flows'
  ``<Pi agent directory>/flow-presets/*.md``;
- project: ``<cwd>/.pi/squad/flow-presets/*.md`` and pi-flows' ``<cwd>/.pi/flow-presets/*.md``.

The layout mirrors the agent definitions' (``adapters.catalogue.agent_files``). A file that cannot
be used
(not a regular file, over the size limit, not UTF-8, not a valid preset) becomes a problem
naming it; the others still load. Files are taken in sorted name order.
"""

from __future__ import annotations

import os
import stat

from adapters.catalogue.agent_files import CATALOGUE_OPEN_FLAGS
from domain.agents import AgentSource
from domain.flows.presets import (
    Preset,
    PresetCatalog,
    PresetFileInvalid,
    PresetProblem,
    parse_preset,
)

BUNDLED_PRESETS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flow_presets")
PRESET_SUFFIX = ".md"
MAX_PRESET_FILE_BYTES = 64 * 1024


def user_presets_dir(squad_root: str) -> str:
    return os.path.join(squad_root, "flow-presets")


def project_presets_dir(cwd: str) -> str:
    return os.path.join(cwd, ".pi", "squad", "flow-presets")


def pi_flows_presets_dirs(cwd: str, pi_agent_dir: str | None) -> list[tuple[str, AgentSource]]:
    """pi-flows' own preset directories: the user's in Pi's agent directory (when known) and
    the project's ``.pi/flow-presets``."""
    found = [(os.path.join(cwd, ".pi", "flow-presets"), AgentSource.PROJECT)]
    if pi_agent_dir is not None:
        found.insert(0, (os.path.join(pi_agent_dir, "flow-presets"), AgentSource.USER))
    return found


def _check_regular_and_small(status: os.stat_result) -> None:
    if not stat.S_ISREG(status.st_mode):
        raise PresetFileInvalid("not a regular file")
    if status.st_size > MAX_PRESET_FILE_BYTES:
        raise PresetFileInvalid(f"larger than the {MAX_PRESET_FILE_BYTES}-byte limit")


def _read(path: str) -> str:
    _check_regular_and_small(os.stat(path))
    with os.fdopen(os.open(path, CATALOGUE_OPEN_FLAGS), "rb") as handle:
        _check_regular_and_small(os.fstat(handle.fileno()))
        data = handle.read(MAX_PRESET_FILE_BYTES + 1)
    if len(data) > MAX_PRESET_FILE_BYTES:
        raise PresetFileInvalid(f"grew past the {MAX_PRESET_FILE_BYTES}-byte limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise PresetFileInvalid("not UTF-8") from None


def load_preset_directory(
    directory: str, source: AgentSource
) -> tuple[list[Preset], list[PresetProblem]]:
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(PRESET_SUFFIX))
    except FileNotFoundError:
        return [], []
    except OSError as error:
        return [], [PresetProblem(directory, f"cannot be listed: {error.strerror}", source)]
    presets: list[Preset] = []
    problems: list[PresetProblem] = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            presets.append(parse_preset(_read(path), source, path))
        except PresetFileInvalid as rejected:
            problems.append(PresetProblem(path, str(rejected), source))
        except OSError as error:
            problems.append(PresetProblem(path, f"cannot be read: {error.strerror}", source))
    return presets, problems


class FilePresetDirectory:
    """``PresetDirectory`` over the bundled, user and project preset directories."""

    def __init__(
        self,
        squad_root: str,
        bundled_dir: str = BUNDLED_PRESETS_DIR,
        *,
        pi_agent_dir: str | None = None,
    ) -> None:
        self._squad_root = squad_root
        self._bundled_dir = bundled_dir
        self._pi_agent_dir = pi_agent_dir

    def catalog(self, cwd: str) -> PresetCatalog:
        loaded: list[Preset] = []
        problems: list[PresetProblem] = []
        for directory, source in (
            (self._bundled_dir, AgentSource.BUNDLED),
            (user_presets_dir(self._squad_root), AgentSource.USER),
            (project_presets_dir(cwd), AgentSource.PROJECT),
            *pi_flows_presets_dirs(cwd, self._pi_agent_dir),
        ):
            found, rejected = load_preset_directory(directory, source)
            loaded += found
            problems += rejected
        return PresetCatalog(tuple(loaded), tuple(problems))
