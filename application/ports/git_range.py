"""The port to Git, read-only: what the ``code-review`` preset resolves a range with before it
dispatches (``application.flows.code_review``)."""

from __future__ import annotations

from typing import Protocol

from domain.flows.code_review import ChangedFile

__all__ = ["GitRange"]


class GitRange(Protocol):
    """Reads a repository at ``cwd`` (any directory inside its work tree), never writing it.
    ``None``: Git could not answer (not a repository, no such commit, Git missing)."""

    def commit(self, cwd: str, ref: str) -> str | None:
        """The full id of the commit ``ref`` names (``ref^{commit}``)."""
        ...

    def merge_base(self, cwd: str, first: str, second: str) -> str | None:
        """The best common ancestor of two commit ids."""
        ...

    def changed_files(self, cwd: str, base: str, head: str) -> tuple[ChangedFile, ...] | None:
        """``git diff --name-status --no-renames base head``: each changed path, in Git's
        order."""
        ...
