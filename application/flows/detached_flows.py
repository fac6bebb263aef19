"""A ``flow`` tool call that outlives the tool-call horizon (docs/flows.md, "Flow runs after
the call"): the shim waits at most ``PI_SQUAD_BRIDGE_EXECUTE_TIMEOUT_MS`` (15 minutes) for a
tool's answer, while a flow's children may run for hours. So the flow runs on a thread of its
own; when it has not settled shortly before that bound, the tool answers that it continues
detached, its live row moves from the tool's update to a widget, and when it settles the
session gets a notice and a message carrying the outcome and the card's lines (the model is
woken with it, as by a squad's notice).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from application.flows.flow_report import FlowReport
from application.ports import SessionEvent, SessionNotification

# Under the shim's default 900 s answer bound, with room for the answer to travel.
DETACH_AFTER_SECONDS = 840.0
DETACHED_MESSAGE_TYPE = "pi-squad-flow-settled"


class RowSink:
    """Where the live row is drawn: the tool's update while the call is open, then (detached)
    a widget of the session."""

    def __init__(self, draw: Callable[[str], None]) -> None:
        self._lock = threading.Lock()
        self._draw = draw

    def __call__(self, text: str) -> None:
        with self._lock:
            draw = self._draw
        draw(text)

    def move_to(self, draw: Callable[[str], None]) -> None:
        with self._lock:
            self._draw = draw


class FlowFlight:
    """One flow call running on its own thread: ``wait`` for it a while, and once it is
    detached, ``when_settled`` runs a callback on that thread (at once if it settled already)."""

    def __init__(self, run: Callable[[], FlowReport], name: str) -> None:
        self._lock = threading.Lock()
        self._settled = threading.Event()
        self._report: FlowReport | None = None
        self._error: BaseException | None = None
        self._then: Callable[[], None] | None = None
        self._thread = threading.Thread(target=self._fly, args=(run,), name=name, daemon=True)
        self._thread.start()

    def _fly(self, run: Callable[[], FlowReport]) -> None:
        try:
            self._report = run()
        except BaseException as error:  # handed to whoever reads the result
            self._error = error
        with self._lock:
            self._settled.set()
            then = self._then
        if then is not None:
            then()

    def wait(self, seconds: float) -> bool:
        return self._settled.wait(seconds)

    def result(self) -> FlowReport:
        """The report; raises what the run raised. Only once settled."""
        if self._error is not None:
            raise self._error
        assert self._report is not None, "read before the flow settled"
        return self._report

    def when_settled(self, then: Callable[[], None]) -> None:
        with self._lock:
            settled = self._settled.is_set()
            if not settled:
                self._then = then
        if settled:
            then()


def widget(key: str, lines: list[str] | None) -> SessionNotification:
    """Draw (``None``: clear) the session's widget ``key``."""
    return SessionNotification(SessionEvent.UI, {"method": "setWidget", "key": key, "lines": lines})


def notice(text: str, level: str) -> SessionNotification:
    return SessionNotification(SessionEvent.UI, {"method": "notify", "text": text, "level": level})


def settled_message(text: str, details: dict[str, Any]) -> SessionNotification:
    """The outcome of a detached flow, for the transcript and the model (a follow-up turn)."""
    return SessionNotification(
        SessionEvent.SEND_MESSAGE,
        {
            "message": {
                "customType": DETACHED_MESSAGE_TYPE,
                "content": text,
                "display": True,
                "details": details,
            },
            "options": {"deliverAs": "followUp", "triggerTurn": True},
        },
    )


def detached_text(minutes: float, run_id: str | None) -> str:
    where = f"`pi-squad flow status {run_id}`" if run_id else "`pi-squad flow status`"
    return (
        f"The flow is still running after {minutes:g} min, the longest a tool call may wait: it "
        f"continues detached (run {run_id or 'recorded under the squad root'}). Its progress "
        "shows in the session's widget; when it settles, a notice and a message with its "
        f"outcome follow. Do not call it again meanwhile. From a shell: {where}."
    )
