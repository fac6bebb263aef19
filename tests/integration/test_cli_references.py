"""The command line takes a squad id prefix only one squad starts with, refuses an ambiguous
one, never expands a prefix for ``modify ... cancel``, and says its version."""

from __future__ import annotations

from pathlib import Path

from tests.builders import spec_document
from tests.integration.cli_support import Sandbox, create_in_process, run_cli


def two_squads(tmp_path: Path) -> tuple[Sandbox, str, str]:
    """Two squads of one spec: ``<slug>`` and ``<slug>-<suffix>``."""
    sandbox = Sandbox.create(tmp_path)
    spec = sandbox.write_spec(spec_document())
    first, second = (create_in_process(sandbox, spec) for _ in range(2))
    assert second.startswith(first + "-")
    return sandbox, first, second


def test_a_unique_prefix_names_its_squad_in_every_squad_command(tmp_path: Path) -> None:
    sandbox, first, second = two_squads(tmp_path)
    prefix = second[:-3]
    status = run_cli(sandbox, ["status", prefix, "--json"])
    assert status.returncode == 0, status.stderr
    assert status.json()["squadId"] == second
    verify = run_cli(sandbox, ["verify", prefix, "--json"])
    assert verify.json()["squadId"] == second
    # An exact id is itself, though it also starts the other squad's id.
    assert run_cli(sandbox, ["status", first, "--json"]).json()["squadId"] == first


def test_a_prefix_of_two_squads_is_ambiguous_and_names_both(tmp_path: Path) -> None:
    sandbox, first, second = two_squads(tmp_path)
    ids = [first, second]
    refused = run_cli(sandbox, ["status", first[:6], "--json"])
    assert refused.returncode != 0
    assert refused.error_code() == "SQUAD_AMBIGUOUS"
    message = refused.json()["error"]["message"]
    assert ids[0] in message
    assert ids[1] in message


def test_cancel_takes_only_the_exact_squad_id(tmp_path: Path) -> None:
    sandbox, _first, second = two_squads(tmp_path)
    refused = run_cli(sandbox, ["modify", second[:-3], "cancel", "--json"])
    assert refused.returncode != 0
    assert refused.error_code() == "SQUAD_NOT_FOUND"
    status = run_cli(sandbox, ["status", second, "--json"]).json()
    assert status["status"] != "cancelled", status


def test_version(tmp_path: Path) -> None:
    shown = run_cli(Sandbox.create(tmp_path), ["--version"])
    assert shown.returncode == 0
    assert shown.stdout.startswith("pi-squad ")
    assert "(Pi 0.80.10)" in shown.stdout
