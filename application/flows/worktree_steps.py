"""The parts of a ``worktree`` run around its children: where its branches and worktrees
are, how it stops, the check command, and the clean-up after success."""

from __future__ import annotations

import posixpath

import attrs

from application.ports import GitFailed, GitWorktrees
from domain.errors import ErrorCode
from domain.flows.call import FlowCall
from domain.flows.call_roles import FlowTask
from domain.flows.mode_parts import CheckRun
from domain.flows.tools import ToolChoice
from domain.flows.worktree import branch
from domain.flows.worktree_fields import INTEGRATION, WorktreeTask


class Stop(Exception):
    """The flow stops at ``code``; everything made so far is kept."""

    def __init__(self, code: ErrorCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@attrs.frozen
class Layout:
    """Where one run's branches and worktrees are: the source checkout's root, the scratch
    directory, and a worktree directory per writer (by task id) and for the integration."""

    source: str
    root: str
    run_id: str

    def path(self, name: str) -> str:
        return posixpath.join(self.root, name)

    def kept(self) -> str:
        return (
            f"kept for inspection: the worktrees under {self.root}, the branches "
            f"{branch(self.run_id, '*')} in {self.source}"
        )


def role_tools(role: FlowTask) -> ToolChoice:
    """The role's own tools, else Pi's defaults: at worst write-capable, so the rule can only
    refuse more, never less."""
    return role.tools if role.tools is not None else ToolChoice(None)


def verify(check: CheckRun | None, call: FlowCall, command: str, layout: Layout) -> str:
    """``command`` run in the integration worktree: what it said when it passed, else
    ``WORKTREE_VERIFY_FAILED`` with the end of its output and the command to re-run it."""
    assert call.worktree is not None
    if check is None:
        raise Stop(ErrorCode.WORKTREE_VERIFY_FAILED, "this host runs no check commands")
    timeout_ms = call.worktree.check_timeout_ms or call.timeout_ms
    where = layout.path(INTEGRATION)
    probe = check(command, where, timeout_ms)
    if probe.passed:
        return "exit 0"
    said = f"exit {probe.exit_code}"
    if probe.start_error is not None:
        said = f"could not start: {probe.start_error}"
    elif probe.timed_out:
        said = f"stopped at checkTimeoutMs ({timeout_ms} ms)"
    tail = probe.output.strip()[-2000:]
    reason = f"checkCommand {said}; re-run it with `cd {where} && {command}`" + (
        f"; its output ends:\n{tail}" if tail else ""
    )
    raise Stop(ErrorCode.WORKTREE_VERIFY_FAILED, reason)


def clean_up(git: GitWorktrees, tasks: tuple[WorktreeTask, ...], layout: Layout) -> str | None:
    """The writers' worktrees and branches and the integration worktree removed; the
    integration branch kept. What could not be removed, if anything."""
    try:
        for task in tasks:
            git.remove_worktree(layout.source, layout.path(task.id))
            git.delete_branch(layout.source, branch(layout.run_id, task.id))
        git.remove_worktree(layout.source, layout.path(INTEGRATION))
    except GitFailed as error:
        return f"{error}; {layout.kept()}"
    git.remove_dir(layout.root)
    return None
