"""The catalogue entries of ``worktree``'s codes (``domain.flows.catalogue`` splices them in
after ``monitor``'s), as rows: code, cause, fix, whether the unchanged call may succeed."""

from __future__ import annotations

from domain.errors import ErrorCode

WORKTREE_ROWS: tuple[tuple[ErrorCode, str, str, bool], ...] = (
    (
        ErrorCode.WORKTREE_NOT_GIT,
        "worktree runs its writers in git worktrees of the flow's directory, and that "
        "directory (the call's cwd) is not inside a git checkout, or git is not installed",
        "run the flow from inside a git repository (or set cwd to one); check `git status` "
        "works there",
        False,
    ),
    (
        ErrorCode.WORKTREE_DIRTY_SOURCE,
        "the source checkout has uncommitted changes (the error lists them): the writers "
        "start from worktree.baseRef, so they would not see them",
        "commit or stash the listed paths, or pass worktree.requireClean: false when the "
        "writers should ignore them",
        False,
    ),
    (
        ErrorCode.WORKTREE_SETUP_FAILED,
        "a writer's branch or worktree could not be created: worktree.baseRef does not name "
        "a commit, a pi-flow/<run>/ branch already exists, or git refused (the message quotes "
        "it); whatever was created is kept where the message says",
        "check `git rev-parse --verify <baseRef>^{commit}` in the checkout, remove leftover "
        "pi-flow branches with `git branch -D`, then call again",
        False,
    ),
    (
        ErrorCode.WORKTREE_INTEGRATION_FAILED,
        "the writers' branches could not be integrated: a writer failed, its work could not "
        "be committed, a merge conflict was left unresolved or uncommitted by the "
        "integrator (the message lists the conflicting paths), or the integrator's review of "
        "the whole integration failed, was refused or left conflict markers or changes "
        "outside the integration worktree; nothing was merged silently",
        "inspect the kept worktrees and branches the message names, resolve the listed paths "
        "(or split the tasks so their files do not overlap), then call again",
        False,
    ),
    (
        ErrorCode.WORKTREE_VERIFY_FAILED,
        "worktree.checkCommand exited non-zero (or could not start, or hit checkTimeoutMs) in "
        "the integrated tree; the integration branch and every worktree are kept",
        "run the check in the kept integration worktree the message names, fix the cause on "
        "the integration branch, or call again with a corrected task",
        False,
    ),
)
