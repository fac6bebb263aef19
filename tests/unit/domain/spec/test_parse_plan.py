"""Contract §4, ``parse_spec``: every plan error (ids, dependencies, agents, artifacts,
reserved task ids) reported at once, and the style rules that only warn."""

from __future__ import annotations

import pytest

from domain.errors import ErrorCode
from tests.builders import encode, spec_document, task
from tests.fakes.agents import FakeAgentLookup
from tests.unit.domain.spec.spec_parsing import parse, plan_rejection, rejection


def test_duplicate_task_ids_are_a_plan_error() -> None:
    message = plan_rejection(spec_document(tasks=[task("a"), task("a")]))
    assert "duplicate task id 'a'" in message


def test_duplicate_artifact_ids_are_a_plan_error() -> None:
    entry = {"id": "a", "path": "/x", "sha256": "0" * 64, "bytes": 0, "purpose": "x"}
    assert "duplicate artifact id 'a'" in plan_rejection(spec_document(artifacts=[entry, entry]))


@pytest.mark.parametrize("reserved", ["spec", "session", "knowledge"])
def test_task_id_that_would_shadow_a_squad_directory_entry_is_a_plan_error(reserved: str) -> None:
    message = plan_rejection(spec_document(tasks=[task(reserved)]))
    assert f"'{reserved}' is reserved" in message


def test_unknown_dependency_is_a_plan_error() -> None:
    message = plan_rejection(spec_document(tasks=[task("a"), task("b", depends=["zz"])]))
    assert "unknown task 'zz'" in message


def test_self_dependency_is_a_plan_error() -> None:
    message = plan_rejection(spec_document(tasks=[task("a"), task("b", depends=["b"])]))
    assert "'b' depends on itself" in message
    assert "cycle" not in message


def test_cycle_is_a_plan_error_naming_the_path() -> None:
    tasks = [
        task("root"),
        task("a", depends=["b"]),
        task("b", depends=["c"]),
        task("c", depends=["a"]),
    ]
    assert "cycle 'a' -> 'b' -> 'c' -> 'a'" in plan_rejection(spec_document(tasks=tasks))


def test_agent_missing_from_the_roster_is_a_plan_error_and_never_remapped() -> None:
    document = spec_document(tasks=[task("a", agent="designer")])
    assert "'designer' of task 'a' is not declared in $.agents" in plan_rejection(document)


def test_declared_agent_without_definition_is_a_plan_error() -> None:
    document = spec_document(tasks=[task("a", agent="ghost")])
    document["agents"]["ghost"] = {"model": None, "thinking": None}
    assert "no enabled definition" in plan_rejection(document)


def test_disabled_agent_is_a_plan_error() -> None:
    agents = FakeAgentLookup(disabled={"backend"})
    assert "disabled" in plan_rejection(spec_document(), agents=agents)


def test_unknown_artifact_reference_is_a_plan_error() -> None:
    document = spec_document(tasks=[task("a", artifactRefs=["nope"])])
    assert "unknown artifact 'nope'" in plan_rejection(document)


def test_every_plan_error_is_reported_at_once() -> None:
    document = spec_document(tasks=[task("a", depends=["x"]), task("a", artifactRefs=["y"])])
    message = plan_rejection(document)
    assert "duplicate task id" in message
    assert "unknown task 'x'" in message
    assert "unknown artifact 'y'" in message


def test_unreferenced_artifacts_and_extra_roster_entries_are_allowed() -> None:
    entry = {"id": "ctx", "path": "/x", "sha256": "0" * 64, "bytes": 0, "purpose": "x"}
    document = spec_document(artifacts=[entry])
    document["agents"]["docs"] = {"model": None, "thinking": None}
    assert parse(encode(document)).spec.artifacts[0].id == "ctx"


def test_plan_style_rules_are_warnings_not_errors() -> None:
    tasks = [task(f"t{i}", description="") for i in range(10)]
    warnings = parse(encode(spec_document(tasks=tasks))).warnings
    assert any("10 tasks" in w for w in warnings)
    assert any("QA" in w for w in warnings)
    assert any("empty description" in w for w in warnings)
    no_verify = spec_document(tasks=[task("a", description="Write it nicely.")])
    assert any("no way to verify" in w for w in parse(encode(no_verify)).warnings)


@pytest.mark.parametrize("device", ["con", "nul", "aux", "prn", "com1", "lpt9"])
def test_a_windows_device_name_as_task_id_is_a_plan_error_naming_the_path(device: str) -> None:
    message = plan_rejection(spec_document(tasks=[task("build"), task(device)]))
    assert message.startswith(
        f"$.tasks[1].id: task id '{device}' is reserved: it is a Windows device name"
    )


@pytest.mark.parametrize("variant", ["Session", "SPEC", "Knowledge", "Con", "con.txt"])
def test_a_case_or_extension_variant_of_a_reserved_task_id_is_refused(variant: str) -> None:
    error = rejection(encode(spec_document(tasks=[task("build"), task(variant)])))
    # The spec task-id pattern is lowercase without dots, so the schema refuses these first.
    assert error.code is ErrorCode.SPEC_MALFORMED
    assert error.message.startswith("$.tasks[1].id: does not match the pattern")
