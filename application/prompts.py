"""What a child is told: system prompt sections and the first RPC prompt.

In file mode nothing here inlines ``goal``, titles, descriptions or any other spec field
(contract §6): the child gets a manifest and reads the canonical bytes itself. Dynamic
non-spec text (mail, rework feedback, a task added after creation) is delivered normally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from domain.agents import AgentDefinition
from domain.attestation.timestamps import format_rfc3339_millis
from domain.squad.messages import MailboxEntry
from domain.squad.model import Squad, Task, TaskStatus

SECTION_SEPARATOR = "\n---\n\n"


def system_prompt(
    squad: Squad, task: Task, agent: AgentDefinition, tasks: Mapping[str, Task]
) -> str:
    sections: list[str] = []
    if squad.spec is not None:
        spec = squad.spec
        sections.append(
            "\n".join(
                [
                    f"# pi-squad: agent {agent.name} ({agent.role})",
                    f"You work on task {task.id} of squad {squad.id}.",
                    f"The squad's contract is one canonical spec file: {spec.bytes} bytes, "
                    f"SHA-256 {spec.sha256}, {spec.chunk_count} chunks.",
                    "Read all of it with squad_spec_read before anything else; your task is the "
                    f"entry with id {task.id!r}. Other tools stay blocked until every chunk "
                    "has been delivered.",
                    "When the task is done, reply with a complete report of what you did and "
                    "how you verified it. Do not stop early: prose alone does not complete a "
                    "task without the read attestation.",
                ]
            )
        )
    else:
        team = ", ".join(sorted({t.agent for t in tasks.values()}))
        sections.append(
            "\n".join(
                [
                    f"# pi-squad: agent {agent.name} ({agent.role})",
                    f"Squad goal: {squad.goal}",
                    f"Team: {team}",
                    "Mention another agent as @name to send it a message. When your task is "
                    "done, reply with a complete report; if you are blocked, say exactly what "
                    "you need.",
                ]
            )
        )
    if agent.prompt.strip():
        sections.append(f"# Identity\n{agent.prompt.strip()}")
    if squad.spec is None or task.file_spec_delta:
        sections.append(task_section(task))
    if task.retry_of is not None and task.qa_feedback:
        sections.append(
            f"# Rework of {task.retry_of}\nQA reported:\n{task.qa_feedback}\n\n"
            "Reproduce each problem first, then fix it, then verify the fix."
        )
    if squad.spec is None:
        done = [t for t in tasks.values() if t.id in task.depends and t.status is TaskStatus.DONE]
        for dependency in done:
            sections.append(
                f"# Completed dependency {dependency.id}: {dependency.title}\n"
                f"{dependency.output or '(no output recorded)'}"
            )
    return SECTION_SEPARATOR.join(sections)


def task_section(task: Task) -> str:
    return f"# Your Task\n**{task.title}**\n\n{task.description or '(no additional description)'}"


def first_prompt(squad: Squad, task: Task, mail: Sequence[MailboxEntry], *, resumed: bool) -> str:
    lines: list[str] = []
    if squad.spec is not None:
        spec = squad.spec
        verb = "Resume" if resumed else "Start"
        lines.append(f"{verb} file-spec squad task {task.id}.")
        lines.append(
            f"Canonical spec: SHA-256 {spec.sha256}, {spec.bytes} bytes, {spec.chunk_count} chunks."
        )
        lines.append(
            "Read with squad_spec_read every chunk your system prompt lists as missing (after a "
            "restart it can list chunks you saw before: a read counts once it is recorded), "
            "then do the task."
        )
        if task.file_spec_delta:
            lines.append("")
            lines.append(task_section(task))
    elif resumed:
        lines.append(f"Resume your existing task: {task.title}")
        lines.append("Continue from where you stopped; do not start over.")
    else:
        lines.append(f"Your task: {task.title}")
        lines.append("")
        lines.append(task.description)
    if task.error and task.error.startswith("Completion rejected"):
        lines.append("")
        lines.append(f"[squad] {task.error}")
    if mail:
        lines.append("")
        lines.append("# Messages received while you were offline")
        for entry in mail:
            stamp = format_rfc3339_millis(entry.message.ts)
            lines.append(f"[{stamp}] {entry.message.sender}:")
            lines.append(entry.message.text)
            if entry.message.expects_reply:
                lines.append("[Direct response required by main orchestrator]")
        lines.append("Read and act on every complete message above.")
    elif resumed:
        lines.append("")
        lines.append("(The previous process ended before final settlement.)")
    return "\n".join(lines)
