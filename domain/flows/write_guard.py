"""The shared-write guard: two write-capable roles that could run at the same time in one
working directory are refused before either spawns (``SHARED_WRITE_CWD``).

A role is write-capable when its effective tools are Pi's defaults or include ``bash``, ``edit``
or ``write`` (``bash-ro`` is not). Two roles could run at the same time when the mode runs them
concurrently and ``concurrency`` is above 1: any two parallel tasks; any two graph nodes that
no dependency path orders (stricter than "in the same wave", so the rule holds however the
waves are scheduled). Single and chain run one child at a time.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import combinations

import attrs

from domain.errors import ErrorCode
from domain.flows.call import FlowCall, Mode
from domain.flows.errors import FlowError, Problem
from domain.flows.orchestrate_fields import WORKER_PATH
from domain.flows.tools import ToolChoice


@attrs.frozen
class WriterRole:
    """One role as the guard sees it: where it is defined, its agent, its effective tools and
    its working directory's identity (equal keys: the same directory)."""

    path: str
    agent: str
    tools: ToolChoice
    cwd_key: Hashable


def _ancestors(call: FlowCall) -> dict[int, set[int]]:
    assert call.graph is not None
    index = {node.id: i for i, node in enumerate(call.graph.nodes)}
    found: dict[int, set[int]] = {}

    def of(i: int) -> set[int]:
        if i not in found:
            found[i] = set()  # the graph is acyclic (checked first): no re-entry loops
            for dependency in call.graph.nodes[i].depends_on:  # type: ignore[union-attr]
                j = index[dependency]
                found[i] |= {j, *of(j)}
        return found[i]

    for i in range(len(call.graph.nodes)):
        of(i)
    return found


def _synthesised(call: FlowCall) -> bool:
    """Whether the call's last role synthesises the others' outputs after they all settled."""
    if call.debate is not None:
        return True
    if call.vote is not None:
        return call.vote.debrief is not None
    return call.graph is not None and call.graph.debrief is not None


def concurrent_pairs(call: FlowCall) -> list[tuple[int, int]]:
    """Pairs of ``call.roles()`` indices that may be alive at the same time."""
    count = len(call.roles())
    if call.mode is Mode.ORCHESTRATE:
        return _orchestrate_pairs(call)
    panels = (Mode.VOTE, Mode.DEBATE)
    if call.concurrency < 2 or call.mode not in (Mode.PARALLEL, Mode.GRAPH, Mode.DOSSIER, *panels):
        return []
    if _synthesised(call):
        # Voters, advocates or graph nodes run together; the debrief or the adjudicator (the
        # last role) runs after them all.
        count -= 1
    if call.mode is Mode.DOSSIER:
        # The sections run together; the debrief (the last role) runs after them all.
        count -= 1
    pairs = list(combinations(range(count), 2))
    if call.mode is Mode.GRAPH:
        ancestors = _ancestors(call)
        pairs = [(a, b) for a, b in pairs if a not in ancestors[b] and b not in ancestors[a]]
    return pairs


def _orchestrate_pairs(call: FlowCall) -> list[tuple[int, int]]:
    """Orchestrate's one worker role stands for every subtask, and the subtasks of a wave run
    ``concurrency`` at a time: the role pairs with itself when two may run together."""
    assert call.orchestrate is not None
    if call.concurrency < 2 or call.orchestrate.max_subtasks < 2:
        return []
    paths = [path for path, _ in call.roles()]
    worker = paths.index(WORKER_PATH)
    return [(worker, worker)]


def check_shared_writes(
    call: FlowCall, roles: Sequence[WriterRole], pairs: list[tuple[int, int]] | None = None
) -> None:
    """``SHARED_WRITE_CWD`` naming every clashing pair and the tools that classified each role,
    unless the call set ``allowSharedWriteCwd``. ``pairs``: the roles that run together, when
    known only at run time (worktree writers, each in the directory made for it); else the
    call's ``concurrent_pairs``."""
    if call.allow_shared_write_cwd:
        return
    problems: list[Problem] = []
    for a, b in concurrent_pairs(call) if pairs is None else pairs:
        first, second = roles[a], roles[b]
        if first.cwd_key != second.cwd_key:
            continue
        first_tools, second_tools = first.tools.write_tools(), second.tools.write_tools()
        if not first_tools or not second_tools:
            continue
        problems.append(
            Problem(
                ErrorCode.SHARED_WRITE_CWD,
                second.path,
                f"{first.path} ({first.agent}: {','.join(first_tools)}) and {second.path} "
                f"({second.agent}: {','.join(second_tools)}) could write in the same cwd at "
                "the same time",
                [
                    {"path": first.path, "agent": first.agent, "writeTools": list(first_tools)},
                    {"path": second.path, "agent": second.agent, "writeTools": list(second_tools)},
                ],
                "at most one write-capable role per cwd at a time",
            )
        )
    if problems:
        raise FlowError(tuple(problems))
