"""Keeps a main Pi's status item and widget in step with the squads it shows: redrawn when a
notice arrives and every ``interval`` seconds while attached (children's read progress is only
seen by reading their ledgers), and sent only when what would be drawn changed."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import attrs

from application.polling import Poller
from application.ports import SessionEvent, SessionNotification
from application.squads.child_activity import ActivityKey, ChildActivity
from application.squads.squad_view import STATUS_KEY, WIDGET_KEY, SquadView, squad_view
from application.squads.status import SquadStatusReport

DEFAULT_INTERVAL_SECONDS = 1.0
EMPTY = SquadView(status=None, widget=None)


class Row(Protocol):
    """What a live row draws: the status item's text and the widget's lines."""

    @property
    def status(self) -> str | None: ...

    @property
    def widget(self) -> tuple[str, ...] | None: ...


def ui_notifications(
    view: Row, keys: tuple[str, str] = (STATUS_KEY, WIDGET_KEY)
) -> tuple[SessionNotification, SessionNotification]:
    """The two ``ui`` events that draw ``view`` under ``keys`` (the status item's, the
    widget's; the squads' by default); ``None`` text or lines clear their slot."""
    lines = None if view.widget is None else list(view.widget)
    status = {"method": "setStatus", "key": keys[0], "text": view.status}
    widget = {"method": "setWidget", "key": keys[1], "lines": lines}
    return SessionNotification(SessionEvent.UI, status), SessionNotification(
        SessionEvent.UI, widget
    )


def ui_notice(text: str, level: str, *, also_stderr: bool = False) -> SessionNotification:
    """A notification drawn on the session's UI; ``also_stderr`` when Pi may be exiting and the
    terminal should keep it after the UI is gone."""
    data: dict[str, object] = {"method": "notify", "text": text, "level": level}
    if also_stderr:
        data["stderr"] = True
    return SessionNotification(SessionEvent.UI, data)


@attrs.define
class LiveView:
    _reports: Callable[[], Sequence[SquadStatusReport]]
    """The squads to show, read now (the main role decides which)."""
    _interval: float = DEFAULT_INTERVAL_SECONDS
    _on_error: Callable[[Exception], None] = attrs.field(default=lambda error: None)
    _activities: (
        Callable[[Sequence[SquadStatusReport]], Mapping[ActivityKey, ChildActivity]] | None
    ) = None
    """What each running child of the squads shown is doing (``None``: not shown)."""
    _emit: Callable[[SessionNotification], None] | None = attrs.field(default=None, init=False)
    _expanded: bool = attrs.field(default=False, init=False)
    _shown: SquadView = attrs.field(default=EMPTY, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _poller: Poller = attrs.field(init=False)

    @_poller.default
    def _refresher(self) -> Poller:
        return Poller(self.refresh, self._interval, "pi-squad-live-view")

    def attach(self, emit: Callable[[SessionNotification], None]) -> None:
        with self._lock:
            self._emit = emit
            self._shown = EMPTY  # a new session's UI shows nothing of ours yet
        self._poller.start()
        self.refresh()

    def detach(self) -> None:
        self._poller.stop()
        with self._lock:
            self._emit = None

    def expand(self, expanded: bool) -> None:
        self._expanded = expanded
        self.refresh()

    def refresh(self) -> None:
        """Draw what the squads look like now, if that differs from what is shown."""
        with self._lock:
            emit = self._emit
            if emit is None:
                return
            try:
                reports = self._reports()
                activities = None if self._activities is None else self._activities(reports)
                view = squad_view(reports, expanded=self._expanded, activities=activities)
            except Exception as error:  # a squad mid-write or gone: the next refresh retries
                self._on_error(error)
                return
            if view == self._shown:
                return
            self._shown = view
            for notification in ui_notifications(view):
                emit(notification)
