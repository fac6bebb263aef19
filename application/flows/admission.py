"""Admission: everything a call could be refused for, checked before its first child spawns.

Every role's agent must be visible in the call's ``agentScope`` (``UNKNOWN_AGENT``); a project
agent needs approval, which a headless run cannot ask for (``PROJECT_AGENT_APPROVAL_REQUIRED``
unless the call says ``confirmProjectAgents: false`` after review) and an interactive one asks
for once the whole call passed (``Admitted.approvals``); ``bash-ro`` needs the
runtime's Landlock isolation or the children's in-extension allowlist
(``BASH_READONLY_UNENFORCEABLE`` when neither); a tier the model scope refused needs a model
named for the role (``MODEL_SCOPE_UNSATISFIABLE``); a working directory must exist;
a graph must be acyclic; concurrent writers may not share a directory (``SHARED_WRITE_CWD``).
All problems of all roles are reported at once.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Callable

import attrs

from application.flows.tracing import FlowTrace
from application.ports import FileSystem, IsolationSupport
from domain.agents import AgentCatalog, AgentSource, UnavailableAgent
from domain.errors import ErrorCode
from domain.flows.call import FlowCall, Mode
from domain.flows.call_roles import FlowTask
from domain.flows.errors import FlowError, Problem
from domain.flows.graph import check_graph
from domain.flows.models import KnownModel
from domain.flows.roles import ResolvedRole, TierBinding, resolve_role, scoped
from domain.flows.tools import NO_SWITCHES, BashRoSwitches, bash_ro_enforcement
from domain.flows.violations import RANK
from domain.flows.write_guard import WriterRole, check_shared_writes

# Admission's own codes rank after the schema's.
RANKED = (
    *RANK,
    ErrorCode.UNKNOWN_AGENT,
    ErrorCode.PROJECT_AGENT_APPROVAL_REQUIRED,
    ErrorCode.BASH_READONLY_UNENFORCEABLE,
    ErrorCode.MODEL_SCOPE_UNSATISFIABLE,
)


@attrs.frozen
class ProjectFile:
    """A project agent or preset a call uses: the person approves it before anything spawns."""

    kind: str  # "agent" or "preset"
    name: str
    origin: str
    path: str  # where the call names it

    def line(self) -> str:
        return f"{self.kind} '{self.name}' ({self.origin})"


@attrs.frozen
class Admitted:
    """A call that passed admission, and how each of its roles resolves. ``approvals``: the
    project agents an interactive run must still have approved (once each, in call order)."""

    call: FlowCall
    catalog: AgentCatalog
    roles: dict[FlowTask, ResolvedRole]
    approvals: tuple[ProjectFile, ...] = ()

    def resolve(self, role: FlowTask) -> ResolvedRole:
        return self.roles[role]


def admit(
    call: FlowCall,
    catalog: AgentCatalog,
    fs: FileSystem,
    *,
    base_cwd: str,
    roster: tuple[TierBinding, ...],
    session_model: str | None,
    isolation: IsolationSupport,
    models: tuple[KnownModel, ...] = (),
    session_provider: str | None = None,
    interactive: bool = False,
    bash_ro_allowlist: bool = False,
    bash_ro_switches: BashRoSwitches = NO_SWITCHES,
) -> Admitted:
    if call.mode is Mode.GRAPH:
        assert call.graph is not None
        check_graph(call.graph)
    in_scope = scoped(catalog, call.agent_scope)
    problems: list[Problem] = []
    roles: dict[FlowTask, ResolvedRole] = {}
    writers: list[WriterRole] = []
    approvals: dict[str, ProjectFile] = {}
    for path, role in call.roles():
        found = in_scope.get(role.agent)
        agent_path = f"{path}.agent"
        if isinstance(found, UnavailableAgent):
            problems.append(
                Problem(
                    ErrorCode.UNKNOWN_AGENT,
                    agent_path,
                    f"{found.describe()} in agentScope '{call.agent_scope}'",
                    role.agent,
                    in_scope.enabled_names(),
                )
            )
            continue
        if found.source is AgentSource.PROJECT and call.confirm_project_agents and interactive:
            approvals.setdefault(
                role.agent, ProjectFile("agent", role.agent, found.origin, agent_path)
            )
        elif found.source is AgentSource.PROJECT and call.confirm_project_agents:
            problems.append(
                Problem(
                    ErrorCode.PROJECT_AGENT_APPROVAL_REQUIRED,
                    agent_path,
                    f"agent '{role.agent}' is a project agent ({found.origin}); a headless run "
                    "cannot ask to approve it",
                    True,
                    False,
                )
            )
            continue
        resolved = resolve_role(
            call,
            role,
            found,
            base_cwd=base_cwd,
            roster=roster,
            session_model=session_model,
            models=models,
            session_provider=session_provider,
        )
        if resolved.refused_tier is not None:
            problems.append(_scope_refusal(path, role, resolved.refused_tier))
        enforceable = bash_ro_enforcement(
            kernel=isolation.mode == "landlock",
            allowlist=bash_ro_allowlist,
            switches=bash_ro_switches,
        )
        if resolved.tools.read_only_bash and enforceable is None:
            problems.append(
                Problem(
                    ErrorCode.BASH_READONLY_UNENFORCEABLE,
                    f"{path}.tools" if role.tools is not None else "$.tools",
                    _unenforceable(isolation, bash_ro_switches),
                    resolved.tools.describe(),
                    "tools without bash-ro, a Linux >= 6.2 host with Landlock, or children "
                    "started with pi-squad's extension",
                )
            )
        # ``<cwd>/.``: a symlink to a directory is a directory to the child (see ``_cwd_key``).
        if not fs.is_dir(posixpath.join(resolved.cwd, ".")):
            where = f"{path}.cwd" if role.cwd is not None else "$.cwd"
            problems.append(Problem(ErrorCode.FLOW_INVALID, where, "is not an existing directory"))
        roles[role] = resolved
        writers.append(WriterRole(path, resolved.agent, resolved.tools, _cwd_key(fs, resolved.cwd)))
    if problems:
        ordered = sorted(problems, key=lambda p: (RANKED.index(p.code), p.path))
        raise FlowError(tuple(ordered))
    check_shared_writes(call, writers)
    return Admitted(call=call, catalog=in_scope, roles=roles, approvals=tuple(approvals.values()))


def declined(files: tuple[ProjectFile, ...]) -> FlowError:
    """The refusal of a call whose project files the person did not approve (the headless
    refusal's codes: nothing spawned)."""
    codes = {
        "agent": ErrorCode.PROJECT_AGENT_APPROVAL_REQUIRED,
        "preset": ErrorCode.PROJECT_PRESET_APPROVAL_REQUIRED,
    }
    return FlowError(
        tuple(
            Problem(
                codes[file.kind],
                file.path,
                f"{file.kind} '{file.name}' is a project {file.kind} ({file.origin}); its "
                "approval was declined",
                True,
                False,
            )
            for file in sorted(files, key=lambda f: f.kind != "preset")
        )
    )


def _scope_refusal(path: str, role: FlowTask, tier: str) -> Problem:
    where = f"{path}.tier" if role.tier == tier else "$.tier"
    return Problem(
        ErrorCode.MODEL_SCOPE_UNSATISFIABLE,
        where,
        f"tier '{tier}' cannot be bound inside the model scope (enabledModels) and no model is "
        "named for the role, the call or the agent; showConfig's modelRoster says why",
        tier,
    )


def _cwd_key(fs: FileSystem, cwd: str) -> object:
    """The directory's identity (device, inode), so two spellings of one directory (a
    symlink, ``a/../b``) are one; the normalised path where the identity is unknown."""
    # ``identity`` does not follow a final symlink; through ``<cwd>/.`` the final component is
    # the directory itself, so a symlinked spelling yields its target's identity.
    identity = fs.identity(posixpath.join(cwd, "."))
    return (identity.device, identity.inode) if identity is not None else cwd


def _unenforceable(isolation: IsolationSupport, switches: BashRoSwitches) -> str:
    kernel = (
        "PI_FLOWS_BASH_RO_NO_SANDBOX=1 switches the sandbox off"
        if switches.no_sandbox
        else f"Landlock write isolation is unavailable: {isolation.reason}"
    )
    if switches.require_sandbox:
        return f"PI_FLOWS_BASH_RO_REQUIRE_SANDBOX=1 requires the kernel sandbox, and {kernel}"
    return (
        "bash-ro needs the kernel sandbox or the in-child allowlist (children loading "
        f"pi-squad's extension), and neither is available here: {kernel}"
    )


# Asks the person, once per call, to approve the project agents and presets it uses.
Approver = Callable[[tuple[ProjectFile, ...]], bool]


def ask_approval(
    files: tuple[ProjectFile, ...],
    approve: Approver | None,
    trace: FlowTrace | None,
    cancelled: threading.Event,
) -> None:
    """Asked once the whole call passed (a call refused anyway asks nothing). A call
    cancelled before or while the question is open is not refused: it spawns nothing, as
    the dispatcher starts cancelled. The person's answer is an ``approval`` event."""
    if not files or approve is None or cancelled.is_set():
        return
    approved = approve(files)
    if cancelled.is_set():
        return
    if trace is not None:
        trace.approval([f"{file.kind}:{file.name}" for file in files], approved=approved)
    if not approved:
        raise declined(files)
