"""Read agent definition files from the three places they live, without ever writing.

- bundled: ``adapters/agent_defaults/*.json``, shipped as package data;
- user:    ``<squad root>/agents/*.json`` (root from :func:`application.squad_root.squad_root`);
- project: ``<cwd>/.pi/squad/agents/*.json``.

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

import os
import stat
from typing import Any

import attrs
import cattrs
from cattrs.errors import ForbiddenExtraKeysError

from domain.agents import (
    AgentCatalog,
    AgentDefinition,
    AgentFileProblem,
    AgentSource,
    InvalidAgentField,
    LoadedAgent,
)
from domain.strict_json import JsonDecodeFailure, decode_json_object, describe_key, json_type_name

BUNDLED_AGENTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent_defaults")
MAX_AGENT_FILE_BYTES = 1024 * 1024
AGENT_FILE_SUFFIX = ".json"
AGENT_KEYS: tuple[str, ...] = tuple(field.name for field in attrs.fields(AgentDefinition))
# Keys a message may quote: the schema's own, plus upstream's settings key people put on agents
# by mistake. Any other key is file content and stays unquoted, as everywhere in the project.
_QUOTABLE_KEYS = frozenset({*AGENT_KEYS, "enabled"})

_READ_BLOCK = 64 * 1024
# O_NONBLOCK: if a FIFO replaces the file between the stat and the open, the open returns at
# once instead of waiting for a writer, and the fstat after it refuses the descriptor.
_OPEN_FLAGS = (
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


# --- strict structuring -------------------------------------------------------------------


class _WrongJsonType(TypeError):
    def __init__(self, expected: str, found: Any) -> None:
        super().__init__(f"expected {expected}, found {json_type_name(found)}")


def _structure_string(value: Any, _type: Any) -> str:
    # cattrs' default hook calls str() on anything, turning 5 into "5"; JSON types are exact.
    if not isinstance(value, str):
        raise _WrongJsonType("a string", value)
    return value


def _structure_boolean(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise _WrongJsonType("a boolean", value)
    return value


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    converter.register_structure_hook(str, _structure_string)
    converter.register_structure_hook(bool, _structure_boolean)
    # The default tuple hook accepts any iterable, so "abc" would become ("a", "b", "c").
    # Check for a JSON array first, then let the default hook structure (and index) the items.
    structure_items = converter.get_structure_hook(tuple[str, ...])

    def structure_string_array(value: Any, type_: Any) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise _WrongJsonType("an array of strings", value)
        items: tuple[str, ...] = structure_items(value, type_)
        return items

    converter.register_structure_hook_func(
        lambda type_: type_ == tuple[str, ...], structure_string_array
    )

    # The nullable fields say "or null" when they reject a value.
    def structure_optional_string(value: Any, _type: Any) -> str | None:
        if value is not None and not isinstance(value, str):
            raise _WrongJsonType("a string or null", value)
        return value

    def structure_optional_string_array(value: Any, type_: Any) -> tuple[str, ...] | None:
        if value is None:
            return None
        if not isinstance(value, list):
            raise _WrongJsonType("an array of strings or null", value)
        return structure_string_array(value, tuple[str, ...])

    converter.register_structure_hook_func(
        lambda type_: type_ == (str | None), structure_optional_string
    )
    converter.register_structure_hook_func(
        lambda type_: type_ == (tuple[str, ...] | None), structure_optional_string_array
    )
    return converter


_CONVERTER = _make_converter()


def _describe_exception(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, _WrongJsonType):
        return str(exc)
    if isinstance(exc, ForbiddenExtraKeysError):
        unknown = ", ".join(describe_key(key, _QUOTABLE_KEYS) for key in sorted(exc.extra_fields))
        plural = "s" if len(exc.extra_fields) > 1 else ""
        hint = " (agents have no 'enabled' key: write \"disabled\": true to hide one)"
        return f"unknown key{plural} {unknown}; the allowed keys are {', '.join(AGENT_KEYS)}" + (
            hint if "enabled" in exc.extra_fields else ""
        )
    if isinstance(exc, KeyError):
        return "required key is missing"
    return cattrs.v.format_exception(exc, type_)


def _structure_failure_messages(exc: cattrs.ClassValidationError) -> list[str]:
    """``$.path: what is wrong`` for each failure, in field order."""
    located: list[str] = []
    with_notes, without_notes = exc.group_exceptions()
    for sub, note in with_notes:
        located.extend(cattrs.transform_error(sub, f"$.{note.name}", _describe_exception))
    for sub in without_notes:
        # A validator of the domain value failed in its constructor: cattrs cannot place it,
        # but the exception names its field.
        if isinstance(sub, InvalidAgentField):
            located.append(f"{sub.detail} @ $.{sub.field}")
        else:
            located.extend(cattrs.transform_error(sub, "$", _describe_exception))
    messages = []
    for line in located:
        description, _, path = line.rpartition(" @ ")
        messages.append(f"{path}: {description}")
    return messages


def parse_agent_definition(data: bytes) -> AgentDefinition:
    """Strictly decode and structure one file's bytes, or raise :class:`AgentFileRejected`."""
    try:
        document = decode_json_object(data, vocabulary=_QUOTABLE_KEYS)
    except JsonDecodeFailure as exc:
        raise AgentFileRejected(f"not valid JSON: {exc.reason}") from None
    try:
        return _CONVERTER.structure(document, AgentDefinition)
    except cattrs.ClassValidationError as exc:
        messages = _structure_failure_messages(exc)
        raise AgentFileRejected(f"not a valid agent definition: {'; '.join(messages)}") from None


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
        descriptor = os.open(path, _OPEN_FLAGS)
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


def load_agent_file(path: str, source: AgentSource) -> LoadedAgent | AgentFileProblem:
    try:
        definition = parse_agent_definition(_read_agent_bytes(path))
    except AgentFileRejected as exc:
        return AgentFileProblem(origin=path, reason=exc.reason, source=source)
    return LoadedAgent(definition=definition, source=source, origin=path)


def _agent_file_names(directory: str) -> list[str]:
    with os.scandir(directory) as entries:
        return sorted(entry.name for entry in entries if entry.name.endswith(AGENT_FILE_SUFFIX))


def load_agent_directory(directory: str, source: AgentSource) -> AgentDirectoryLoad:
    """Every ``*.json`` directly inside ``directory``; a missing directory is simply empty."""
    try:
        names = _agent_file_names(directory)
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


def load_agent_catalog(
    *, squad_root: str, cwd: str, bundled_dir: str = BUNDLED_AGENTS_DIR
) -> AgentCatalog:
    """Bundled, then user, then project definitions merged into one catalog (read-only)."""
    bundled = load_agent_directory(bundled_dir, AgentSource.BUNDLED)
    user = load_agent_directory(user_agents_dir(squad_root), AgentSource.USER)
    project = load_agent_directory(project_agents_dir(cwd), AgentSource.PROJECT)
    return AgentCatalog.merge(
        bundled.agents,
        user.agents,
        project.agents,
        problems=bundled.problems + user.problems + project.problems,
    )


class FileAgentDirectory:
    """``AgentDirectory`` over the bundled, user and project definition files."""

    def __init__(self, squad_root: str, bundled_dir: str = BUNDLED_AGENTS_DIR) -> None:
        self._squad_root = squad_root
        self._bundled_dir = bundled_dir

    def catalog(self, cwd: str) -> AgentCatalog:
        return load_agent_catalog(
            squad_root=self._squad_root, cwd=cwd, bundled_dir=self._bundled_dir
        )
