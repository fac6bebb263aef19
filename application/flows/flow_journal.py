"""Reading flow run records back (``pi-squad flow status``, ``flow list``): each record as
shown now, its driving process asked whether it still lives, and the run an id or prefix names.
The records are written by ``application.flows.run_records``; reading them needs nothing of
the flow runner, so a command that only shows them does not import it."""

from __future__ import annotations

from typing import Any

import attrs

from application.ports import Clock, FlowRunRecords, Processes, UnreadableRunRecord
from domain.errors import ErrorCode
from domain.flows.errors import FlowError, refuse
from domain.flows.run_record import FlowRunRecord, RecordStatus


@attrs.frozen
class RunView:
    """A record as shown now: ``driver_alive`` is what the ``Processes`` port says of its
    driving process (``None`` once ended, or when it cannot tell)."""

    record: FlowRunRecord
    driver_alive: bool | None

    @property
    def status(self) -> RecordStatus:
        return self.record.shown_status(self.driver_alive)

    def document(self) -> dict[str, Any]:
        return self.record.document(self.driver_alive)


@attrs.frozen
class RunListing:
    views: tuple[RunView, ...]
    # Run directories whose record cannot be read back: ``(run id, why)``.
    unreadable: tuple[tuple[str, str], ...] = ()


class FlowJournal:
    """Where flow run records are written and read back from."""

    def __init__(self, records: FlowRunRecords, clock: Clock, processes: Processes) -> None:
        self.records = records
        self.clock = clock
        self.processes = processes

    def _view(self, record: FlowRunRecord) -> RunView:
        if record.ended or record.driver is None:
            return RunView(record, None)
        return RunView(record, self.processes.alive(record.driver))

    def listing(self) -> RunListing:
        """Every recorded run, newest first."""
        views: list[RunView] = []
        unreadable: list[tuple[str, str]] = []
        for run_id in self.records.run_ids():
            try:
                record = self.records.load(run_id)
            except UnreadableRunRecord as error:
                unreadable.append((run_id, str(error)))
                continue
            if record is not None:
                views.append(self._view(record))
        views.sort(key=lambda view: (view.record.started_at, view.record.run_id), reverse=True)
        return RunListing(tuple(views), tuple(sorted(unreadable)))

    def find(self, run_id: str | None) -> RunView:
        """The run ``run_id`` names (its id, or a prefix only it has); the newest without one.
        ``FLOW_RUN_NOT_FOUND`` otherwise."""
        if run_id is None:
            views = self.listing().views
            if not views:
                raise not_found("$", "no flow run is recorded under this squad root yet")
            return views[0]
        matches = sorted(i for i in self.records.run_ids() if i.startswith(run_id))
        if run_id in matches:
            matches = [run_id]
        if len(matches) != 1:
            what = "no recorded flow run" if not matches else f"{len(matches)} recorded runs"
            raise not_found("$.id", f"{what} has an id starting with {run_id!r}")
        try:
            record = self.records.load(matches[0])
        except UnreadableRunRecord as error:
            reason = f"the record of flow run {matches[0]} is unreadable: {error}"
            raise not_found("$.id", reason) from None
        if record is None:
            raise not_found("$.id", f"flow run {matches[0]} has no record yet")
        return self._view(record)


def not_found(path: str, message: str) -> FlowError:
    return refuse(
        ErrorCode.FLOW_RUN_NOT_FOUND,
        path,
        f"{message}; `pi-squad flow list` shows the recorded runs",
        allowed="the id (or a unique prefix) of a run `pi-squad flow list` shows",
    )
