"""The delegation session as a person sees it in the main Pi (docs/delegation.md, "In Pi"):
the ``delegate`` tool with its transcript entry, the ``/delegate status|collect`` command, and
the live row of the session's jobs with a notice as each one settles.

The row follows the host this face made (the first ``delegate`` call or ``/delegate``
command makes it, never a poll: making it locates the Pi runtime). It is drawn from the
session as committed (``DelegationHost.snapshot``: a read, no transaction), redrawn after each
call and every ``interval`` seconds while attached (workers report from their own threads,
``delegate work`` from another process), and sent only when it changed. The first read after
attaching is the baseline: jobs already settled then are not announced again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from application.delegation.host import DelegationHost
from application.delegation.tool import delegate_entry, delegate_tool
from application.polling import Poller
from application.ports import (
    CommandAnswer,
    CommandSpec,
    SessionNotification,
    ToolFailure,
    ToolResult,
)
from application.squads.live_view import ui_notice, ui_notifications
from domain.delegation.display import (
    NOTHING_SHOWN,
    STATUS_KEY,
    WIDGET_KEY,
    DelegationRow,
    delegation_row,
    settled_since,
)
from domain.delegation.outcome_lines import Keys, collect_lines, status_lines
from domain.delegation.session import SessionState
from domain.errors import PiSquadError

USAGE = "/delegate status|collect [BATCH_ID] (default: every batch of this session)"
DELEGATE_COMMAND = CommandSpec(name="delegate", description=f"pi-squad: {USAGE}")
CARD_TYPE = "pi-squad-delegate-card"
NOTHING_TO_COLLECT = "nothing to collect: no batch has a result or an expiry to show"
Emit = Callable[[SessionNotification], None]


def card(lines: list[str], op: str) -> CommandAnswer:
    """A command's answer kept in the transcript (shown to the person; the model sees it too)."""
    message = {"customType": CARD_TYPE, "content": "\n".join(lines), "display": True}
    return CommandAnswer(message={**message, "details": {"op": op}})


def keys_of(state: SessionState | None) -> Keys:
    """Job id -> key, for lines drawn from answers that carry only ids."""
    batches = () if state is None else state.batches.values()
    return {job.job_id: job.key for batch in batches for job in batch.jobs}


@attrs.define
class DelegationFace:
    _make_host: Callable[[], DelegationHost]
    _interval: float = 1.0
    _on_error: Callable[[Exception], None] = attrs.field(default=lambda error: None)
    _host: DelegationHost | None = attrs.field(default=None, init=False)
    _emit: Emit | None = attrs.field(default=None, init=False)
    _shown: DelegationRow = attrs.field(default=NOTHING_SHOWN, init=False)
    # The session as the last refresh read it; ``None`` until a baseline was read.
    _seen: SessionState | None = attrs.field(default=None, init=False)
    _baseline: bool = attrs.field(default=False, init=False)
    _lock: threading.RLock = attrs.field(factory=threading.RLock, init=False)
    _poller: Poller = attrs.field(init=False)

    @_poller.default
    def _redrawer(self) -> Poller:
        return Poller(self.refresh, self._interval, "pi-squad-delegate-row")

    # -- the tool and the command -------------------------------------------------------------

    def host(self) -> DelegationHost:
        with self._lock:
            if self._host is None:
                self._host = self._make_host()
            host, attached = self._host, self._emit is not None
        if attached:
            self._poller.start()
        return host

    def tool(self, params: Mapping[str, Any]) -> ToolResult:
        """One ``delegate`` call: the model's JSON as before, and the person's entry."""
        host = self.host()
        try:
            text = delegate_tool(host, params)
        except PiSquadError as error:  # a refusal outside the delegation family (a store's)
            raise ToolFailure(f"{error.code}: {error.message}") from None
        entry = delegate_entry(json.loads(text), keys_of(host.snapshot()))
        self.refresh()
        return ToolResult(texts=(text,), details={"entry": entry})

    def command(self, args: str) -> CommandAnswer:
        words = args.split()
        sub = words[0] if words else "status"
        if sub not in ("status", "collect") or len(words) > 2:
            raise ToolFailure(f"usage: {USAGE}")
        batch_id = words[1] if len(words) == 2 else None
        host = self.host()
        try:
            answer = (
                self._status(host, batch_id) if sub == "status" else self._collect(host, batch_id)
            )
        except PiSquadError as error:
            raise ToolFailure(f"{error.code}: {error.message}") from None
        self.refresh()
        return answer

    def _status(self, host: DelegationHost, batch_id: str | None) -> CommandAnswer:
        request: dict[str, Any] = {"version": 1, "op": "status"}
        if batch_id is not None:
            request["batchId"] = batch_id
        return card(status_lines(host.handle(request)), "status")

    def _collect(self, host: DelegationHost, batch_id: str | None) -> CommandAnswer:
        """What ``collect`` answers now (no wait, no acknowledgement: the model's cursor is
        untouched) for one batch, or for every batch that has something to show."""
        keys = keys_of(host.snapshot())
        if batch_id is not None:
            batches = [batch_id]
        else:
            batches = [b["batchId"] for b in host.handle({"version": 1, "op": "status"})["batches"]]
        lines: list[str] = []
        for each in batches:
            answer = host.handle({"version": 1, "op": "collect", "batchId": each, "waitMs": 0})
            if batch_id is not None or answer["items"] or answer["expired"]:
                lines += collect_lines(answer, keys)
        return card(lines or [NOTHING_TO_COLLECT], "collect")

    # -- the live row -------------------------------------------------------------------------

    def attach(self, emit: Emit) -> None:
        with self._lock:
            self._emit = emit
            self._shown = NOTHING_SHOWN  # a new session's UI shows nothing of ours yet
            self._baseline = False
            made = self._host is not None
        if made:  # else the first call starts the redraws
            self._poller.start()
        self.refresh()

    def detach(self) -> None:
        self._poller.stop()
        with self._lock:
            self._emit = None

    def refresh(self) -> None:
        """Draw the row as the session is now if that changed, and announce each job that
        settled since the last read."""
        with self._lock:
            emit, host = self._emit, self._host
            if emit is None or host is None:
                return
            try:
                state, now_ms = host.snapshot(), host.now_ms()
            except Exception as error:  # a store mid-write or gone: the next refresh retries
                self._on_error(error)
                return
            if state is not None and self._baseline:
                for notice in settled_since(self._seen, state):
                    emit(ui_notice(notice.text, notice.level))
            self._seen, self._baseline = state, True
            row = delegation_row(state, now_ms)
            if row == self._shown:
                return
            self._shown = row
            for notification in ui_notifications(row, (STATUS_KEY, WIDGET_KEY)):
                emit(notification)
