"""The one input path: schema files agree with the values they structure into, and
``parse_input`` checks the schema before structuring."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from application.squads.operations import Action, NewTask
from application.squads.review import ReviewCall
from application.tool_calls import TOOL_SCHEMAS, MessageCall, ModifyCall, StatusCall
from domain.agents import AGENT_NAME_PATTERN, AgentDefinition
from domain.input_errors import InputRejected
from domain.inputs import parse_input
from domain.names import THINKING_LEVELS, camel
from domain.spec.documents import schema_document, self_contained_document, tool_parameters
from domain.squad.model import Verdict


@pytest.mark.parametrize(
    ("schema", "cls"),
    [
        ("new-task", NewTask),
        ("squad-status-call", StatusCall),
        ("squad-modify-call", ModifyCall),
        ("squad-review-call", ReviewCall),
        ("squad-message-call", MessageCall),
        ("agent-definition", AgentDefinition),
    ],
)
def test_each_schema_names_exactly_its_value_class_fields(schema: str, cls: type[Any]) -> None:
    document = schema_document(schema)
    assert document["additionalProperties"] is False
    fields = attrs.fields(cls)
    assert set(document["properties"]) == {camel(field.name) for field in fields}
    required = {camel(f.name) for f in fields if f.default is attrs.NOTHING}
    assert set(document.get("required", [])) == required


def test_enumerations_in_schemas_are_the_codes_own() -> None:
    modify = schema_document("squad-modify-call")["properties"]
    assert modify["action"]["enum"] == [action.value for action in Action]
    review = schema_document("squad-review-call")["properties"]
    assert review["verdict"]["enum"] == [verdict.value for verdict in Verdict]
    agent = schema_document("agent-definition")["properties"]
    assert agent["thinking"]["enum"] == [None, *THINKING_LEVELS]
    assert agent["name"]["pattern"] == f"^{AGENT_NAME_PATTERN.pattern}$"


def test_squad_modify_embeds_the_new_task_schema_once_defined() -> None:
    assert schema_document("squad-modify-call")["properties"]["task"] == {
        "$ref": "new-task.schema.json"
    }
    inlined = self_contained_document("squad-modify-call")["properties"]["task"]
    new_task = {k: v for k, v in schema_document("new-task").items() if not k.startswith("$")}
    new_task.pop("title")
    assert inlined == new_task


@pytest.mark.parametrize("schema", sorted(TOOL_SCHEMAS.values()))
def test_tool_parameters_are_self_contained_objects(schema: str) -> None:
    parameters = tool_parameters(schema)
    assert parameters["type"] == "object"
    text = json.dumps(parameters)
    assert "$ref" not in text
    assert "$schema" not in text
    assert "$id" not in text


def test_parse_input_structures_camel_case_json_into_values() -> None:
    call = parse_input(
        "squad-modify-call",
        {
            "action": "add_task",
            "task": {
                "id": "a",
                "title": "t",
                "agent": "qa",
                "depends": ["b"],
                "inheritContext": True,
            },
        },
        ModifyCall,
    )
    assert call.action is Action.ADD_TASK
    assert call.task == NewTask(id="a", title="t", agent="qa", depends=("b",), inherit_context=True)


@pytest.mark.parametrize(
    ("document", "problems"),
    [
        (
            {"action": "pause", "depends": "a"},
            ["'depends' must be an array of strings, not string"],
        ),
        ({"action": 1.0}, ["'action' must be one of " + ", ".join(a.value for a in Action)]),
        (
            {"action": "add_task", "task": {"id": True, "title": "t", "agent": "qa", "x": 1}},
            [
                "task: unknown key(s) (a key not shown); allowed keys: agent, depends, "
                "description, forkFromTask, id, inheritContext, title",
                "'task.id' must be a string, not boolean",
            ],
        ),
        ([], ["the input must be an object, not array"]),
    ],
)
def test_every_schema_problem_is_named_without_structuring(
    document: object, problems: list[str]
) -> None:
    with pytest.raises(InputRejected) as caught:
        parse_input("squad-modify-call", document, ModifyCall)
    assert list(caught.value.problems) == problems


def test_a_value_class_rule_is_reported_at_its_field() -> None:
    document = {"name": "ok", "role": "r", "description": "d", "prompt": "p", "tags": ["a", " "]}
    with pytest.raises(InputRejected) as caught:
        parse_input("agent-definition", document, AgentDefinition)
    assert caught.value.problems == ("$.tags[1]: must be a non-blank string",)
