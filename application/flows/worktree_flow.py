"""``worktree`` on the host's git: one branch and worktree per writer off ``baseRef``, the
writers at once (each in its own directory), each writer's work committed by the parent, every
branch merged into ``pi-flow/<run>/integration`` (the integrator on a conflict), the
integrator's review of the whole integration (its fixes committed by the parent), then the check.

The source checkout is only read (its HEAD, index and files are never changed): every branch
is made with ``git worktree add`` in a scratch directory outside it. On success the writers'
worktrees and branches and the integration worktree are removed, the integration branch kept;
on any failure everything is kept and the summary says where.
"""

from __future__ import annotations

from itertools import combinations

import attrs

from application.flows.worktree_steps import Layout, Stop, clean_up, role_tools, verify
from application.ports import GitFailed, GitWorktrees, Ids
from domain.errors import ErrorCode
from domain.flows.call import FlowCall, Mode
from domain.flows.call_roles import FlowTask
from domain.flows.errors import FlowError
from domain.flows.handoff import HandoffGuard
from domain.flows.handoff_record import HandoffRecord
from domain.flows.mode_parts import (
    CheckRun,
    Decision,
    FlowOutcome,
    FlowStatus,
    ModeInputs,
    refused_recipient,
    render,
    role_job,
    settled,
)
from domain.flows.runs import Dispatch, RunResult
from domain.flows.worktree import (
    REVIEW_KEY,
    WORKTREE_KEY,
    branch,
    commit_message,
    failed_run,
    integration_branch,
    integrator_key,
    integrator_prompt,
    merge_message,
    review_message,
    review_prompt,
    writer_key,
    writer_prompt,
)
from domain.flows.worktree_fields import INTEGRATION, WorktreeTask
from domain.flows.write_guard import WriterRole, check_shared_writes

# Hex digits of a run's name: its branches' middle part.
RUN_ID_LENGTH = 12


class WorktreeFlow:
    """``ModeInputs.worktrees`` over a :class:`GitWorktrees` port; ``check`` runs the call's
    ``checkCommand`` in the integration worktree (``None``: a call that sets one fails
    ``WORKTREE_VERIFY_FAILED``); ``ids`` names each run (``pi-flow/<run>/...``)."""

    def __init__(self, git: GitWorktrees, check: CheckRun | None, ids: Ids) -> None:
        self._git = git
        self._check = check
        self._ids = ids

    def __call__(
        self, call: FlowCall, dispatch: Dispatch, guard: HandoffGuard, inputs: ModeInputs
    ) -> FlowOutcome:
        assert call.worktree is not None
        run = _Run(self._git, self._check, call, dispatch, guard)
        try:
            layout = run.prepare(inputs.cwd, self._ids.uuid4_hex()[:RUN_ID_LENGTH])
        except Stop as stop:
            return stopped(run, stop, None)
        try:
            text = run.integrate(layout)
        except Stop as stop:
            return stopped(run, stop, layout)
        except GitFailed as error:
            code = ErrorCode.WORKTREE_INTEGRATION_FAILED
            return stopped(run, Stop(code, str(error)), layout)
        return run.completed(layout, text)


class _Run:
    """One worktree flow's state as it proceeds: the runs so far, the handoffs and merges."""

    def __init__(
        self,
        git: GitWorktrees,
        check: CheckRun | None,
        call: FlowCall,
        dispatch: Dispatch,
        guard: HandoffGuard,
    ) -> None:
        assert call.worktree is not None
        assert call.task is not None
        self.git = git
        self.check = check
        self.call = call
        self.spec = call.worktree
        self.goal = call.task
        self.dispatch = dispatch
        self.guard = guard
        self.results: list[RunResult] = []
        self.records: list[HandoffRecord] = []
        self.decisions: list[Decision] = []
        self.source_state: tuple[str | None, tuple[str, ...]] = (None, ())

    # -- setup -------------------------------------------------------------------------------

    def prepare(self, cwd: str, run_id: str) -> Layout:
        """The checks on the source checkout, then every branch and worktree."""
        git = self.git
        source = git.toplevel(cwd)
        if source is None:
            reason = f"{cwd} is not inside a git checkout; set cwd to a repository (`git status`)"
            raise Stop(ErrorCode.WORKTREE_NOT_GIT, reason)
        base = git.resolve(source, self.spec.base_ref)
        if base is None:
            reason = (
                f"worktree.baseRef '{self.spec.base_ref}' names no commit in {source}; check it "
                f"with `git -C {source} rev-parse --verify '{self.spec.base_ref}^{{commit}}'`"
            )
            raise Stop(ErrorCode.WORKTREE_SETUP_FAILED, reason)
        dirty = git.dirty_paths(source)
        if self.spec.require_clean and dirty:
            shown = ", ".join(dirty[:20]) + (
                f" and {len(dirty) - 20} more" if len(dirty) > 20 else ""
            )
            reason = (
                f"{source} has uncommitted changes ({shown}); commit or stash them "
                f"(`git -C {source} stash --include-untracked`), or set worktree.requireClean false"
            )
            raise Stop(ErrorCode.WORKTREE_DIRTY_SOURCE, reason)
        self.source_state = (git.resolve(source, "HEAD"), dirty)
        try:
            layout = Layout(source, git.scratch_dir(f"pi-flow-{run_id}-"), run_id)
            for name in [*(task.id for task in self.spec.tasks), INTEGRATION]:
                git.add_worktree(source, layout.path(name), branch(run_id, name), base)
        except GitFailed as error:
            raise Stop(ErrorCode.WORKTREE_SETUP_FAILED, str(error)) from None
        return layout

    # -- the writers, the merges, the check ----------------------------------------------------

    def integrate(self, layout: Layout) -> str:
        writers = self._write(layout)
        committed = [self._commit(layout, task, result) for task, result in writers]
        merged: list[tuple[WorktreeTask, RunResult]] = []
        for (task, result), commit in zip(writers, committed, strict=True):
            if commit is not None:
                self._merge(layout, (task, result), merged)
                merged.append((task, result))
        reviewed = ""
        if merged:
            review(self, layout, writers, merged)
            reviewed = " and reviewed by the integrator"
        else:
            said = "skipped: no writer changed files"
            self.decisions.append(Decision("worktree.review", REVIEW_KEY, said, "integrator"))
        if self.spec.check_command is not None:
            said = verify(self.check, self.call, self.spec.check_command, layout)
            self.decisions.append(Decision("worktree.check", WORKTREE_KEY, said, "checkCommand"))
        head = self.git.resolve(layout.path(INTEGRATION), "HEAD")
        changed = f"{len(merged)} of {len(writers)} writers changed files"
        return f"{changed}, integrated into {integration_branch(layout.run_id)}{reviewed} at {head}"

    def _write(self, layout: Layout) -> list[tuple[WorktreeTask, RunResult]]:
        tasks = self.spec.tasks
        roles = [task.as_task() for task in tasks]
        self._distinct_cwds(layout, tasks, roles)
        jobs = [
            attrs.evolve(
                role_job(
                    self.call,
                    writer_key(task),
                    role,
                    writer_prompt(self.goal, task, render(task.task, {"task": self.goal})[0]),
                    stage="writers",
                    consumed=True,
                ),
                cwd=layout.path(task.id),
            )
            for task, role in zip(tasks, roles, strict=True)
        ]
        written = list(zip(tasks, self.dispatch(jobs), strict=True))
        self.results.extend(result for _task, result in written)
        failed = [result.key for _task, result in written if not result.ok]
        if failed:
            reason = f"writer(s) {', '.join(failed)} did not complete; nothing was integrated"
            raise Stop(ErrorCode.WORKTREE_INTEGRATION_FAILED, reason)
        return written

    def _distinct_cwds(
        self, layout: Layout, tasks: tuple[WorktreeTask, ...], roles: list[FlowTask]
    ) -> None:
        """The shared-write rule over the directories the writers really get."""
        writers = [
            WriterRole(f"$.worktree.tasks[{i}]", role.agent, role_tools(role), layout.path(task.id))
            for i, (task, role) in enumerate(zip(tasks, roles, strict=True))
        ]
        try:
            check_shared_writes(self.call, writers, list(combinations(range(len(writers)), 2)))
        except FlowError as error:
            raise Stop(error.code, error.message) from None

    def _commit(self, layout: Layout, task: WorktreeTask, result: RunResult) -> str | None:
        """The writer's work committed on its branch, and checked: the branch holds that
        commit, the worktree has nothing left over, the source checkout did not change."""
        git = self.git
        where = layout.path(task.id)
        commit = git.commit_all(where, commit_message(layout.run_id, task))
        said = "no change" if commit is None else f"committed {commit}"
        self.decisions.append(Decision("worktree.commit", result.key, said, "git commit"))
        at = git.resolve(layout.source, branch(layout.run_id, task.id))
        if commit is not None and at != commit:
            reason = f"{result.key}'s commit {commit} is not on its branch (it is at {at})"
            raise Stop(ErrorCode.WORKTREE_INTEGRATION_FAILED, reason)
        self.untouched(layout, result.key, (task.id,))
        return commit

    def untouched(self, layout: Layout, key: str, worktrees: tuple[str, ...]) -> None:
        """After ``key`` worked: the named worktrees have nothing uncommitted and the source
        checkout is as it was before the flow began."""
        git = self.git
        for name in worktrees:
            left = git.dirty_paths(layout.path(name))
            if left:
                reason = f"{key} left uncommitted paths in {layout.path(name)}: {', '.join(left)}"
                raise Stop(ErrorCode.WORKTREE_INTEGRATION_FAILED, reason)
        if (git.resolve(layout.source, "HEAD"), git.dirty_paths(layout.source)) != (
            self.source_state
        ):
            reason = f"the source checkout {layout.source} changed while {key} worked"
            raise Stop(ErrorCode.WORKTREE_INTEGRATION_FAILED, reason)

    def _merge(
        self,
        layout: Layout,
        incoming: tuple[WorktreeTask, RunResult],
        merged: list[tuple[WorktreeTask, RunResult]],
    ) -> None:
        task, result = incoming
        where = layout.path(INTEGRATION)
        message = merge_message(layout.run_id, task)
        conflicts = self.git.merge(where, branch(layout.run_id, task.id), message)
        said = "clean" if not conflicts else f"conflict in {', '.join(conflicts)}"
        self.decisions.append(Decision("worktree.merge", result.key, said, "git merge"))
        if not conflicts:
            return
        number = 1 + sum(r.key.startswith(integrator_key(0)[:-1]) for r in self.results)
        key = integrator_key(number)
        listed = ", ".join(conflicts)
        integrator = self.spec.integrator.as_task(self.goal)
        sides = [("integration branch so far", side) for side in merged]
        refusal = f"conflicts in {listed} left unresolved"
        blocks, carried = self.carry(
            key, integrator, [*sides, ("incoming branch", incoming)], refusal
        )
        prompt = integrator_prompt(self.goal, branch(layout.run_id, task.id), conflicts, blocks)
        job = role_job(
            self.call,
            key,
            integrator,
            prompt,
            stage=f"integrate-{number}",
            depends_on=tuple(report.key for _other, report in [*merged, incoming]),
            handoffs=carried,
        )
        (resolved,) = self.dispatch([attrs.evolve(job, cwd=where)])
        self.results.append(resolved)
        if not resolved.ok:
            reason = f"the integrator failed ({resolved.error_code}) on conflicts in {listed}"
            raise Stop(ErrorCode.WORKTREE_INTEGRATION_FAILED, reason)
        left = self.git.unresolved(where, conflicts)
        if left:
            reason = (
                f"the integrator left conflicts unresolved in {', '.join(left)} "
                f"(`git -C {where} status` shows them)"
            )
            raise Stop(ErrorCode.WORKTREE_INTEGRATION_FAILED, reason)
        head = self.git.conclude(where, message)
        incoming_branch = branch(layout.run_id, task.id)
        if not self.git.is_ancestor(where, incoming_branch, head) or self.git.dirty_paths(where):
            reason = f"the resolution of {listed} is not a committed merge of {incoming_branch}"
            raise Stop(ErrorCode.WORKTREE_INTEGRATION_FAILED, reason)

    def carry(
        self,
        key: str,
        integrator: FlowTask,
        sides: list[tuple[str, tuple[WorktreeTask, RunResult]]],
        refusal: str,
    ) -> tuple[str, tuple[HandoffRecord, ...]]:
        """Each side's writer report through the handoff guard to ``key``: the prompt's blocks
        and the records carried; a refused delivery stops the flow before ``key`` is spawned."""
        blocks: list[str] = []
        carried: list[HandoffRecord] = []
        for side, (other, report) in sides:
            label = f"output of {report.key} ({report.agent}) on the {side}"
            self.guard, prepared = self.guard.prepare_result(report, label)
            delivery = self.guard.deliver(prepared, key)
            self.records.append(delivery.record)
            if delivery.block is None:
                self.results.append(refused_recipient(key, integrator, delivery))
                reason = f"{refusal}: the integrator was not spawned"
                raise Stop(ErrorCode.WORKTREE_INTEGRATION_FAILED, reason)
            carried.append(delivery.record)
            blocks.append(f"### The {side}: task {other.id} ({other.agent})\n\n{delivery.block}")
        return "\n\n".join(blocks), tuple(carried)

    # -- how it ends ---------------------------------------------------------------------------

    def completed(self, layout: Layout, text: str) -> FlowOutcome:
        left = clean_up(self.git, self.spec.tasks, layout)
        note = f" Clean-up incomplete: {left}." if left else ""
        return settled(
            Mode.WORKTREE,
            FlowStatus.COMPLETED,
            f"Flow worktree: {text}.{note}",
            results=self.results,
            records=self.records,
            decisions=self.decisions,
        )


def review(
    run: _Run,
    layout: Layout,
    writers: list[tuple[WorktreeTask, RunResult]],
    merged: list[tuple[WorktreeTask, RunResult]],
) -> None:
    """The integrator reviews the whole integration, given every writer's envelope, and
    may fix it; the parent commits its fixes and checks that nothing else moved."""
    where = layout.path(INTEGRATION)
    integrator = run.spec.integrator.as_task(run.goal)
    sides = [(f"branch {branch(layout.run_id, t.id)}", (t, r)) for t, r in writers]
    blocks, carried = run.carry(REVIEW_KEY, integrator, sides, "the integration was not reviewed")
    integration = integration_branch(layout.run_id)
    ids = tuple(task.id for task, _result in merged)
    job = role_job(
        run.call,
        REVIEW_KEY,
        integrator,
        review_prompt(run.goal, integration, ids, blocks),
        stage="review",
        depends_on=tuple(result.key for result in run.results),
        handoffs=carried,
    )
    before = run.git.resolve(where, "HEAD")
    (answer,) = run.dispatch([attrs.evolve(job, cwd=where)])
    run.results.append(answer)
    failed = ErrorCode.WORKTREE_INTEGRATION_FAILED
    if not answer.ok:
        reason = f"the integrator's review of {integration} failed ({answer.error_code})"
        raise Stop(failed, f"{reason}; nothing it changed was committed")
    marked = run.git.unresolved(where, run.git.dirty_paths(where))
    if marked:
        reason = (
            f"the integrator's review left conflict markers or unmerged paths in "
            f"{', '.join(marked)} (`git -C {where} status` shows them); nothing was committed"
        )
        raise Stop(failed, reason)
    head = run.git.conclude(where, review_message(layout.run_id))
    said = "no change" if head == before else f"committed {head}"
    run.decisions.append(Decision("worktree.review", REVIEW_KEY, said, "git commit"))
    if before is None or not run.git.is_ancestor(where, before, head):
        reason = f"the review moved {integration} off the merged commit {before} (now {head})"
        raise Stop(failed, reason)
    run.untouched(layout, REVIEW_KEY, (INTEGRATION, *(task.id for task, _r in writers)))


def stopped(run: _Run, stop: Stop, layout: Layout | None) -> FlowOutcome:
    """The flow ended at ``stop``: the runs so far and the failure, with what was kept."""
    reason = stop.reason if layout is None else f"{stop.reason}; {layout.kept()}"
    failure = failed_run(WORKTREE_KEY, run.spec.integrator.agent, stop.code, reason)
    return settled(
        Mode.WORKTREE,
        FlowStatus.FAILED,
        f"Flow worktree: {stop.code}: {reason}",
        results=[*run.results, failure],
        records=run.records,
        decisions=run.decisions,
    )
