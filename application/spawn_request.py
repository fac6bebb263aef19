"""What a child is started with: the one ``SpawnRequest`` builder every face spawns through
(``child_request``), and a squad task's request from persisted state only (``spawn_request``).

A squad task's request is pure: the session choice (resume the task's own session, fork a
source task's, or a new one in the task's ledger directory), the prompts (never spec content
in file mode, contract §6), the §6 environment, the tool allowlist (the reader force-added for
a file child), the model and thinking level (agent definition, then the squad's agent
setting, then the run's defaults) and, when ``squad_root`` is given, the confinement the
child's process tree runs under.
"""

from __future__ import annotations

from collections.abc import Mapping

from application.child.role import READER_TOOL
from application.ports import (
    Confinement,
    ForkSession,
    NewSession,
    ResumeSession,
    SessionChoice,
    SpawnRequest,
)
from application.prompts import first_prompt, system_prompt
from domain.agents import AgentDefinition
from domain.child_environment import ChildEnvironment
from domain.squad.layout import SESSION_DIR
from domain.squad.messages import MailboxEntry
from domain.squad.model import Squad, Task

__all__ = ["READER_TOOL", "child_request", "spawn_request"]


def child_request(
    *,
    owner: str,
    task_id: str,
    cwd: str,
    session: SessionChoice,
    system_prompt: str,
    first_prompt: str,
    environment: Mapping[str, str] | None = None,
    model: str | None = None,
    thinking: str | None = None,
    provider: str | None = None,
    tools: tuple[str, ...] | None = None,
    confinement: Confinement | None = None,
    observe_output: bool = False,
    closed_context: bool = False,
) -> SpawnRequest:
    """One child's start. ``owner`` names what spawned it (a squad's id, a flow's id,
    ``planner``, ``delegation``); ``environment`` defaults to a legacy child's (only
    ``PI_SQUAD_CHILD=1``: its bridge registers no squad, flow or spec tool in it)."""
    return SpawnRequest(
        squad_id=owner,
        task_id=task_id,
        cwd=cwd,
        session=session,
        system_prompt=system_prompt,
        first_prompt=first_prompt,
        environment=ChildEnvironment().to_environ() if environment is None else environment,
        model=model,
        thinking=thinking,
        tools=tools,
        provider=provider,
        confinement=confinement,
        observe_output=observe_output,
        closed_context=closed_context,
    )


def _session(task: Task, tasks: Mapping[str, Task], ledger_dir: str) -> SessionChoice:
    session_dir = f"{ledger_dir}/{SESSION_DIR}"
    if task.session is not None:
        return ResumeSession(task.session.file)
    if task.fork_from_task_id is not None:
        source = tasks.get(task.fork_from_task_id)
        if source is not None and source.session is not None:
            return ForkSession(source.session.file, session_dir)
    return NewSession(session_dir)


def spawn_request(
    squad: Squad,
    task: Task,
    agent: AgentDefinition,
    tasks: Mapping[str, Task],
    *,
    mail: tuple[MailboxEntry, ...],
    ledger_dir: str,
    squad_root: str | None,
    default_provider: str | None,
    default_model: str | None,
) -> SpawnRequest:
    tools = agent.tools
    if squad.spec is not None and tools is not None and READER_TOOL not in tools:
        # An allowlist would hide the reader; the guard, not the list, is authoritative.
        tools = (*tools, READER_TOOL)
    model, thinking = agent.model, agent.thinking
    setting = squad.agent_setting(task.agent)
    if setting is not None:
        model, thinking = setting.model or model, setting.thinking or thinking
    return child_request(
        owner=squad.id,
        task_id=task.id,
        cwd=squad.cwd,
        session=_session(task, tasks, ledger_dir),
        system_prompt=system_prompt(squad, task, agent, tasks),
        first_prompt=first_prompt(squad, task, mail, resumed=task.session is not None),
        environment=ChildEnvironment.for_task(squad, task.id).to_environ(),
        tools=tools,
        # Policy for values still unset: the run's defaults (e.g. the offline demo's model).
        provider=default_provider,
        model=model or default_model,
        thinking=thinking,
        # Every streamed piece counted: the monitor stops a message past its size bound.
        observe_output=True,
        confinement=None
        if squad_root is None
        else Confinement(squad_root=squad_root, ledger_dir=ledger_dir, project_dir=squad.cwd),
    )
