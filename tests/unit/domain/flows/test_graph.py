"""A graph's rules before any spawn, and its waves."""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.flows.call import parse_call
from domain.flows.call_roles import Graph
from domain.flows.errors import FlowError
from domain.flows.graph import check_graph, waves


def graph(*nodes: tuple[str, list[str]]) -> Graph:
    document: dict[str, Any] = {
        "task": "t",
        "why": "w",
        "graph": {
            "nodes": [
                {"id": node, "agent": "researcher", "task": "x", "dependsOn": deps}
                for node, deps in nodes
            ]
        },
    }
    parsed = parse_call(document).graph
    assert parsed is not None
    return parsed


def test_waves_follow_dependencies_and_keep_call_order() -> None:
    shape = graph(("c", ["a", "b"]), ("a", []), ("b", ["a"]), ("d", []))
    check_graph(shape)
    assert waves(shape) == (("a", "d"), ("b",), ("c",))


def test_a_duplicate_id_is_graph_invalid() -> None:
    with pytest.raises(FlowError) as caught:
        check_graph(graph(("a", []), ("a", [])))
    assert caught.value.code is ErrorCode.GRAPH_INVALID
    assert caught.value.path == "$.graph.nodes[1].id"


def test_an_unknown_dependency_is_graph_invalid() -> None:
    with pytest.raises(FlowError) as caught:
        check_graph(graph(("a", []), ("b", ["zz"])))
    assert caught.value.code is ErrorCode.GRAPH_INVALID
    assert caught.value.path == "$.graph.nodes[1].dependsOn[0]"
    assert caught.value.problems[0].allowed == ["a", "b"]


@pytest.mark.parametrize(
    ("nodes", "cycle"),
    [
        ((("a", ["a"]),), ["a"]),
        ((("a", ["c"]), ("b", ["a"]), ("c", ["b"]), ("d", [])), ["a", "c", "b"]),
    ],
)
def test_a_cycle_is_graph_cycle_naming_its_nodes(
    nodes: tuple[tuple[str, list[str]], ...], cycle: list[str]
) -> None:
    with pytest.raises(FlowError) as caught:
        check_graph(graph(*nodes))
    assert caught.value.code is ErrorCode.GRAPH_CYCLE
    assert caught.value.problems[0].measured == cycle
