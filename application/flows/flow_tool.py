"""The ``flow`` tool of the main Pi (docs/flows.md): one call per execution, its live tool row,
and the text the model reads back.

The row follows the seed: a fan-out heads with ``k/n settled`` (settled runs, not successful
ones) while the flow works, and the outcome (``3 ok``, ``2 failed``) once it has settled; a
single-run flow shows neither. Below it one line per run (state, agent, duration; a running
child's current tool or latest message) and the token/cost rollup of the runs settled so far.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from application.flows.flow_report import FlowReport, error_text
from application.ports import ToolFailure, ToolSpec
from domain.flows.errors import FlowError
from domain.flows.mode_fields import DEFAULT_EVALUATE_ITERATIONS, DEFAULT_LOOP_ITERATIONS
from domain.flows.redact import redact
from domain.flows.runs import ChildJob, RunResult, RunStatus
from domain.spec.documents import tool_parameters
from domain.usage import Usage

FLOW_TOOL = "flow"
FLOW_TOOL_SCHEMA = "flow-tool-v1"
_DESCRIPTION = (
    "Coordinate child Pi agents in one mode: list, showConfig, single {agent, task}, parallel "
    "{tasks}, chain {task, chain}, graph {task, graph: {nodes}}, route {task, route: "
    "{candidates}} (a controller picks one agent), loop {task, loop: {body, judge?}} (until "
    "the judge's VERDICT: PASS or the body's LOOP: DONE), dossier {task, dossier: {sections}} "
    "(2..8 evidence extractors, then a debrief reconciles them), monitor {task, monitor: "
    "{command, trigger?, pattern?}} (a shell probe repeated under a bound; one reactor once it "
    "fires), vote {task, vote: {voters | agent+count, debrief?}} (independent answers, "
    "merged by the debrief; no majority is computed), debate {task, debate: {participants, "
    "adjudicator?, rounds?}} (advocates argue and rebut, an adjudicator decides), evaluate "
    "{task, evaluate: {operator?, redteam?, checkCommand?}} (a draft revised until its check "
    "exits 0 and every critic says VERDICT: PASS), search {task, search: {candidates?, "
    "beamWidth?, maxRounds?}} (candidates scored by SCORE lines, the best refined, the winner "
    "debriefed), workflow {task, workflow: {phases, resume?}} (named phases in order, each "
    "work gated by an optional checkCommand or a person's approval; resumable from its state "
    "file), or a preset "
    "{preset, task}. graph.debrief synthesises the terminal nodes. "
    "Every spawning call needs `why`: one sentence on why delegation beats doing it yourself. "
    "A parallel call of two or more tasks sizes each child: `tier` (fast, capable, deep) or "
    "`model` on every task, or once for the call. "
    "Use the least coordination that helps; do the task directly when you can. "
    "`maxCostUsd`, `maxTokens`, `maxGeneratedTokens` bound the whole flow's spend (size them as "
    "runaway backstops, about 3x the expected spend). "
    "`spec: {specFile, specSha256}` makes it an attested flow: every child must read that "
    "pinned file in full before any other tool, and each run says whether it provably did. "
    "`checkpoint: {before: spawn|finalize, message?}` asks the person first (refused where "
    "nobody can answer); `reflexion: {enabled: true}` gives the task the project's recent "
    "lessons and records one."
)
_MARKS = {RunStatus.COMPLETED: "✓", RunStatus.FAILED: "✗", RunStatus.SKIPPED: "–"}


def flow_tool_spec() -> ToolSpec:
    # Each call first hears the session's models: its tiers are the session's own.
    return ToolSpec(
        FLOW_TOOL, "Flow", _DESCRIPTION, tool_parameters(FLOW_TOOL_SCHEMA), session_models=True
    )


class FlowRow:
    """The live row: fed by the dispatcher's observer, drawn through ``show``."""

    def __init__(self, show: Callable[[str], None], planned: int = 1) -> None:
        self._show = show
        # How many runs the call plans (the ratio's denominator before they all started).
        self._planned = planned
        self._lock = threading.Lock()
        self._running: dict[str, str] = {}
        self._doing: dict[str, str] = {}
        self._settled: dict[str, RunResult] = {}
        self._order: list[str] = []
        # Each run's stage (``round-2``, ``iteration-1``, ``wave-3``), for the stage line.
        self._stages: dict[str, str] = {}
        # The call's budget lines, shown from before the first child starts.
        self._ceilings: list[str] = []

    def ceilings(self, lines: list[str]) -> None:
        with self._lock:
            self._ceilings = list(lines)
            text = self.text(done=False)
        self._show(text)

    def observe(self, job: ChildJob, result: RunResult | None) -> None:
        with self._lock:
            if job.key not in self._order:
                self._order.append(job.key)
                self._stages[job.key] = job.stage
            if result is None:
                self._running[job.key] = job.role.agent
            else:
                self._running.pop(job.key, None)
                self._settled[job.key] = result
            text = self.text(done=False)
        self._show(text)

    def activity(self, key: str, doing: str) -> None:
        """A running child's current tool or latest message (redacted: it is content)."""
        with self._lock:
            if key not in self._running:
                return
            self._doing[key] = redact(doing)
            text = self.text(done=False)
        self._show(text)

    def show_done(self) -> None:
        """The settled flow's row: its outcome replaces the ratio."""
        with self._lock:
            text = self.text(done=True)
        self._show(text)

    def inspect_text(self) -> str:
        """``/flows inspect``: the live row, plus the planned runs that have not started."""
        with self._lock:
            text = self.text(done=False)
            queued = self._planned - len(self._order)
        return text + (f"\n  · {queued} more not started yet" if queued > 0 else "")

    def text(self, *, done: bool) -> str:
        runs = max(len(self._order), self._planned)
        settled = len(self._settled)
        if runs <= 1:
            header = "flow"
        elif done:
            failed = sum(not r.ok for r in self._settled.values())
            header = f"flow: {failed} failed" if failed else f"flow: {settled} ok"
        else:
            header = f"flow: {settled}/{runs} settled"
        lines = [header, *(f"  {line}" for line in self._ceilings)]
        if not done:
            lines += self._stage_line()
        total = Usage()
        for key in self._order:
            result = self._settled.get(key)
            if result is None:
                doing = self._doing.get(key)
                suffix = f" — {doing}" if doing else ""
                lines.append(f"  … {key} ({self._running.get(key, '?')}) running{suffix}")
                continue
            total = total.plus(result.usage)
            code = f" {result.error_code}" if result.error_code is not None else ""
            lines.append(
                f"  {_MARKS[result.status]} {key} ({result.agent}) {result.status}{code} "
                f"{result.duration_ms / 1000:.1f}s"
            )
        lines.append(
            f"  tokens {total.input_tokens} in / {total.output_tokens} out, ${total.cost:.4f}"
        )
        return "\n".join(lines)

    def _stage_line(self) -> list[str]:
        """The stage the latest run belongs to, and how many of its runs settled, where a
        stage groups runs (a debate's round, a loop's iteration, a graph's wave): a chain's
        step is its own run and says nothing more."""
        if not self._order:
            return []
        stage = self._stages.get(self._order[-1], "")
        keys = [key for key in self._order if self._stages.get(key) == stage]
        if not stage or keys == [stage]:
            return []
        done = sum(key in self._settled for key in keys)
        return [f"  stage {stage}: {done}/{len(keys)} settled"]


def report_text(report: FlowReport) -> str:
    """What the model reads: the summary, then one section per run (pi-flows' layout)."""
    document = report.document()
    parts = [document["summary"], *document.get("budget", {}).get("lines", ())]
    for result in document["results"]:
        state = result["status"]
        if "error" in result:
            state += f" ({error_text(result['error'])})"
        parts.append(f"### {result['key']} {result['agent']} — {state}")
        if result["output"]:
            parts.append(result["output"])
    parts += [handoff_line(h) for h in document["handoffs"] if h["action"] != "passed"]
    for key in ("agents", "presets", "config", "modelRoster", "discoveryIssues"):
        if key in document:
            parts.append(f"{key}: {document[key]}")
    return "\n\n".join(parts)


def handoff_line(handoff: Mapping[str, Any]) -> str:
    """What the handoff policy did at one flagged boundary (docs/flows.md)."""
    found = [*handoff["markers"], *(f"{m} (compositional)" for m in handoff["compositional"])]
    return f"handoff {handoff['from']} → {handoff['to']}: {handoff['action']} ({', '.join(found)})"


def planned_runs(params: Mapping[str, Any]) -> int:
    """The runs a call plans, read off its raw fields: only the row's denominator, so a call
    that is refused later (and never draws a row) may give any answer."""
    graph = params.get("graph")
    panel = panel_runs(params)
    if panel is not None:
        return panel
    for runs in (
        params.get("tasks"),
        params.get("chain"),
        graph.get("nodes") if isinstance(graph, Mapping) else None,
    ):
        if isinstance(runs, list) and runs:
            return len(runs)
    if isinstance(params.get("route"), Mapping):
        return 2  # the controller, then the one agent it routes to
    loop = params.get("loop")
    if isinstance(loop, Mapping):
        # At most: every iteration's body, and its judge when there is one.
        iterations = loop.get("maxIterations", DEFAULT_LOOP_ITERATIONS)
        per_iteration = 2 if isinstance(loop.get("judge"), Mapping) else 1
        return (iterations if isinstance(iterations, int) else 1) * per_iteration
    dossier = params.get("dossier")
    if isinstance(dossier, Mapping) and isinstance(dossier.get("sections"), list):
        return len(dossier["sections"]) + 1  # every section, then the debrief
    worktree = params.get("worktree")
    if isinstance(worktree, Mapping) and isinstance(worktree.get("tasks"), list):
        # The writers and the integrator's review; a conflict adds one more each.
        return len(worktree["tasks"]) + 1
    refined = refining_runs(params)
    if refined is not None:
        return refined
    # A monitor's probes are not runs: its one run is the reactor.
    return 1


def refining_runs(params: Mapping[str, Any]) -> int | None:
    """At most: an evaluate's operator and its critics every round; a search's candidates and
    their scorers every round, then the debrief."""
    evaluate, search = params.get("evaluate"), params.get("search")
    if isinstance(evaluate, Mapping):
        critics = evaluate.get("redteam")
        panel = len(critics) if isinstance(critics, list) else 1
        rounds = evaluate.get("maxIterations", DEFAULT_EVALUATE_ITERATIONS)
        return (rounds if isinstance(rounds, int) else 1) * (1 + panel)
    if isinstance(search, Mapping):
        made, rounds = search.get("candidates", 3), search.get("maxRounds", 2)
        if isinstance(made, int) and isinstance(rounds, int):
            return made * 2 * rounds + 1
    return None


def panel_runs(params: Mapping[str, Any]) -> int | None:
    """The runs of a vote (each voter, then the debrief if any), a debate (each participant
    every round, then the adjudicator) or a debriefed graph (each node, then the debrief)."""
    vote, debate, graph = (params.get(key) for key in ("vote", "debate", "graph"))
    if isinstance(vote, Mapping):
        voters = vote.get("voters")
        count = len(voters) if isinstance(voters, list) else vote.get("count", 3)
        return (count if isinstance(count, int) else 1) + isinstance(vote.get("debrief"), Mapping)
    if isinstance(debate, Mapping) and isinstance(debate.get("participants"), list):
        rounds = debate.get("rounds", 2)
        return len(debate["participants"]) * (rounds if isinstance(rounds, int) else 1) + 1
    if isinstance(graph, Mapping) and isinstance(graph.get("nodes"), list) and "debrief" in graph:
        return len(graph["nodes"]) + 1
    return None


def refusal(error: FlowError) -> ToolFailure:
    """A refused call as the tool failure the model reads, with the catalogue's advice."""
    advice = error.document()
    return ToolFailure(
        f"{error.code}: {error.message}. Cause: {advice['cause']}. Fix: {advice['fix']}. "
        f"Retryable unchanged: {'yes' if advice['retryable'] else 'no'}."
    )
