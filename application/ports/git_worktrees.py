"""Git, as the ``worktree`` flow mode uses it: branches and worktrees made, committed, merged and
removed in a repository, never a checkout switched (``adapters.system.git_worktrees``)."""

from __future__ import annotations

from typing import Protocol

__all__ = ["GitFailed", "GitWorktrees"]


class GitFailed(Exception):
    """A git command exited non-zero: the message names the command and quotes git's error."""


class GitWorktrees(Protocol):
    def toplevel(self, cwd: str) -> str | None:
        """The root of the checkout ``cwd`` is in; ``None`` when it is in none (or there is no
        git to ask)."""
        ...

    def resolve(self, cwd: str, ref: str) -> str | None:
        """The commit id ``ref`` names in ``cwd``'s repository; ``None`` when it names none."""
        ...

    def dirty_paths(self, cwd: str) -> tuple[str, ...]:
        """The checkout's uncommitted paths (changed, staged or untracked), sorted."""
        ...

    def scratch_dir(self, prefix: str) -> str:
        """A new private directory outside every checkout, for one run's worktrees."""
        ...

    def add_worktree(self, repo: str, path: str, branch: str, start: str) -> None:
        """A new branch ``branch`` at commit ``start``, checked out in a new worktree at
        ``path``; ``repo``'s own checkout is left as it is."""
        ...

    def commit_all(self, cwd: str, message: str) -> str | None:
        """Everything changed in the worktree ``cwd`` committed on its branch: the new commit
        id, or ``None`` when there was nothing to commit."""
        ...

    def merge(self, cwd: str, branch: str, message: str) -> tuple[str, ...]:
        """``branch`` merged into the worktree ``cwd``'s branch with a merge commit; the paths
        in conflict when it stopped (the merge is left in progress), empty when it committed."""
        ...

    def unresolved(self, cwd: str, paths: tuple[str, ...]) -> tuple[str, ...]:
        """Of ``paths``, those still unmerged in the index or holding a conflict marker."""
        ...

    def conclude(self, cwd: str, message: str) -> str:
        """Whatever is left in the worktree (a resolved merge, a fix) committed: its HEAD."""
        ...

    def is_ancestor(self, cwd: str, ancestor: str, descendant: str) -> bool: ...

    def remove_worktree(self, repo: str, path: str) -> None: ...

    def delete_branch(self, repo: str, branch: str) -> None: ...

    def remove_dir(self, path: str) -> None:
        """A scratch directory and what is left in it."""
        ...
