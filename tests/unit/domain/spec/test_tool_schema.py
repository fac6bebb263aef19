"""Every tool pi-squad registers shows providers a schema they all accept (top-level object with
every accepted field under ``properties``, no top-level combinator, no ``$ref``), derived from
the schema file its input is validated against; validation stays as strict as the full file."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from application.child.reader import reader_tool_spec
from application.child.worker import broker_tool_specs
from application.delegation.tool import DELEGATE_TOOL_SCHEMA, delegate_tool_spec
from application.flows.flow_tool import FLOW_TOOL_SCHEMA, flow_tool_spec
from application.ports import ToolSpec
from application.squads.squad_call import classify_call
from application.squads.squad_tools import squad_tools
from application.tool_calls import TOOL_SCHEMAS
from domain.delegation.request import parse_request
from domain.errors import ErrorCode, PiSquadError
from domain.spec.documents import self_contained_document
from domain.spec.tool_schema import (
    TOP_LEVEL_REFUSED,
    UnsafeToolSchema,
    accepted_fields,
    provider_parameters,
    provider_schema_problems,
)

# Tool name -> the schema file its input is validated against.
VALIDATED_BY = {
    **TOOL_SCHEMAS,
    "flow": FLOW_TOOL_SCHEMA,
    "delegate": DELEGATE_TOOL_SCHEMA,
    "squad_spec_read": "spec-read-call",
    "read_source": "delegate-broker-read-v1",
    "search_source": "delegate-broker-search-v1",
    "cite_receipt": "delegate-broker-cite-v1",
}


def registered_tools() -> list[ToolSpec]:
    """Every tool of every role: the main session's, the spec child's, the worker's."""
    return [
        *squad_tools(),
        flow_tool_spec(),
        delegate_tool_spec(),
        reader_tool_spec(),
        *broker_tool_specs(),
    ]


def test_the_registered_tools_are_the_eleven_of_the_three_roles() -> None:
    assert sorted(tool.name for tool in registered_tools()) == sorted(VALIDATED_BY)
    assert len(VALIDATED_BY) == 11


@pytest.mark.parametrize("tool", registered_tools(), ids=lambda tool: tool.name)
def test_every_registered_tool_shows_providers_a_plain_object_schema(tool: ToolSpec) -> None:
    parameters = tool.parameters
    full = self_contained_document(VALIDATED_BY[tool.name])
    assert provider_schema_problems(parameters, accepted_fields(full)) == []
    assert parameters["type"] == "object"
    assert not set(TOP_LEVEL_REFUSED) & set(parameters)
    # What Pi's Anthropic adapter keeps (properties and required) still names every field.
    assert set(parameters["properties"]) == accepted_fields(full)
    jsonschema.Draft202012Validator.check_schema(parameters)


@pytest.mark.parametrize(
    ("parameters", "problem"),
    [
        ({"oneOf": [{"type": "object"}]}, "top-level 'oneOf'"),
        ({"type": "object", "properties": {}, "anyOf": []}, "top-level 'anyOf'"),
        ({"type": "object", "properties": {}, "const": {}}, "top-level 'const'"),
        ({"type": "object", "properties": {"a": {}}, "if": {}}, "top-level 'if'"),
        ({"properties": {"a": {}}}, "top-level type is not 'object'"),
        ({"type": "object", "properties": {"a": {}}}, "accepted fields not under"),
        ({"type": "object", "properties": {"a": {"$ref": "#/x"}, "b": {}}}, "$ref at $"),
    ],
)
def test_the_check_names_what_a_provider_refuses(parameters: dict[str, Any], problem: str) -> None:
    found = provider_schema_problems(parameters, frozenset({"a", "b"}) - {"x"})
    assert any(problem in line for line in found), found


def test_a_choice_of_forms_is_shown_as_one_object_naming_each_form() -> None:
    shown = provider_parameters(self_contained_document("delegate-tool-v1"))
    assert shown["required"] == ["version", "op"]  # only what every form requires
    assert shown["properties"]["op"] == {
        "enum": ["run", "status", "collect", "follow_up", "resolve", "cancel", "capture"]
    }
    assert shown["additionalProperties"] is False
    assert '{op="resolve"} needs version, op, batchId' in shown["description"]


def test_a_field_the_forms_define_differently_accepts_each_definition() -> None:
    document = {
        "oneOf": [
            {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
            {"type": "object", "properties": {"x": {"type": "integer"}, "y": {}}},
        ]
    }
    shown = provider_parameters(document)
    assert shown["properties"]["x"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert "required" not in shown


def test_a_schema_that_cannot_be_one_object_is_refused() -> None:
    with pytest.raises(UnsafeToolSchema):
        provider_parameters({"oneOf": [{"type": "string"}]})
    with pytest.raises(UnsafeToolSchema):
        provider_parameters({"type": "object", "properties": {}, "allOf": [{}]})
    with pytest.raises(UnsafeToolSchema):
        provider_parameters({"type": "object", "properties": {"a": {"$ref": "#/a"}}})


def squad_shown() -> dict[str, Any]:
    (tool,) = [t for t in squad_tools() if t.name == "squad"]
    return dict(tool.parameters)


def test_a_mixed_squad_call_passes_what_the_model_sees_and_is_refused_as_before() -> None:
    mixed = {"goal": "g", "specFile": "s.json", "specSha256": "0" * 64}
    jsonschema.validate(mixed, squad_shown())  # the shown schema is a superset ...
    with pytest.raises(PiSquadError) as refused:  # ... the full one decides
        classify_call(mixed)
    assert refused.value.code is ErrorCode.SPEC_MALFORMED
    assert "cannot be combined with goal" in str(refused.value)


def test_a_file_squad_call_missing_its_digest_is_refused_as_before() -> None:
    jsonschema.validate({"specFile": "s.json"}, squad_shown())
    with pytest.raises(PiSquadError) as refused:
        classify_call({"specFile": "s.json"})
    assert refused.value.code is ErrorCode.SPEC_MALFORMED


def test_a_delegate_call_omitting_its_forms_required_field_is_refused_as_before() -> None:
    (shown,) = [t.parameters for t in registered_tools() if t.name == "delegate"]
    call = {"version": 1, "op": "collect"}  # collect needs batchId
    jsonschema.validate(call, shown)
    with pytest.raises(PiSquadError) as refused:
        parse_request(call)
    assert refused.value.code is ErrorCode.DELEGATE_INVALID


@given(
    st.dictionaries(
        st.sampled_from(sorted(accepted_fields(self_contained_document("squad-call")))),
        st.one_of(st.text(max_size=3), st.integers(), st.booleans()),
    )
)
def test_whatever_the_full_squad_schema_accepts_the_shown_one_accepts(call: dict[str, Any]) -> None:
    full = self_contained_document("squad-call")
    if jsonschema.Draft202012Validator(full).is_valid(call):
        assert jsonschema.Draft202012Validator(squad_shown()).is_valid(call)
