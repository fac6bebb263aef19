"""``pi-squad``: the command line. Every command accepts ``--json`` (one JSON object on stdout).

A command imports only what it uses: ``REGISTRARS`` names, for every command, the module that
registers it and the container it is given, and the parser is built from the one module the
command line names (all of them only for ``--help`` or an unknown command); ``--version``
builds none (the console script, ``entrypoints/launcher.py``, answers it before this module).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from domain.errors import ErrorCode, PiSquadError
from domain.squad.references import expand_squad_prefix
from entrypoints.output import EXIT_USAGE, emit_json, error_payload, run_reporting
from entrypoints.version import version_text

if TYPE_CHECKING:
    from application.ports import FileSystem
    from entrypoints.commands import AddCommand, Handler
    from entrypoints.container import CliContainer

DESCRIPTION = (
    "pi-squad: squads of Pi agents that provably read every byte of a hash-pinned spec. Every "
    "command accepts --json (one JSON object on stdout). A squad id may be shortened to any "
    "prefix only one squad starts with."
)
SQUAD_REFERENCE_FIELDS = ("squad_id", "squad")
FULL_CONTAINER = "entrypoints.container:CliContainer"
READING_CONTAINER = "entrypoints.reading_container:ReadingContainer"
BRIDGE = "bridge"
# ``pi-squad flow status`` and ``flow list`` read the recorded runs: no runner, no Pi.
FLOW_READS = ("status", "list")


class Registrar(NamedTuple):
    """``module:function`` registers ``commands`` (it is given ``add``); their handlers are
    given a ``container`` (``module:class``), built when the command runs, or the reading one
    for the ``reading_actions`` (the ``action`` argument) that only read records."""

    target: str
    commands: tuple[str, ...]
    container: str = FULL_CONTAINER
    reading_actions: tuple[str, ...] = ()


# In the order of `pi-squad --help`.
REGISTRARS = (
    Registrar("entrypoints.spec_commands:add_spec_commands", ("validate", "create")),
    Registrar("entrypoints.squad_reading:add_verify_command", ("verify",), READING_CONTAINER),
    Registrar("entrypoints.spec_commands:add_chunks_command", ("chunks",)),
    Registrar("entrypoints.squad_reading:add_status_command", ("status",), READING_CONTAINER),
    Registrar("entrypoints.cli_runtime:add_runtime_commands", ("modify", "review")),
    Registrar("entrypoints.run:add_run_commands", ("run", "doctor", "demo")),
    Registrar(
        "entrypoints.operator_commands:add_operator_commands",
        ("report", "watch", "extension-path"),
    ),
    Registrar("entrypoints.flow_command:add_flow_commands", ("flow",), reading_actions=FLOW_READS),
    Registrar("entrypoints.trace:add_trace_commands", ("trace",)),
    Registrar("entrypoints.delegate:add_delegate_commands", ("delegate",)),
)


class _Parser(argparse.ArgumentParser):
    """Usage errors exit 2; with ``--json`` anywhere on the line they are JSON too."""

    json_errors = False

    def error(self, message: str) -> NoReturn:
        if self.json_errors:
            emit_json(error_payload(ErrorCode.USAGE, f"{self.prog}: {message}"))
        else:
            # One line, like every other failure: what was wrong and where to look.
            sys.stderr.write(f"pi-squad: USAGE: {self.prog}: {message}; see {self.prog} --help\n")
        raise SystemExit(EXIT_USAGE)


class _JsonErrorsParser(_Parser):
    json_errors = True


def _load(target: str) -> Any:
    """``module:name``'s object, importing the module."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def commands_needed(arguments: Sequence[str]) -> frozenset[str] | None:
    """The commands the parser of ``arguments`` needs (``None``: all of them, for ``--help``,
    a usage error or an unknown command): the one named (the first word that is not an
    option: the top level has no option that takes a value), or none for ``--version``."""
    word = next((argument for argument in arguments if not argument.startswith("-")), None)
    if word is None:
        return frozenset() if list(arguments[:1]) == ["--version"] else None
    if word == BRIDGE or any(word in registrar.commands for registrar in REGISTRARS):
        return frozenset({word})
    return None


def cmd_bridge(args: argparse.Namespace, container: object) -> int:
    from entrypoints import bridge as bridge_entry  # noqa: PLC0415 - only `bridge` imports it

    return bridge_entry.run(args.role)


def _add_bridge(sub: Any) -> None:
    from entrypoints import bridge as bridge_entry  # noqa: PLC0415 - only `bridge` imports it

    bridge_help = "Serve the Pi extension shim over stdin/stdout (JSON lines, docs/bridge.md)."
    bridge = sub.add_parser(BRIDGE, help=bridge_help, description=bridge_help)
    bridge_entry.add_arguments(bridge)
    bridge.set_defaults(handler=cmd_bridge, json=False)


def build_parser(
    commands: frozenset[str] | None = None, *, json_errors: bool = False
) -> argparse.ArgumentParser:
    """The parser of every command, or of ``commands`` alone (importing only their modules)."""
    parser_class = _JsonErrorsParser if json_errors else _Parser
    parser = parser_class(prog="pi-squad", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True, parser_class=parser_class)

    def add(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        if commands is not None and name not in commands:
            return argparse.ArgumentParser(add_help=False)  # another command's: not parsed
        parsed = sub.add_parser(name, help=help_text, description=help_text)
        parsed.add_argument("--json", action="store_true", help="print one JSON object")
        parsed.set_defaults(handler=handler)
        return parsed

    for registrar in REGISTRARS:
        if commands is None or not commands.isdisjoint(registrar.commands):
            register: Callable[[AddCommand], None] = _load(registrar.target)
            register(add)
    if commands is None or BRIDGE in commands:
        _add_bridge(sub)
    return parser


def container_for(command: str, action: str | None = None) -> Any:
    """A new container of the kind ``command``'s handler is given for ``action`` (none for
    ``bridge``)."""
    registrar = next((r for r in REGISTRARS if command in r.commands), None)
    if registrar is None:
        return None
    reading = action is not None and action in registrar.reading_actions
    return _load(READING_CONTAINER if reading else registrar.container)()


def expand_squad_references(args: argparse.Namespace, container: CliContainer) -> None:
    """A unique prefix of a squad id stands for that squad (``SQUAD_AMBIGUOUS`` when several
    start with it); the actions a command marks ``exact_id_actions`` take only the exact id."""
    if getattr(args, "action", None) in getattr(args, "exact_id_actions", ()):
        return
    for field in SQUAD_REFERENCE_FIELDS:
        reference = getattr(args, field, None)
        if isinstance(reference, str) and not _names_a_squad(container, reference):
            ids = container.store().list_squad_ids()  # reads every squad record: only for prefixes
            setattr(args, field, expand_squad_prefix(reference, ids))


def _names_a_squad(container: CliContainer, reference: str) -> bool:
    """Whether ``reference`` is a published squad's exact id (its record exists)."""
    try:
        squad_file = container.store().layout(reference).squad_file
    except PiSquadError:
        return False  # not even a valid id: a prefix, or the store's own refusal later
    fs: FileSystem = container.fs()
    return fs.exists(squad_file)


def main(argv: Sequence[str] | None = None, container: CliContainer | None = None) -> int:
    """Run one command line; ``container`` (tests pass one) replaces the command's own."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(commands_needed(arguments), json_errors="--json" in arguments)
    args = parser.parse_args(arguments)
    handler: Handler = args.handler

    def run() -> int:
        action = getattr(args, "action", None)
        active = container if container is not None else container_for(args.command, action)
        expand_squad_references(args, active)
        return handler(args, active)

    return run_reporting(run, as_json=args.json)


if __name__ == "__main__":
    raise SystemExit(main())
