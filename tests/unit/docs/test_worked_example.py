"""docs/delegation.md's worked example, read without running it (the run is
tests/integration/test_delegation_worked_example.py, real Pi): it walks the whole protocol in
a temporary state, every output it shows is JSON, and the comparison that keeps it honest
catches what drifts while passing over what the document leaves out with ``…``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.transcript import Step, mismatch, section, step_mismatch, steps

REPO = Path(__file__).resolve().parents[3]
HEADING = "## A worked example (offline)"


def example() -> list[Step]:
    return steps(section((REPO / "docs" / "delegation.md").read_text(encoding="utf-8"), HEADING))


def test_the_example_walks_the_protocol_in_order() -> None:
    operations = [
        word
        for step in example()
        for word in ("capture", "run", "work", "collect", "follow-up", "resolve")
        if f"pi-squad delegate {word}" in step.command
    ]
    assert operations == [
        "capture",
        "run",
        "work",
        "collect",
        "follow-up",
        "work",
        "collect",
        "resolve",
    ]


def test_the_example_never_touches_the_users_pi_or_state() -> None:
    commands = [step.command for step in example()]
    first_cli = next(i for i, command in enumerate(commands) if "pi-squad " in command)
    before = "\n".join(commands[:first_cli])
    assert "export PI_SQUAD_ROOT=$DEMO/" in before
    assert "PI_CODING_AGENT_DIR=$DEMO/" in before
    assert "DEMO=$(mktemp -d)" in before
    assert "~" not in "\n".join(commands)


def test_every_shown_output_is_json_and_the_model_is_stopped() -> None:
    found = example()
    assert all(step.output.strip() == "" or step.shown() is not None for step in found)
    assert found[-1].command == "kill $MODEL"


SHOWN = {"id": "b-…", "n": 1, "rows": [{"a": 1}, "…"], "nested": {"x": True, "…": "…"}}
PRINTED = {"id": "b-12ab", "n": 1, "rows": [{"a": 1}, {"a": 2}], "nested": {"x": True, "y": 0}}


def test_what_the_document_leaves_out_is_passed_over() -> None:
    assert mismatch(SHOWN, PRINTED) is None
    assert mismatch({"t": "…"}, {"t": {"any": ["value"]}}) is None


@pytest.mark.parametrize(
    ("printed", "where"),
    [
        ({**PRINTED, "n": 2}, "$.n"),
        ({**PRINTED, "n": True}, "$.n"),
        ({**PRINTED, "id": "j-12ab"}, "$.id"),
        ({**PRINTED, "rows": []}, "$.rows"),
        ({**PRINTED, "rows": [{"a": 3}]}, "$.rows[0].a"),
        ({**PRINTED, "nested": {"y": 0}}, "$.nested"),
        ({**PRINTED, "extra": 1}, "$:"),
        ({key: value for key, value in PRINTED.items() if key != "n"}, "$:"),
    ],
)
def test_what_drifts_is_named_by_its_path(printed: dict[str, Any], where: str) -> None:
    found = mismatch(SHOWN, printed)
    assert found is not None
    assert found.startswith(where)


def test_a_list_shown_whole_must_be_printed_whole() -> None:
    assert mismatch([1, 2], [1, 2, 3]) is not None
    assert mismatch([1, "…"], [1, 2, 3]) is None


def test_a_step_shown_silent_must_print_nothing_and_a_shown_one_json() -> None:
    assert step_mismatch(Step("cd x", ""), "") is None
    assert step_mismatch(Step("cd x", ""), "noise\n") is not None
    assert step_mismatch(Step("status", '{"op": "…"}'), "not json") is not None
    assert step_mismatch(Step("status", '{"op": "…"}'), '{"op": "status"}') is None
