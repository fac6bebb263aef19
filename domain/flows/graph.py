"""A graph call's dependency structure: its rules (``GRAPH_INVALID``, ``GRAPH_CYCLE``) and its
waves. Checked whole before the first spawn: a graph that could not finish never starts."""

from __future__ import annotations

from domain.errors import ErrorCode
from domain.flows.call_roles import Graph
from domain.flows.errors import FlowError, Problem


def check_graph(graph: Graph) -> None:
    """Duplicate ids and unknown ``dependsOn`` are ``GRAPH_INVALID``; a cycle (a node
    depending on itself included) is ``GRAPH_CYCLE``, naming the nodes on it."""
    problems: list[Problem] = []
    first_index: dict[str, int] = {}
    for index, node in enumerate(graph.nodes):
        if node.id in first_index:
            problems.append(
                Problem(
                    ErrorCode.GRAPH_INVALID,
                    f"$.graph.nodes[{index}].id",
                    f"duplicate node id '{node.id}' (first at nodes[{first_index[node.id]}])",
                    node.id,
                    "a unique id",
                )
            )
        else:
            first_index[node.id] = index
    for index, node in enumerate(graph.nodes):
        for position, dependency in enumerate(node.depends_on):
            if dependency not in first_index:
                problems.append(
                    Problem(
                        ErrorCode.GRAPH_INVALID,
                        f"$.graph.nodes[{index}].dependsOn[{position}]",
                        f"node '{node.id}' depends on '{dependency}', which is no node's id",
                        dependency,
                        sorted(first_index),
                    )
                )
    if problems:
        raise FlowError(tuple(problems))
    cycle = _find_cycle(graph)
    if cycle is not None:
        index = first_index[cycle[0]]
        raise FlowError(
            Problem(
                ErrorCode.GRAPH_CYCLE,
                f"$.graph.nodes[{index}].dependsOn",
                "the dependencies form a cycle: " + " -> ".join([*cycle, cycle[0]]),
                list(cycle),
                "an acyclic graph",
            )
        )


def _find_cycle(graph: Graph) -> tuple[str, ...] | None:
    """One cycle in node order (iterative depth-first search, so depth is no recursion)."""
    edges = {node.id: node.depends_on for node in graph.nodes}
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for root, dependencies in edges.items():
        if root in state:
            continue
        path: list[str] = [root]
        iterators = [iter(dependencies)]
        state[root] = 1
        while iterators:
            step = next(iterators[-1], None)
            if step is None:
                state[path.pop()] = 2
                iterators.pop()
            elif state.get(step) == 1:
                return tuple(path[path.index(step) :])
            elif step not in state:
                state[step] = 1
                path.append(step)
                iterators.append(iter(edges[step]))
    return None


def waves(graph: Graph) -> tuple[tuple[str, ...], ...]:
    """The nodes in dependency waves: a node runs in the wave after its last dependency.
    Within a wave, nodes keep the call's order. The graph must have passed ``check_graph``."""
    wave_of: dict[str, int] = {}
    remaining = list(graph.nodes)
    while remaining:
        ready = [n for n in remaining if all(d in wave_of for d in n.depends_on)]
        if not ready:
            raise ValueError("waves() of a graph that check_graph() refuses")
        for node in ready:
            wave_of[node.id] = 1 + max((wave_of[d] for d in node.depends_on), default=-1)
        remaining = [n for n in remaining if n.id not in wave_of]
    count = 1 + max(wave_of.values(), default=-1)
    return tuple(
        tuple(node.id for node in graph.nodes if wave_of[node.id] == wave) for wave in range(count)
    )
