"""``graph.debrief`` over a scripted dispatch: it runs after the last wave over the terminal
nodes that completed, is told which did not, is skipped naming what it waited for, and is the
last run an attested graph plans."""

from __future__ import annotations

from domain.flows.call import parse_call
from domain.flows.handoff import HandoffGuard
from domain.flows.mode_parts import FlowStatus, ModeInputs
from domain.flows.modes import planned_runs
from domain.flows.runs import RunStatus
from domain.flows.strategies import STRATEGIES
from domain.flows.write_guard import concurrent_pairs
from tests.unit.domain.flows.test_judging import WHY, ScriptedDispatch, failed, run

TASK = "Which JSON parser should the service use?"

GRAPH = {
    "task": TASK,
    "graph": {
        "nodes": [
            {"id": "scan", "agent": "recon", "task": "scan"},
            {"id": "speed", "agent": "analyst", "task": "speed", "dependsOn": ["scan"]},
            {"id": "safety", "agent": "redteam", "task": "safety", "dependsOn": ["scan"]},
        ],
        "debrief": {"agent": "debrief"},
    },
}


def test_the_graph_debrief_synthesises_the_terminal_nodes_only() -> None:
    dispatch = ScriptedDispatch({"node-scan": "files", "node-speed": "fast", "node-safety": "ok"})
    outcome = run(GRAPH, dispatch)
    assert dispatch.keys == ["node-scan", "node-speed", "node-safety", "debrief"]
    told = dispatch.told("debrief")
    assert told.startswith(TASK)
    assert told.count("<<<UNTRUSTED DATA") == 2
    assert "fast" in told
    assert "terminal nodes" in told
    debrief = dispatch.jobs[-1]
    assert debrief.depends_on == ("node-speed", "node-safety")
    assert outcome.results[-1].key == "debrief"
    assert outcome.status is FlowStatus.COMPLETED
    assert outcome.summary.startswith(
        "Flow graph: 3/3 nodes completed; the debrief (debrief) completed."
    )
    # A terminal node's output is handed to the debrief: its run is a consumed one.
    assert all(job.consumed for job in dispatch.jobs[:3])


def test_the_graph_debrief_is_told_which_terminal_nodes_did_not_complete() -> None:
    dispatch = ScriptedDispatch({"node-safety": failed})
    outcome = run(GRAPH, dispatch)
    assert "Terminal nodes that did not complete: node-safety (failed)." in dispatch.told("debrief")
    assert outcome.status is FlowStatus.PARTIAL


def test_no_completed_terminal_node_skips_the_graph_debrief_naming_what_it_waited_for() -> None:
    dispatch = ScriptedDispatch({"node-scan": failed})
    outcome = run(GRAPH, dispatch)
    assert dispatch.keys == ["node-scan"]
    debrief = outcome.results[-1]
    assert (debrief.key, debrief.status) == ("debrief", RunStatus.SKIPPED)
    assert debrief.error == "no terminal node completed (node-speed, node-safety)"
    assert outcome.status is FlowStatus.FAILED


def test_a_graph_without_a_debrief_is_unchanged() -> None:
    dispatch = ScriptedDispatch({})
    graph = {**GRAPH, "graph": {"nodes": GRAPH["graph"]["nodes"]}}  # type: ignore[index]
    outcome = run(graph, dispatch)
    assert dispatch.keys == ["node-scan", "node-speed", "node-safety"]
    assert outcome.summary.startswith("Flow graph: 3/3 nodes completed.")
    assert not dispatch.jobs[-1].consumed


def test_the_graph_debrief_is_a_role_admission_resolves() -> None:
    call = parse_call({**GRAPH, "why": WHY})
    assert call.roles()[-1][0] == "$.graph.debrief"
    assert call.roles()[-1][1].agent == "debrief"


def test_an_attested_graph_plans_its_debrief_as_the_last_run() -> None:
    call = parse_call({**GRAPH, "why": WHY})
    dispatch = ScriptedDispatch({})
    outcome = STRATEGIES[call.mode](call, dispatch, HandoffGuard.for_call(call), ModeInputs())
    planned = [key for key, _role in planned_runs(call)]
    assert planned == dispatch.keys == [result.key for result in outcome.results]


def test_the_graph_debrief_runs_alone_after_the_nodes_it_reads() -> None:
    # The pairs the shared-write guard checks (indices into ``call.roles()``): never the debrief.
    assert concurrent_pairs(parse_call({**GRAPH, "why": WHY})) == [(1, 2)]
