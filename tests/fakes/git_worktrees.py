"""A recording ``GitWorktrees``: one repository in memory, files as a dict per commit.

A test writes into a worktree with :meth:`FakeGitWorktrees.write` (what a writer child does),
the fake records every port call in ``calls``, and a merge conflicts when both sides changed a
file differently since the merge base (the base commit, for this fake's linear branches).
``fail_on`` makes the named operation raise ``GitFailed``.
"""

from __future__ import annotations

import itertools

import attrs

from application.ports import GitFailed, GitWorktrees

Files = dict[str, str]


@attrs.define
class _Tree:
    branch: str
    files: Files
    # What the branch changed since the base commit: path -> content.
    base: Files
    merging: str | None = None
    unmerged: set[str] = attrs.field(factory=set)


@attrs.define
class FakeGitWorktrees:
    toplevel_of: dict[str, str] = attrs.field(factory=lambda: {"/repo": "/repo"})
    files: Files = attrs.field(factory=lambda: {"README": "hello\n"})
    source_dirty: tuple[str, ...] = ()
    fail_on: str | None = None
    calls: list[tuple[str, ...]] = attrs.field(factory=list)
    branches: dict[str, str] = attrs.field(factory=lambda: {"main": "c0"})
    commits: dict[str, Files] = attrs.field(factory=dict)
    # What each commit contains: the branches and commits of its ancestry.
    contains: dict[str, set[str]] = attrs.field(factory=dict)
    trees: dict[str, _Tree] = attrs.field(factory=dict)
    removed_dirs: list[str] = attrs.field(factory=list)
    _ids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))

    def __attrs_post_init__(self) -> None:
        self.commits["c0"] = dict(self.files)
        self.contains["c0"] = set()

    def _called(self, *call: str) -> None:
        self.calls.append(call)
        if self.fail_on == call[0]:
            raise GitFailed(f"git {call[0]} exited 128: fatal: scripted failure")

    # -- what a test does --------------------------------------------------------------------

    def write(self, worktree: str, path: str, content: str) -> None:
        self.trees[worktree].files[path] = content

    def tree_of(self, branch: str) -> Files:
        return self.commits[self.branches[branch]]

    # -- the port ------------------------------------------------------------------------------

    def toplevel(self, cwd: str) -> str | None:
        self._called("toplevel", cwd)
        return self.toplevel_of.get(cwd)

    def resolve(self, cwd: str, ref: str) -> str | None:
        self._called("resolve", cwd, ref)
        if ref == "HEAD":
            return self.branches[self.trees[cwd].branch] if cwd in self.trees else "c0"
        return self.branches.get(ref, ref if ref in self.commits else None)

    def dirty_paths(self, cwd: str) -> tuple[str, ...]:
        self._called("dirty_paths", cwd)
        if cwd not in self.trees:
            return self.source_dirty
        tree = self.trees[cwd]
        head = self.commits[self.branches[tree.branch]]
        keys = set(head) | set(tree.files)
        return tuple(sorted(k for k in keys if head.get(k) != tree.files.get(k)))

    def scratch_dir(self, prefix: str) -> str:
        self._called("scratch_dir", prefix)
        return f"/tmp/{prefix}scratch"

    def add_worktree(self, repo: str, path: str, branch: str, start: str) -> None:
        self._called("add_worktree", repo, path, branch, start)
        if branch in self.branches:
            raise GitFailed(f"fatal: a branch named '{branch}' already exists")
        self.branches[branch] = start
        self.trees[path] = _Tree(branch, dict(self.commits[start]), dict(self.commits[start]))

    def _commit(self, tree: _Tree, merged: str | None = None) -> str:
        commit = f"c{next(self._ids)}"
        parent = self.branches[tree.branch]
        self.commits[commit] = dict(tree.files)
        self.contains[commit] = {*self.contains[parent], parent, tree.branch}
        if merged is not None:
            theirs = self.branches[merged]
            self.contains[commit] |= {merged, theirs, *self.contains[theirs]}
        self.branches[tree.branch] = commit
        return commit

    def commit_all(self, cwd: str, message: str) -> str | None:
        self._called("commit_all", cwd, message)
        tree = self.trees[cwd]
        if tree.files == self.commits[self.branches[tree.branch]]:
            return None
        return self._commit(tree)

    def merge(self, cwd: str, branch: str, message: str) -> tuple[str, ...]:
        self._called("merge", cwd, branch, message)
        tree = self.trees[cwd]
        theirs = self.tree_of(branch)
        base = tree.base
        conflicts: set[str] = set()
        for path in set(theirs) | set(base):
            if theirs.get(path) == base.get(path):
                continue
            ours = tree.files.get(path)
            if ours not in (base.get(path), theirs.get(path)):
                conflicts.add(path)
                tree.files[path] = f"<<<<<<< ours\n{ours}=======\n{theirs.get(path)}>>>>>>> x\n"
            elif path in theirs:
                tree.files[path] = theirs[path]
            else:
                tree.files.pop(path, None)
        if conflicts:
            tree.merging, tree.unmerged = branch, conflicts
            return tuple(sorted(conflicts))
        self._commit(tree, merged=branch)
        return ()

    def resolve_conflict(self, worktree: str, path: str, content: str) -> None:
        """What an integrator does: the file rewritten, marked resolved (``git add``)."""
        tree = self.trees[worktree]
        tree.files[path] = content
        tree.unmerged.discard(path)

    def unresolved(self, cwd: str, paths: tuple[str, ...]) -> tuple[str, ...]:
        self._called("unresolved", cwd, *paths)
        tree = self.trees[cwd]
        marked = {p for p in paths if "<<<<<<< " in tree.files.get(p, "")}
        return tuple(p for p in paths if p in tree.unmerged or p in marked)

    def conclude(self, cwd: str, message: str) -> str:
        self._called("conclude", cwd, message)
        tree = self.trees[cwd]
        merged, tree.merging = tree.merging, None
        if merged is None and not self.dirty_paths(cwd):
            return self.branches[tree.branch]
        return self._commit(tree, merged=merged)

    def is_ancestor(self, cwd: str, ancestor: str, descendant: str) -> bool:
        self._called("is_ancestor", cwd, ancestor, descendant)
        return ancestor == descendant or ancestor in self.contains.get(descendant, set())

    def remove_worktree(self, repo: str, path: str) -> None:
        self._called("remove_worktree", repo, path)
        del self.trees[path]

    def delete_branch(self, repo: str, branch: str) -> None:
        self._called("delete_branch", repo, branch)
        del self.branches[branch]

    def remove_dir(self, path: str) -> None:
        self._called("remove_dir", path)
        self.removed_dirs.append(path)


_conforms: type[GitWorktrees] = FakeGitWorktrees
