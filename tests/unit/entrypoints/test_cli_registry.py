"""The command line's table of commands (``entrypoints.cli.REGISTRARS``) says truly which module
registers each command: the parser built from one command's module alone parses that command
exactly as the parser of every command does, and ``--version`` names ``pyproject.toml``'s
version."""

from __future__ import annotations

import argparse
import importlib.metadata
import tomllib
from pathlib import Path

import pytest

from entrypoints import cli
from entrypoints.version import DISTRIBUTION, VERSION, version_text

REPO = Path(__file__).resolve().parents[3]
ALL_COMMANDS = [name for registrar in cli.REGISTRARS for name in registrar.commands] + [cli.BRIDGE]


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(actions) == 1
    choices: dict[str, argparse.ArgumentParser] = actions[0].choices
    return choices


def test_every_command_is_in_the_table_once_and_in_help_order() -> None:
    assert len(ALL_COMMANDS) == len(set(ALL_COMMANDS))
    assert list(subcommands(cli.build_parser())) == ALL_COMMANDS


@pytest.mark.parametrize("registrar", cli.REGISTRARS, ids=lambda r: r.target)
def test_a_registrar_registers_exactly_the_commands_the_table_gives_it(
    registrar: cli.Registrar,
) -> None:
    registered: list[str] = []

    def add(name: str, handler: object, help_text: str) -> argparse.ArgumentParser:
        registered.append(name)
        return argparse.ArgumentParser()

    module, _, function = registrar.target.partition(":")
    getattr(importlib.import_module(module), function)(add)
    assert tuple(registered) == registrar.commands


@pytest.mark.parametrize("command", ALL_COMMANDS)
def test_the_parser_of_one_command_is_that_commands_part_of_the_whole(command: str) -> None:
    alone = subcommands(cli.build_parser(frozenset({command})))
    assert list(alone) == [command]
    whole = subcommands(cli.build_parser())[command]
    assert alone[command].format_help() == whole.format_help()
    assert alone[command].get_default("handler") is whole.get_default("handler")


@pytest.mark.parametrize(
    ("arguments", "needed"),
    [
        (["--version"], frozenset()),
        (["status", "--json"], frozenset({"status"})),
        (["--json", "verify", "abc"], frozenset({"verify"})),
        (["bridge", "--role", "main"], frozenset({"bridge"})),
        (["--help"], None),
        ([], None),
        (["stauts"], None),  # a typo: the whole parser names every command it could be
        (["--version", "status"], frozenset({"status"})),
    ],
)
def test_the_commands_a_command_line_needs(
    arguments: list[str], needed: frozenset[str] | None
) -> None:
    assert cli.commands_needed(arguments) == needed


def test_a_reading_command_is_given_the_reading_container_and_the_rest_the_full_one() -> None:
    reading = {r.commands for r in cli.REGISTRARS if r.container == cli.READING_CONTAINER}
    assert reading == {("status",), ("verify",)}
    assert cli.container_for("status").declarative_parent.__name__ == "ReadingContainer"
    assert cli.container_for("modify").declarative_parent.__name__ == "CliContainer"
    assert cli.container_for(cli.BRIDGE) is None


def test_the_version_is_the_projects() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert (project["name"], project["version"]) == (DISTRIBUTION, VERSION)
    assert importlib.metadata.version(DISTRIBUTION) == VERSION
    assert version_text() == f"pi-squad {VERSION} (Pi 0.80.10)"
