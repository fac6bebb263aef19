"""What workflow tests share: a person who answers approval questions as scripted, and the
workflow host over the in-memory file system and the fake clock."""

from __future__ import annotations

import attrs

from application.flows.workflow_host import WorkflowFiles
from tests.fakes.clock import FakeClock
from tests.fakes.filesystem import InMemoryFileSystem

PROJECT = "/work/project"


@attrs.define
class Person:
    """Answers each question with the next of ``answers`` (the last repeats), recording what
    they were asked."""

    answers: list[bool] = attrs.field(factory=lambda: [True])
    asked: list[tuple[str, str]] = attrs.field(factory=list)

    def __call__(self, title: str, message: str) -> bool:
        self.asked.append((title, message))
        return self.answers[min(len(self.asked), len(self.answers)) - 1]


def host(fs: InMemoryFileSystem, clock: FakeClock, person: Person | None = None) -> WorkflowFiles:
    """The workflow host in ``PROJECT`` (created if missing); headless without a person."""
    if PROJECT not in fs.nodes:
        fs.add_dir(PROJECT)
    return WorkflowFiles(fs, clock, PROJECT, person)
