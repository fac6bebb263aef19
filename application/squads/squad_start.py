"""The ``squad`` tool's work: publish a file squad from its spec, or an inline squad from its
goal (planning its tasks when none are given), and say what was started. The caller then drives
it; ``progress`` shows each slow step in the tool's row."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from application.ports import ChildRuntime, TempDirs
from application.squads.create_squad import (
    PublishedSquad,
    Publisher,
    create_squad,
    publish_inline_squad,
)
from application.squads.planner import plan_tasks, run_planner
from application.squads.squad_call import FileCall, InlineCall, inline_tasks
from domain.agents import AgentCatalog


@attrs.frozen
class StartedSquad:
    published: PublishedSquad
    summary: str
    warnings: tuple[str, ...]

    @property
    def squad_id(self) -> str:
        return self.published.squad.id

    def text(self) -> str:
        lines = [
            f'Squad "{self.squad_id}" started with {len(self.published.tasks)} tasks.',
            "",
            self.summary,
        ]
        if self.warnings:
            lines += ["", "⚠️ Plan warnings:", *(f"- {w}" for w in self.warnings)]
        lines += [
            "",
            "The squad runs in the background and reports back when it needs review. End your "
            "turn now; do not poll squad_status.",
        ]
        return "\n".join(lines)


def start_squad(
    call: FileCall | InlineCall,
    *,
    publisher: Publisher,
    catalog: AgentCatalog,
    cwd: str,
    planner_runtime: Callable[[], ChildRuntime],
    temp_dirs: TempDirs,
    progress: Callable[[str], None],
) -> StartedSquad:
    if isinstance(call, FileCall):
        progress(f"Reading {call.spec_file}: its hash, schema, plan and artifacts…")
        published = create_squad(
            publisher, catalog, spec_file=call.spec_file, spec_sha256=call.spec_sha256, cwd=cwd
        )
        spec = published.squad.spec
        assert spec is not None
        summary = (
            f"Canonical spec: {spec.path}\nSHA-256: {spec.sha256}\nBytes: {spec.bytes}\n"
            f"Tasks: {len(published.tasks)}"
        )
        return StartedSquad(published, summary, published.warnings)
    raw_tasks = call.tasks
    if raw_tasks is None:
        progress("Planning the squad's tasks…")
        plan = run_planner(
            planner_runtime(),
            goal=call.goal,
            catalog=catalog,
            cwd=cwd,
            clock=publisher.clock,
            temp_dirs=temp_dirs,
        )
        raw_tasks = tuple(plan_tasks(plan))
    progress("Publishing the squad…")
    tasks, notes = inline_tasks(raw_tasks, catalog, now=publisher.clock.now())
    published = publish_inline_squad(
        publisher, goal=call.goal, tasks=tasks, agents=call.agents, config=call.config, cwd=cwd
    )
    summary = "\n".join(
        f"{t.id} → {t.agent}: {t.title}"
        + (f" (depends: {', '.join(t.depends)})" if t.depends else "")
        for t in published.tasks
    )
    return StartedSquad(published, summary, tuple(notes))
