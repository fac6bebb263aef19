"""``GitRange`` over a repository described in memory, recording every question it is asked
(so a test can say the harness asked Git for exactly what the range needs)."""

from __future__ import annotations

from collections.abc import Mapping

from domain.flows.code_review import ChangedFile


class RecordingGitRange:
    """``commits``: ref → commit id; ``merge_bases``: (first, second) → id (either order);
    ``diffs``: (base, head) → changed files. Anything not given answers ``None``, as Git
    answers a ref that names no commit."""

    def __init__(
        self,
        commits: Mapping[str, str] | None = None,
        merge_bases: Mapping[tuple[str, str], str] | None = None,
        diffs: Mapping[tuple[str, str], tuple[ChangedFile, ...]] | None = None,
    ) -> None:
        self.commits = dict(commits or {})
        self.merge_bases = dict(merge_bases or {})
        self.diffs = dict(diffs or {})
        self.asked: list[tuple[str, ...]] = []

    def commit(self, cwd: str, ref: str) -> str | None:
        self.asked.append(("commit", cwd, ref))
        return self.commits.get(ref)

    def merge_base(self, cwd: str, first: str, second: str) -> str | None:
        self.asked.append(("merge-base", cwd, first, second))
        return self.merge_bases.get((first, second)) or self.merge_bases.get((second, first))

    def changed_files(self, cwd: str, base: str, head: str) -> tuple[ChangedFile, ...] | None:
        self.asked.append(("diff", cwd, base, head))
        return self.diffs.get((base, head))
