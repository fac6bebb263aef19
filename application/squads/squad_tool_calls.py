"""The main Pi's squad tools: ``squad``, ``squad_status``, ``squad_modify``, ``squad_review``
and ``squad_message``, each answering with its text. Their inputs are parsed by
``application.tool_calls``; the main role (``application.main_role``) routes the calls here and
lends its drivers: a tool that changes a squad starts, or stops, the driver of it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from application.ports import AgentDirectory, ChildRuntime, Store, TempDirs, ToolFailure
from application.squads.create_squad import Publisher
from application.squads.mailbox import Mailbox
from application.squads.operations import Action, SquadOperations
from application.squads.review import ReviewRecorder
from application.squads.scheduler import Scheduler
from application.squads.squad_call import classify_call
from application.squads.squad_commands import SquadControl
from application.squads.squad_start import start_squad
from application.squads.status import SquadStatusReader
from application.tool_calls import message_call, modify_call, review_call, status_call
from domain.squad.model import Actor, SquadStatus
from domain.squad.references import expand_squad_prefix

ToolHandler = Callable[[Mapping[str, Any]], str]


@attrs.frozen(kw_only=True)
class SquadTools:
    """The squad tools of one main Pi session, in its project (``cwd``)."""

    cwd: str
    store: Store
    publisher: Callable[[], Publisher]
    agents: AgentDirectory
    operations: SquadOperations
    reviews: ReviewRecorder
    mailbox: Mailbox
    status: SquadStatusReader
    # What starts the planner of a ``squad`` call (the children's runtime).
    runtime: Callable[[], ChildRuntime]
    temp_dirs: TempDirs
    # The session's drivers: started and stopped by the tools, asked for a squad's scheduler.
    control: SquadControl
    scheduler: Callable[[str], Scheduler | None]

    def handlers(self, progress: Callable[[str], None]) -> dict[str, ToolHandler]:
        """Tool name -> its handler; ``progress`` shows text in the running ``squad`` row."""
        return {
            "squad": lambda call: self.squad(call, progress),
            "squad_status": self.squad_status,
            "squad_modify": self.squad_modify,
            "squad_review": self.squad_review,
            "squad_message": self.squad_message,
        }

    def target(self, explicit: str | None, *, want_review: bool = False) -> str:
        """The squad ``explicit`` names (a unique prefix will do), else this project's newest
        (awaiting review, with ``want_review``)."""
        if explicit is not None and explicit.strip():
            return expand_squad_prefix(explicit.strip(), self.store.list_squad_ids())
        for squad in reversed(self.store.list_squads()):
            if squad.cwd == self.cwd and (not want_review or squad.status is SquadStatus.REVIEW):
                return squad.id
        raise ToolFailure(
            "No squad is awaiting orchestrator review." if want_review else "No squad found."
        )

    def squad(self, params: Mapping[str, Any], progress: Callable[[str], None]) -> str:
        started = start_squad(
            classify_call(params),
            publisher=self.publisher(),
            catalog=self.agents.catalog(self.cwd),
            cwd=self.cwd,
            planner_runtime=self.runtime,
            temp_dirs=self.temp_dirs,
            progress=progress,
        )
        self.control.ensure_driver(started.squad_id)
        return started.text()

    def squad_status(self, params: Mapping[str, Any]) -> str:
        return self.status.status(self.target(status_call(params).squad_id)).text()

    def squad_modify(self, params: Mapping[str, Any]) -> str:
        call = modify_call(params)
        action = call.action
        if action is Action.CANCEL:
            squad_id = (call.squad_id or "").strip()
            if not squad_id:
                raise ToolFailure("cancel requires exact squadId; no squad was changed.")
        else:
            squad_id = self.target(call.squad_id)
        result = self.operations.apply(
            squad_id,
            action,
            task_id=call.task_id,
            depends=call.depends,
            output=call.output,
            task=call.task,
            by=Actor.MODEL,
        )
        scheduler = self.scheduler(squad_id)
        if scheduler is not None:
            for task_id in result.reset_budgets:
                scheduler.reset_budgets(task_id)
        if action in {Action.PAUSE, Action.CANCEL}:
            self.control.stop_driver(squad_id)
        elif result.changed:
            self.control.ensure_driver(squad_id)
        return result.text

    def squad_review(self, params: Mapping[str, Any]) -> str:
        call = review_call(params)
        squad_id = self.target(call.squad_id, want_review=True)
        return self.reviews.record_call(squad_id, call).text

    def squad_message(self, params: Mapping[str, Any]) -> str:
        call = message_call(params)
        squad_id = self.target(call.squad_id)
        snapshot = self.store.snapshot(squad_id)
        task_id = call.target(snapshot.tasks)
        scheduler = self.scheduler(squad_id)
        live_child = scheduler.live.get(task_id) if scheduler is not None else None
        outcome = self.mailbox.send(
            squad_id,
            task_id,
            call.message,
            live=live_child.handle if live_child is not None else None,
            expects_reply=call.expect_reply,
        )
        self.control.ensure_driver(squad_id)
        return outcome.text
