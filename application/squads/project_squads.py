"""This project's squads as the main Pi session sees them: what the live view shows, and what
the session is told when it starts (``application.main_role`` attaches both to the session)."""

from __future__ import annotations

from collections.abc import Callable, Collection

import attrs

from application.ports import Store
from application.squads.attention import in_view
from application.squads.scheduler import Notice
from application.squads.scheduler.completion import REVIEW_REQUIRED
from application.squads.session_notices import (
    lost_work,
    may_need_the_user,
    startup_notice,
    untold_review,
)
from application.squads.squad_owner import revivable_here
from application.squads.status import SquadStatusReader, SquadStatusReport, review_gate_text
from domain.errors import PiSquadError
from domain.squad.model import Squad, SquadStatus


@attrs.frozen
class ProjectSquads:
    """The squads whose working directory is ``cwd``."""

    cwd: str
    store: Store
    status: SquadStatusReader

    def reports(self, wanted: Callable[[Squad], bool]) -> list[SquadStatusReport]:
        """The squads ``wanted`` keeps (judged on the record alone, before the costlier status
        read); one that cannot be read is reported where it is used instead."""
        reports: list[SquadStatusReport] = []
        for squad in self.store.list_squads():
            if squad.cwd != self.cwd or not wanted(squad):
                continue
            try:
                reports.append(self.status.status(squad.id))
            except PiSquadError:
                continue
        return reports

    def ids(self) -> tuple[str, ...]:
        """This project's squads, newest first (what ``/squad`` completes)."""
        return tuple(s.id for s in reversed(self.store.list_squads()) if s.cwd == self.cwd)

    def shown(self, driven_ids: Collection[str]) -> list[SquadStatusReport]:
        """What the live view shows: the squads this session drives, then every other squad of
        this project that needs the person (``application/squads/attention.py``), until it is
        accepted or dismissed."""
        # Every second: only the squads shown are read in full (status audits attestations).
        driven = [self.status.status(squad_id) for squad_id in driven_ids]
        driven = [report for report in driven if report.squad.status is not SquadStatus.DONE]
        waiting = self.reports(lambda squad: squad.id not in driven_ids and in_view(squad))
        return driven + waiting

    def greeting(
        self,
        session_file: str | None,
        *,
        revive: Callable[[str], None],
        notify: Callable[[Notice], None],
    ) -> str | None:
        """At session start: this project's squads that need the user, a driver again
        (``revive``) for each whose driver died mid-run if this session owns it
        (``application/squads/squad_owner.py``), and each review gate no session was told of
        yet (``notify``). An attested flow's squad is its flow's: never revived nor listed."""
        reports: list[SquadStatusReport] = []
        revived: list[str] = []
        elsewhere: list[SquadStatusReport] = []
        for report in self.reports(lambda s: s.flow_id is None and may_need_the_user(s)):
            if not lost_work(report):
                reports.append(report)
            elif revivable_here(report.squad, session_file):
                revive(report.squad.id)
                revived.append(report.squad.id)
            else:
                elsewhere.append(report)
            if untold_review(report):  # reached review headless, with no session to tell
                notify(Notice(REVIEW_REQUIRED, report.squad.id, review_gate_text(report)))
        return startup_notice(reports, revived, elsewhere)
