"""The ``worktree`` harness on fakes: a recording git, scripted children, the check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from application.flows.flow_report import FlowReport
from application.flows.worktree_flow import WorktreeFlow
from tests.fakes.child_runtime import FakeChild
from tests.fakes.clock import SequentialIds
from tests.fakes.flows import READ_ONLY, FakeAgentDirectory, FakeCheckRun, agent
from tests.fakes.git_worktrees import FakeGitWorktrees
from tests.unit.application.flows.engine import WHY, Engine

AGENTS = FakeAgentDirectory(bundled=(agent("operator"), agent("recon", tools=READ_ONLY)))
RUN = "000000000000"
SCRATCH = f"/tmp/pi-flow-{RUN}-scratch"
TASKS = [
    {"id": "api", "agent": "operator", "task": "add the endpoint for {task}"},
    {"id": "docs", "agent": "operator", "task": "document it"},
]


def call(**worktree: Any) -> dict[str, Any]:
    return {"task": "search", "why": WHY, "worktree": {"tasks": TASKS, **worktree}}


class Flow:
    def __init__(self, base: Path, git: FakeGitWorktrees | None = None, **check: Any) -> None:
        self.check = FakeCheckRun(**check)
        self.git = git or FakeGitWorktrees()
        # The engine's directory (``Engine.cwd``) is the source checkout's root.
        self.git.toplevel_of = {str(base / "project"): "/repo"}
        worktrees = WorktreeFlow(self.git, self.check, SequentialIds())
        self.engine = Engine(base, AGENTS, checks=self.check, worktrees=worktrees)

    def writes(self, key: str, path: str, content: str, answer: str = "done") -> None:
        def script(child: FakeChild) -> None:
            self.git.write(child.request.cwd, path, content)
            child.say(answer)
            child.settle()

        self.engine.scripted.scripts[key] = script

    def both_write(self, api: tuple[str, str], docs: tuple[str, str]) -> None:
        """Each writer changes one file (``(path, content)``), answering ``done``."""
        self.writes("writer-api", *api)
        self.writes("writer-docs", *docs)

    def escapes(self, key: str) -> None:
        """``key``'s child leaves a new file in the person's checkout, answering ``done``."""

        def script(child: FakeChild) -> None:
            self.git.source_dirty = ("escaped.txt",)
            child.say("done")
            child.settle()

        self.engine.scripted.scripts[key] = script

    def run(self, document: dict[str, Any]) -> FlowReport:
        return self.engine.run(document)

    def called(self, name: str) -> list[tuple[str, ...]]:
        return [c for c in self.git.calls if c[0] == name]

    @property
    def cwds(self) -> dict[str, str]:
        return {c.task_id: c.request.cwd for c in self.engine.scripted.runtime.spawned}


def error_of(report: FlowReport) -> dict[str, Any]:
    document = report.document()
    assert document["status"] == "failed"
    failed = document["results"][-1]
    assert failed["key"] == "worktree"
    return dict(failed["error"])
