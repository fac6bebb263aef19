"""A flow call: which mode, its bounds, its roles, as values; and the one way a JSON call
becomes one (:func:`parse_call`).

The path: the mode is found from the call's keys (exactly one, else ``INVALID_MODE``); the call
is checked against that mode's closed, versioned schema (``domain/spec/schemas/
flow-<mode>-v1.schema.json``, the same loader and validator as every other input); each
violation is mapped to pi-flows' catalogue code (``WHY_REQUIRED``, ``INVALID_CONCURRENCY``...)
with its path, the measured and the allowed value; then the project's one converter
(``domain.inputs.INPUT_CONVERTER``) structures it. Pure: nothing here spawns, reads or waits.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs
import cattrs

from domain.errors import ErrorCode
from domain.flows.call_checks import check_contracts, check_monitor, structure_failure
from domain.flows.call_roles import AgentRef, FlowTask, Graph, RoleSettings
from domain.flows.contracts import Contract
from domain.flows.errors import FlowError, refuse
from domain.flows.handoff_policy import DEFAULT_POLICY, HandoffPolicy
from domain.flows.mode_fields import (
    Debate,
    Dossier,
    Evaluate,
    Loop,
    Monitor,
    Route,
    Search,
    Vote,
)
from domain.flows.orchestrate_fields import Orchestrate
from domain.flows.tools import ToolChoice
from domain.flows.violations import problems_of
from domain.flows.workflow_fields import Workflow, check_workflow
from domain.flows.worktree_fields import Worktree, check_ids
from domain.flows.wrappers import Checkpoint, Reflexion
from domain.inputs import INPUT_CONVERTER
from domain.spec.schema import violations
from domain.strict_json import json_type_name

MAX_PARALLEL_TASKS = 8
DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT_MS = 36_000_000


class Mode(enum.StrEnum):
    LIST = "list"
    SHOW_CONFIG = "showConfig"
    SINGLE = "single"
    PARALLEL = "parallel"
    CHAIN = "chain"
    GRAPH = "graph"
    ROUTE = "route"
    LOOP = "loop"
    EVALUATE = "evaluate"
    SEARCH = "search"
    VOTE = "vote"
    DEBATE = "debate"
    DOSSIER = "dossier"
    MONITOR = "monitor"
    ORCHESTRATE = "orchestrate"
    WORKFLOW = "workflow"
    WORKTREE = "worktree"

    @property
    def spawns(self) -> bool:
        return self not in (Mode.LIST, Mode.SHOW_CONFIG)


# The key that names each built mode, and the schema that closes it.
MODE_KEYS: dict[str, Mode] = {
    "list": Mode.LIST,
    "showConfig": Mode.SHOW_CONFIG,
    "agent": Mode.SINGLE,
    "tasks": Mode.PARALLEL,
    "chain": Mode.CHAIN,
    "graph": Mode.GRAPH,
    "route": Mode.ROUTE,
    "loop": Mode.LOOP,
    "evaluate": Mode.EVALUATE,
    "search": Mode.SEARCH,
    "vote": Mode.VOTE,
    "debate": Mode.DEBATE,
    "dossier": Mode.DOSSIER,
    "monitor": Mode.MONITOR,
    "orchestrate": Mode.ORCHESTRATE,
    "workflow": Mode.WORKFLOW,
    "worktree": Mode.WORKTREE,
}
SCHEMAS: dict[Mode, str] = {
    Mode.LIST: "flow-list-v1",
    Mode.SHOW_CONFIG: "flow-show-config-v1",
    Mode.SINGLE: "flow-single-v1",
    Mode.PARALLEL: "flow-parallel-v1",
    Mode.CHAIN: "flow-chain-v1",
    Mode.GRAPH: "flow-graph-v1",
    Mode.ROUTE: "flow-route-v1",
    Mode.LOOP: "flow-loop-v1",
    Mode.EVALUATE: "flow-evaluate-v1",
    Mode.SEARCH: "flow-search-v1",
    Mode.VOTE: "flow-vote-v1",
    Mode.DEBATE: "flow-debate-v1",
    Mode.DOSSIER: "flow-dossier-v1",
    Mode.MONITOR: "flow-monitor-v1",
    Mode.ORCHESTRATE: "flow-orchestrate-v1",
    Mode.WORKFLOW: "flow-workflow-v1",
    Mode.WORKTREE: "flow-worktree-v1",
}
# pi-flows modes this version does not run yet: named so the refusal says so.
UNBUILT_MODES: tuple[str, ...] = ()


@attrs.frozen
class FlowSpec:
    """An attested flow's brief: the file every child must read in full, pinned by its
    SHA-256 (``spec: {specFile, specSha256}``; a relative path resolves against the call's
    directory)."""

    spec_file: str
    spec_sha256: str


@attrs.frozen
class TraceContext:
    """``traceContext``: the eval harness's linkage ids, copied (redacted) to every span."""

    run_id: str
    case_id: str
    trial_id: str
    trial_index: int | None = None
    arm: str | None = None
    attempt: int | None = None


@attrs.frozen
class FlowCall(RoleSettings):
    """One call, every default applied. Exactly one of the mode fields is set (``mode``). Its
    role settings are the ones every role falls back to."""

    mode: Mode
    why: str | None = None
    agent_scope: str = "user"
    confirm_project_agents: bool = True
    allow_shared_write_cwd: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    record_content: bool = True
    redact_secrets: bool = True
    handoff_policy: HandoffPolicy = DEFAULT_POLICY
    # Per-mode minimums (``{"chain": "fail"}``); not hashed, a dict is not hashable.
    mode_handoff_policy: dict[str, HandoffPolicy] = attrs.field(factory=dict, hash=False)
    spec: FlowSpec | None = None
    # Trace export (``application.flows.trace_setup``); the environment's defaults apply after.
    trace_file: str | None = None
    trace_strict: bool = False
    trace_label: str | None = None
    trace_context: TraceContext | None = None
    # What an incomplete return envelope does.
    incomplete_handoff_policy: str = "fail"
    # The flow budget (``domain.flows.budget``): shared by every child; ``None`` is uncapped.
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_generated_tokens: int | None = None
    # What wraps any spawning mode (``domain.flows.wrappers``): a person's checkpoint, and the
    # project's lessons from earlier runs.
    checkpoint: Checkpoint | None = None
    reflexion: Reflexion | None = None
    # Mode fields.
    list: bool = False
    show_config: bool = False
    agent: str | None = None
    task: str | None = None
    tasks: tuple[FlowTask, ...] = ()
    chain: tuple[FlowTask, ...] = ()
    graph: Graph | None = None
    route: Route | None = None
    loop: Loop | None = None
    evaluate: Evaluate | None = None
    search: Search | None = None
    vote: Vote | None = None
    debate: Debate | None = None
    dossier: Dossier | None = None
    monitor: Monitor | None = None
    orchestrate: Orchestrate | None = None
    workflow: Workflow | None = None
    worktree: Worktree | None = None

    def roles(self) -> tuple[tuple[str, FlowTask], ...]:
        """Every role the call would spawn, with the JSON path of its definition: what
        admission resolves and checks before the first spawn."""
        if self.mode is Mode.SINGLE:
            assert self.agent is not None
            # A contract may replace the task: its objective is the goal.
            return (("$", FlowTask(self.agent, self.task or "")),)
        if self.mode is Mode.PARALLEL:
            return tuple((f"$.tasks[{i}]", task) for i, task in enumerate(self.tasks))
        if self.mode is Mode.CHAIN:
            return tuple((f"$.chain[{i}]", step) for i, step in enumerate(self.chain))
        if self.mode is Mode.GRAPH:
            assert self.graph is not None
            nodes = [(f"$.graph.nodes[{i}]", n.as_task()) for i, n in enumerate(self.graph.nodes)]
            if self.graph.debrief is not None:
                nodes.append(("$.graph.debrief", self.graph.debrief.as_task(self.task or "")))
            return tuple(nodes)
        goal = self.task or ""
        if self.vote is not None:
            return tuple((path, ref.as_task(goal)) for path, ref in self.vote.roles())
        if self.debate is not None:
            return tuple((path, ref.as_task(goal)) for path, ref in self.debate.roles())
        if self.orchestrate is not None:
            return tuple(self.orchestrate.roles(self.task))
        if self.worktree is not None:
            return tuple(self.worktree.roles(goal))
        if self.workflow is not None:
            return tuple(self.workflow.roles(goal))
        if self.mode is Mode.ROUTE:
            assert self.route is not None
            route = self.route
            fallback = () if route.fallback is None else (("$.route.fallback", route.fallback),)
            named = [(f"$.route.candidates[{i}]", c) for i, c in enumerate(route.candidates)]
            return (
                ("$.route.controller", route.controller.as_task(goal)),
                *((path, FlowTask(name, goal)) for path, name in [*named, *fallback]),
            )
        if self.mode is Mode.LOOP:
            assert self.loop is not None
            judge = self.loop.judge
            return (("$.loop.body", self.loop.body.as_task(goal)),) + (
                () if judge is None else (("$.loop.judge", judge.as_task(goal)),)
            )
        if self.mode is Mode.EVALUATE:
            assert self.evaluate is not None
            critics = self.evaluate.critics
            at = (
                [""]
                if isinstance(self.evaluate.redteam, AgentRef)
                else [f"[{i}]" for i in range(len(critics))]
            )
            return (
                ("$.evaluate.operator", self.evaluate.operator.as_task(goal)),
                *(
                    (f"$.evaluate.redteam{i}", c.as_task(goal))
                    for i, c in zip(at, critics, strict=True)
                ),
            )
        if self.mode is Mode.SEARCH:
            assert self.search is not None
            search = self.search
            return tuple(
                (f"$.search.{name}", ref.as_task(goal))
                for name, ref in (
                    ("generator", search.generator),
                    ("scorer", search.scorer),
                    ("debrief", search.debrief),
                )
            )
        if self.mode is Mode.DOSSIER:
            assert self.dossier is not None
            sections = self.dossier.sections
            return (
                *((f"$.dossier.sections[{i}]", section) for i, section in enumerate(sections)),
                ("$.dossier.debrief", self.dossier.debrief.as_task(goal)),
            )
        if self.mode is Mode.MONITOR:
            assert self.monitor is not None
            return (("$.monitor.reactor", self.monitor.reactor.as_task(goal)),)
        return ()


def detect_mode(document: dict[str, Any]) -> Mode:
    """Exactly one mode per call (``INVALID_MODE`` otherwise); single's agent needs a task."""
    named = [key for key in MODE_KEYS if key in document]
    unbuilt = [key for key in UNBUILT_MODES if key in document]
    if "preset" in document:
        # Presets are expanded before mode detection (``domain.flows.presets.expand``).
        raise refuse(ErrorCode.FLOW_INVALID, "$.preset", "a preset must be expanded first")
    if unbuilt:
        raise refuse(
            ErrorCode.INVALID_MODE,
            f"$.{unbuilt[0]}",
            f"mode {unbuilt[0]} is not built yet in this version",
            measured=unbuilt[0],
            allowed=[str(mode) for mode in Mode],
        )
    if len(named) != 1:
        found = "no mode" if not named else f"{len(named)} modes ({', '.join(named)})"
        raise refuse(
            ErrorCode.INVALID_MODE,
            "$",
            f"a call names exactly one mode; found {found}",
            measured=named,
            allowed=list(MODE_KEYS),
        )
    mode = MODE_KEYS[named[0]]
    if mode is Mode.SINGLE and "task" not in document and "contract" not in document:
        raise refuse(
            ErrorCode.INVALID_MODE,
            "$.task",
            "single mode needs an agent and a task (or a contract)",
            measured=["agent"],
            allowed=["agent", "task", "contract"],
        )
    return mode


INPUT_CONVERTER.register_structure_hook(ToolChoice, lambda value, _type: ToolChoice.of(value))
INPUT_CONVERTER.register_structure_hook(Contract, lambda value, _type: Contract.of(value))


def _panel(value: object, _type: object) -> AgentRef | tuple[AgentRef, ...]:
    """``evaluate.redteam``: one critic, or a list of them (a panel)."""
    if isinstance(value, list):
        return tuple(INPUT_CONVERTER.structure(item, AgentRef) for item in value)
    return INPUT_CONVERTER.structure(value, AgentRef)


INPUT_CONVERTER.register_structure_hook(AgentRef | tuple[AgentRef, ...], _panel)


def parse_call(document: object) -> FlowCall:
    """The call as a value, or :class:`FlowError` naming every violation, the first one's
    code ranked by the catalogue's admission order. Nothing is spawned either way."""
    if not isinstance(document, dict):
        raise refuse(
            ErrorCode.FLOW_INVALID,
            "$",
            "a flow call is a JSON object",
            measured=json_type_name(document),
            allowed="object",
        )
    mode = detect_mode(document)
    found = problems_of(violations(SCHEMAS[mode], document))
    if found:
        raise FlowError(found)
    try:
        call = INPUT_CONVERTER.structure({**document, "mode": str(mode)}, FlowCall)
    except cattrs.ClassValidationError as exc:
        raise structure_failure(exc) from None
    if call.mode.spawns and (call.why is None or not call.why.strip()):
        raise refuse(ErrorCode.WHY_REQUIRED, "$.why", "a spawning mode needs a non-empty why")
    # Before the roles are read: a phase that is neither work nor approval has no role.
    check_workflow(call.workflow)
    check_contracts(call.contract, call.roles())
    check_monitor(call.monitor)
    check_ids(call.worktree)
    return call
