"""The flow call model: one mode per call, each mode's closed schema, pi-flows' admission codes
with path, measured and allowed values, and the catalogue's advice on every error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.flows.call import SCHEMAS, FlowCall, Mode, parse_call
from domain.flows.catalogue import CATALOGUE, FLOW_CODES
from domain.flows.errors import FlowError
from domain.flows.tools import ToolChoice
from domain.spec.schema import violations

REPO = Path(__file__).resolve().parents[4]
WHY = "independent verification"
ONE_OF_EACH: dict[str, dict[str, Any]] = {
    "list": {"list": True},
    "showConfig": {"showConfig": True},
    "single": {"agent": "researcher", "task": "look", "why": WHY},
    "parallel": {"tasks": [{"agent": "researcher", "task": "look"}], "why": WHY},
    "chain": {"task": "t", "chain": [{"agent": "researcher", "task": "{task}"}], "why": WHY},
    "graph": {
        "task": "t",
        "graph": {"nodes": [{"id": "a", "agent": "researcher", "task": "x"}]},
        "why": WHY,
    },
}


def refusal(document: object) -> FlowError:
    with pytest.raises(FlowError) as caught:
        parse_call(document)
    return caught.value


@pytest.mark.parametrize(("mode", "document"), ONE_OF_EACH.items())
def test_the_flow_tools_advertised_schema_accepts_every_modes_call(
    mode: str, document: dict[str, Any]
) -> None:
    assert violations("flow-tool-v1", document) == []
    assert violations("flow-tool-v1", {"preset": "scout", "task": "t", "why": WHY}) == []


def test_every_mode_schema_is_closed_and_versioned() -> None:
    for name in SCHEMAS.values():
        document = json.loads((REPO / f"domain/spec/schemas/{name}.schema.json").read_text())
        assert name.endswith("-v1")
        assert document["additionalProperties"] is False


def test_the_catalogue_covers_exactly_the_flow_codes() -> None:
    assert frozenset(CATALOGUE) == FLOW_CODES
    assert FlowError.family_codes == FLOW_CODES
    for code, entry in CATALOGUE.items():
        assert code in ErrorCode.__members__.values()
        assert entry.cause
        assert entry.fix


@pytest.mark.parametrize(("mode", "document"), ONE_OF_EACH.items())
def test_each_mode_parses_with_its_defaults(mode: str, document: dict[str, Any]) -> None:
    call = parse_call(document)
    assert call.mode == Mode(mode)
    assert (call.concurrency, call.timeout_ms, call.agent_scope) == (4, 36_000_000, "user")
    assert call.record_content
    assert call.redact_secrets
    assert call.confirm_project_agents


@pytest.mark.parametrize(
    "document",
    [
        {},
        {"why": WHY},
        {"list": True, "showConfig": True},
        {"agent": "a", "task": "t", "tasks": [], "why": WHY},
        {"task": "t", "chain": [], "graph": {}, "why": WHY},
        {"task": "t", "workflow": {}, "tasks": [], "why": WHY},
        {"agent": "researcher", "why": WHY},
    ],
)
def test_not_exactly_one_built_mode_is_invalid_mode(document: dict[str, Any]) -> None:
    assert refusal(document).code is ErrorCode.INVALID_MODE


@pytest.mark.parametrize("mode", ["single", "parallel", "chain", "graph"])
@pytest.mark.parametrize("why", [None, "", "   \n"])
def test_every_spawning_mode_needs_a_why(mode: str, why: str | None) -> None:
    document = {k: v for k, v in ONE_OF_EACH[mode].items() if k != "why"}
    if why is not None:
        document["why"] = why
    error = refusal(document)
    assert error.code is ErrorCode.WHY_REQUIRED
    assert error.path == "$.why"


@pytest.mark.parametrize("mode", list(ONE_OF_EACH))
@pytest.mark.parametrize("concurrency", [0, 9, -1, 2.0, "4", True, None])
def test_concurrency_is_an_integer_1_to_8_in_every_mode(mode: str, concurrency: object) -> None:
    error = refusal({**ONE_OF_EACH[mode], "concurrency": concurrency})
    assert error.code is ErrorCode.INVALID_CONCURRENCY
    assert error.path == "$.concurrency"


@pytest.mark.parametrize("concurrency", [1, 8])
def test_concurrency_bounds_are_inclusive(concurrency: int) -> None:
    assert (
        parse_call({**ONE_OF_EACH["list"], "concurrency": concurrency}).concurrency == concurrency
    )


def test_more_than_eight_tasks_is_too_many_tasks_with_measured_and_allowed() -> None:
    tasks = [{"agent": "researcher", "task": f"t{i}"} for i in range(9)]
    document = refusal({"tasks": tasks, "why": WHY}).document()
    assert document["code"] == "TOO_MANY_TASKS"
    assert (document["path"], document["measured"], document["allowed"]) == (
        "$.tasks",
        9,
        {"maxItems": 8},
    )
    assert parse_call({"tasks": tasks[:8], "why": WHY}).tasks[7].task == "t7"


def test_an_unknown_scope_is_invalid_scope() -> None:
    document = refusal({**ONE_OF_EACH["single"], "agentScope": "global"}).document()
    assert document["code"] == "INVALID_SCOPE"
    assert document["measured"] == "global"
    assert document["allowed"] == ["user", "project", "all"]


@pytest.mark.parametrize("timeout", [999, 0, 86_400_001, 1500.5])
def test_timeout_ms_is_bounded(timeout: object) -> None:
    error = refusal({**ONE_OF_EACH["single"], "timeoutMs": timeout})
    assert error.code is ErrorCode.FLOW_INVALID
    assert error.path == "$.timeoutMs"


def test_an_unknown_key_is_flow_invalid_and_counts_without_quoting() -> None:
    document = refusal({**ONE_OF_EACH["single"], "secret text": 1}).document()
    assert document["code"] == "FLOW_INVALID"
    assert document["measured"] == 1
    assert "secret text" not in json.dumps(document)


def test_every_error_carries_path_measured_allowed_and_the_catalogue_advice() -> None:
    document = refusal({**ONE_OF_EACH["parallel"], "concurrency": 12}).document()
    assert document["measured"] == 12
    assert document["allowed"] == {"minimum": 1, "maximum": 8}
    entry = CATALOGUE[ErrorCode.INVALID_CONCURRENCY]
    assert (document["cause"], document["fix"], document["retryable"]) == (
        entry.cause,
        entry.fix,
        entry.retryable,
    )


def test_all_violations_are_reported_ranked_by_admission_order() -> None:
    document = refusal(
        {"tasks": [{"agent": "a", "task": "t"}] * 9, "concurrency": 0, "agentScope": "x"}
    ).document()
    codes = [problem["code"] for problem in document["problems"]]
    assert codes == ["WHY_REQUIRED", "INVALID_CONCURRENCY", "INVALID_SCOPE", "TOO_MANY_TASKS"]


@pytest.mark.parametrize(
    ("tools", "names"),
    [
        ("default", None),
        ("none", ()),
        ([], ()),
        ("read, grep,ls", ("read", "grep", "ls")),
        (["read", "bash-ro"], ("read", "bash-ro")),
        ("bash-ro,bash", ("bash",)),
    ],
)
def test_tools_forms(tools: object, names: tuple[str, ...] | None) -> None:
    call = parse_call({**ONE_OF_EACH["single"], "tools": tools})
    assert call.tools == ToolChoice(names)


@pytest.mark.parametrize("tools", ["none,bash", ["default", "read"], "read,read", "a b", 3, ""])
def test_malformed_tools_are_flow_invalid_at_their_path(tools: object) -> None:
    error = refusal(
        {**ONE_OF_EACH["parallel"], "tasks": [{"agent": "a", "task": "t", "tools": tools}]}
    )
    assert error.code is ErrorCode.FLOW_INVALID
    assert error.path == "$.tasks[0].tools"


def test_malformed_graph_fields_are_graph_invalid() -> None:
    base = ONE_OF_EACH["graph"]
    graph: dict[str, Any]
    for graph in ({"nodes": []}, {"nodes": [{"id": "a", "agent": "x"}]}, {"nodes": [], "x": 1}):
        assert refusal({**base, "graph": graph}).code is ErrorCode.GRAPH_INVALID
    nodes = [{"id": f"n{i}", "agent": "a", "task": "t"} for i in range(17)]
    assert refusal({**base, "graph": {"nodes": nodes}}).code is ErrorCode.GRAPH_INVALID


def test_the_call_lists_each_role_with_its_path() -> None:
    call: FlowCall = parse_call(
        {**ONE_OF_EACH["graph"], "graph": {"nodes": [{"id": "a", "agent": "r", "task": "x"}]}}
    )
    assert [path for path, _ in call.roles()] == ["$.graph.nodes[0]"]
    assert parse_call(ONE_OF_EACH["list"]).roles() == ()
