"""Read agent definition files from the three places they live, without ever writing.

- bundled: ``adapters/catalogue/agent_defaults/*.json``, shipped as package data;
- user:    ``<squad root>/agents/*.json`` (root from :func:`application.squad_root.squad_root`);
- project: ``<cwd>/.pi/squad/agents/*.json``.

A flow's catalog adds pi-flows' agent files to each layer: ``adapters/catalogue/flow_agents/*.md``
(bundled), ``<Pi agent directory>/flow-agents/*.md`` (``PI_CODING_AGENT_DIR``, else
``~/.pi/agent``) and ``<cwd>/.pi/flow-agents/*.md``; a squad's does not.

A ``.json`` file is the definition document itself; a ``.md`` file is pi-flows' form, front
matter and a prompt (``domain/agent_markdown.py``), read into the same document. Both are then
judged by the one schema. Within a layer the files are taken in path order, so of two
definitions of one name the first path wins and the other is a problem.

Upstream copies the bundled files into the user directory when it loads; this loader does not:
bundled definitions are read in place and user files only override them. Loading therefore
never creates, changes or removes anything.

Every file is judged on its own. A file that cannot be used (unreadable, not a regular file,
larger than :data:`MAX_AGENT_FILE_BYTES`, not strict JSON, unknown keys, wrong types, values
breaking a rule) becomes an :class:`~domain.agents.AgentFileProblem` naming the file and the
JSON path at fault; the other files still load. Files are taken in sorted name order so the
result never depends on the order a directory lists them.
"""

from __future__ import annotations

import functools
import os
import stat
from typing import TYPE_CHECKING, Any

import attrs

from domain.agent_markdown import MarkdownAgentInvalid, agent_document
from domain.agents import (
    AgentCatalog,
    AgentDefinition,
    AgentFileProblem,
    AgentSource,
    LoadedAgent,
    agent_name_rule,
)
from domain.input_errors import InputRejected
from domain.inputs import allowed_values, parse_input, type_phrase
from domain.spec.schema import describe, json_path
from domain.strict_json import JsonDecodeFailure, decode_json_object, describe_key, json_type_name

if TYPE_CHECKING:
    from jsonschema import ValidationError

BUNDLED_AGENTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent_defaults")
BUNDLED_FLOW_AGENTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flow_agents")
MAX_AGENT_FILE_BYTES = 1024 * 1024
AGENT_FILE_SUFFIX = ".json"
MARKDOWN_AGENT_SUFFIX = ".md"
AGENT_KEYS: tuple[str, ...] = tuple(field.name for field in attrs.fields(AgentDefinition))
# Keys a message may quote: the schema's own, plus upstream's settings key people put on agents
# by mistake. Any other key is file content and stays unquoted, as everywhere in the project.
_QUOTABLE_KEYS = frozenset({*AGENT_KEYS, "enabled"})

_READ_BLOCK = 64 * 1024
# How a catalogue file (an agent's or a preset's) is opened. O_NONBLOCK: if a FIFO replaces the
# file between the stat and the open, the open returns at once instead of waiting for a writer,
# and the fstat after it refuses the descriptor.
CATALOGUE_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def user_agents_dir(squad_root: str) -> str:
    return os.path.join(squad_root, "agents")


def project_agents_dir(cwd: str) -> str:
    return os.path.join(cwd, ".pi", "squad", "agents")


def user_flow_agents_dir(pi_agent_dir: str) -> str:
    return os.path.join(pi_agent_dir, "flow-agents")


def project_flow_agents_dir(cwd: str) -> str:
    return os.path.join(cwd, ".pi", "flow-agents")


@attrs.frozen
class AgentDirectoryLoad:
    """What one directory yielded: the definitions that loaded and the files that did not."""

    agents: tuple[LoadedAgent, ...] = ()
    problems: tuple[AgentFileProblem, ...] = ()


class AgentFileRejected(Exception):
    """Internal: why one file's bytes are not a usable definition. Never contains content."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- the one input path, with the agent files' own wording --------------------------------


def _describe_violation(error: ValidationError) -> list[str]:
    """One schema violation of an agent file, worded as agent file problems always were."""
    path = list(error.absolute_path)
    where = json_path(path)
    keyword = str(error.validator)
    value: Any = error.validator_value
    instance = error.instance
    if keyword == "additionalProperties" and isinstance(instance, dict):
        extra = sorted(key for key in instance if key not in AGENT_KEYS)
        unknown = ", ".join(describe_key(key, _QUOTABLE_KEYS) for key in extra)
        plural = "s" if len(extra) > 1 else ""
        hint = " (agents have no 'enabled' key: write \"disabled\": true to hide one)"
        return [
            f"{where}: unknown key{plural} {unknown}; the allowed keys are {', '.join(AGENT_KEYS)}"
            + (hint if "enabled" in extra else "")
        ]
    if keyword == "required" and isinstance(instance, dict):
        missing = [key for key in value if key not in instance]
        return [f"{json_path([*path, key])}: required key is missing" for key in missing]
    if keyword == "type":
        return [f"{where}: expected {type_phrase(error.schema)}, found {json_type_name(instance)}"]
    if keyword == "enum":
        return [f"{where}: must be {allowed_values(value)}"]
    if keyword == "pattern" and path == ["name"] and isinstance(instance, str):
        return [f"{where}: {agent_name_rule(instance)}"]
    return [describe(error)]


def _markdown_document(data: bytes) -> dict[str, Any]:
    try:
        return agent_document(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise AgentFileRejected("not UTF-8 text") from None
    except MarkdownAgentInvalid as exc:
        raise AgentFileRejected(f"not a valid agent file: {exc}") from None


def parse_agent_definition(data: bytes, suffix: str = AGENT_FILE_SUFFIX) -> AgentDefinition:
    """Strictly decode one file's bytes (JSON, or Markdown with front matter for ``.md``), then
    check and structure them through the one input path (``agent-definition.schema.json``), or
    raise :class:`AgentFileRejected`."""
    if suffix == MARKDOWN_AGENT_SUFFIX:
        document = _markdown_document(data)
    else:
        try:
            document = decode_json_object(data, vocabulary=_QUOTABLE_KEYS)
        except JsonDecodeFailure as exc:
            raise AgentFileRejected(f"not valid JSON: {exc.reason}") from None
    try:
        return parse_input(
            "agent-definition", document, AgentDefinition, describe=_describe_violation
        )
    except InputRejected as exc:
        reason = "; ".join(exc.problems)
        raise AgentFileRejected(f"not a valid agent definition: {reason}") from None


# --- files and directories ----------------------------------------------------------------


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def _check_regular_and_small(status: os.stat_result) -> None:
    if not stat.S_ISREG(status.st_mode):
        raise AgentFileRejected(f"not a regular file: it is {_file_kind(status.st_mode)}")
    if status.st_size > MAX_AGENT_FILE_BYTES:
        raise AgentFileRejected(
            f"{status.st_size} bytes is larger than the {MAX_AGENT_FILE_BYTES}-byte limit "
            "for an agent file; it was not read"
        )


def _read_agent_bytes(path: str) -> bytes:
    """All bytes of a regular file no larger than the limit, refusing anything else unread."""
    try:
        # stat, not lstat: a symlinked agent file is fine, but its target must be regular.
        _check_regular_and_small(os.stat(path))
        descriptor = os.open(path, CATALOGUE_OPEN_FLAGS)
    except FileNotFoundError:
        raise AgentFileRejected("vanished, or is a symlink whose target does not exist") from None
    except OSError as exc:
        raise AgentFileRejected(f"cannot be opened: {exc.strerror or type(exc).__name__}") from None
    blocks: list[bytes] = []
    try:
        # Checked again on the descriptor: the path may have been replaced since the stat.
        _check_regular_and_small(os.fstat(descriptor))
        remaining = MAX_AGENT_FILE_BYTES + 1
        while remaining > 0:
            block = os.read(descriptor, min(remaining, _READ_BLOCK))
            if not block:
                break
            blocks.append(block)
            remaining -= len(block)
    except OSError as exc:
        raise AgentFileRejected(f"cannot be read: {exc.strerror or type(exc).__name__}") from None
    finally:
        os.close(descriptor)
    data = b"".join(blocks)
    if len(data) > MAX_AGENT_FILE_BYTES:
        raise AgentFileRejected(
            f"grew past the {MAX_AGENT_FILE_BYTES}-byte limit for an agent file while it was read"
        )
    return data


_MEMO_AGENT_FILE_BYTES = 64 * 1024


@functools.lru_cache(maxsize=32)
def _parse_memo(data: bytes, suffix: str) -> AgentDefinition:
    return parse_agent_definition(data, suffix)


def _parsed(data: bytes, suffix: str) -> AgentDefinition:
    """``parse_agent_definition`` of ``data``, once per distinct content: the catalog is
    loaded on every spawn, and the same few files are read each time (their bytes always are,
    so an edited file is parsed afresh; a rejection is never kept)."""
    if len(data) <= _MEMO_AGENT_FILE_BYTES:
        return _parse_memo(data, suffix)
    return parse_agent_definition(data, suffix)


def load_agent_file(path: str, source: AgentSource) -> LoadedAgent | AgentFileProblem:
    try:
        definition = _parsed(_read_agent_bytes(path), os.path.splitext(path)[1])
    except AgentFileRejected as exc:
        return AgentFileProblem(origin=path, reason=exc.reason, source=source)
    return LoadedAgent(definition=definition, source=source, origin=path)


def _agent_file_names(directory: str, suffix: str) -> list[str]:
    with os.scandir(directory) as entries:
        return sorted(entry.name for entry in entries if entry.name.endswith(suffix))


def load_agent_directory(
    directory: str, source: AgentSource, suffix: str = AGENT_FILE_SUFFIX
) -> AgentDirectoryLoad:
    """Every ``*<suffix>`` directly inside ``directory``; a missing directory is simply empty."""
    try:
        names = _agent_file_names(directory, suffix)
    except FileNotFoundError:
        return AgentDirectoryLoad()
    except OSError as exc:
        reason = f"agent directory cannot be listed: {exc.strerror or type(exc).__name__}"
        return AgentDirectoryLoad(
            problems=(AgentFileProblem(origin=directory, reason=reason, source=source),)
        )
    agents: list[LoadedAgent] = []
    problems: list[AgentFileProblem] = []
    for name in names:
        loaded = load_agent_file(os.path.join(directory, name), source)
        if isinstance(loaded, AgentFileProblem):
            problems.append(loaded)
        else:
            agents.append(loaded)
    return AgentDirectoryLoad(agents=tuple(agents), problems=tuple(problems))


def _layer(*loads: AgentDirectoryLoad) -> AgentDirectoryLoad:
    """One source's directories as one layer, its definitions in path order."""
    agents = sorted((a for load in loads for a in load.agents), key=lambda a: a.origin)
    return AgentDirectoryLoad(tuple(agents), tuple(p for load in loads for p in load.problems))


def load_agent_catalog(
    *,
    squad_root: str,
    cwd: str,
    bundled_dir: str = BUNDLED_AGENTS_DIR,
    flow_agents: bool = False,
    pi_agent_dir: str | None = None,
    bundled_flow_dir: str = BUNDLED_FLOW_AGENTS_DIR,
) -> AgentCatalog:
    """Bundled, then user, then project definitions merged into one catalog (read-only).
    With ``flow_agents`` (a flow's catalog), pi-flows' agent files too: the bundled ones, the
    user's in ``pi_agent_dir`` (when given) and the project's."""
    md = MARKDOWN_AGENT_SUFFIX
    bundled = [load_agent_directory(bundled_dir, AgentSource.BUNDLED)]
    user = [load_agent_directory(user_agents_dir(squad_root), AgentSource.USER)]
    project = [load_agent_directory(project_agents_dir(cwd), AgentSource.PROJECT)]
    if flow_agents:
        bundled.append(load_agent_directory(bundled_flow_dir, AgentSource.BUNDLED, md))
        if pi_agent_dir is not None:
            flow_dir = user_flow_agents_dir(pi_agent_dir)
            user.append(load_agent_directory(flow_dir, AgentSource.USER, md))
        project_dir = project_flow_agents_dir(cwd)
        project.append(load_agent_directory(project_dir, AgentSource.PROJECT, md))
    layers = [_layer(*loads) for loads in (bundled, user, project)]
    return AgentCatalog.merge(
        *(layer.agents for layer in layers),
        problems=tuple(problem for layer in layers for problem in layer.problems),
    )


class FileAgentDirectory:
    """``AgentDirectory`` over the bundled, user and project definition files."""

    def __init__(
        self,
        squad_root: str,
        bundled_dir: str = BUNDLED_AGENTS_DIR,
        *,
        flow_agents: bool = False,
        pi_agent_dir: str | None = None,
    ) -> None:
        self._squad_root = squad_root
        self._bundled_dir = bundled_dir
        self._flow_agents = flow_agents
        self._pi_agent_dir = pi_agent_dir

    def catalog(self, cwd: str) -> AgentCatalog:
        return load_agent_catalog(
            squad_root=self._squad_root,
            cwd=cwd,
            bundled_dir=self._bundled_dir,
            flow_agents=self._flow_agents,
            pi_agent_dir=self._pi_agent_dir,
        )
