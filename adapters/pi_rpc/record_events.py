"""What one child's stdout records mean: each record read on the stdout thread becomes the
``ChildEvent``s it stands for (an assistant message, requested tool calls, a provider error, a
bound session, a delivered steer, a settlement), and a ``response`` reaches the request waiting
for it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from adapters.pi_rpc.records import (
    assistant_text,
    requested_calls,
    session_from_state,
    text_of,
    tool_result,
    user_text,
)
from adapters.pi_rpc.requests import PendingRequests
from adapters.pi_rpc.stdout_records import update_delta_bytes
from application.ports import (
    ChildEvent,
    OutputProgress,
    ProviderError,
    ProviderRecovery,
    SessionBound,
    Settled,
    SteerDelivered,
    ToolCallsRequested,
    ToolStarted,
)

logger = logging.getLogger(__name__)


class RecordEvents:
    """One child's records read as events. ``read`` and ``update`` run on the stdout thread
    only; the steer notes may be taken on any thread. ``settled`` receives each
    ``agent_settled`` (the child reports only the first)."""

    def __init__(
        self,
        task_id: str,
        child_id: str,
        *,
        emit: Callable[[ChildEvent], None],
        requests: PendingRequests,
        settled: Callable[[Settled], None],
    ) -> None:
        self._task_id = task_id
        self._child_id = child_id
        self._emit = emit
        self._requests = requests
        self._settled = settled
        self._lock = threading.Lock()
        # Messages steered and not yet seen echoed back as a user message (``SteerDelivered``).
        self._steered: list[str] = []
        self._bound = False
        self._turns = 0
        self._tool_calls = 0
        self._message_bytes = 0  # streamed bytes of the assistant message in progress

    def steering(self, message: str) -> None:
        """``message`` is about to be steered in (Pi may echo it before answering the request)."""
        with self._lock:
            self._steered.append(message)

    def steer_refused(self, message: str) -> None:
        """The steer of ``message`` was not accepted: no echo of it is a delivery."""
        with self._lock:
            if message in self._steered:
                self._steered.remove(message)

    def read(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "response":
            self._on_response(record)
        elif kind == "turn_end":
            self._turns += 1
        elif kind == "message_start":
            self._message_bytes = 0
        elif kind == "message_end":
            self._on_message(record.get("message"))
        elif kind == "tool_execution_start":
            self._tool_calls += 1
            self._emit(
                ToolStarted(
                    task_id=self._task_id,
                    child_id=self._child_id,
                    tool_name=text_of(record.get("toolName")),
                    tool_call_id=text_of(record.get("toolCallId")),
                )
            )
        elif kind == "auto_retry_start":
            self._emit(ProviderRecovery(self._task_id, self._child_id, "retry"))
        elif kind == "compaction_start":
            self._emit(ProviderRecovery(self._task_id, self._child_id, "compaction"))
        elif kind == "auto_retry_end" and record.get("success") is False:
            self._emit(self._provider_error(record.get("finalError")))
        elif kind == "agent_settled":
            self._settled(Settled(self._task_id, self._child_id, self._turns, self._tool_calls))
        elif kind == "extension_error":
            logger.warning(
                "child %s: extension error in %s: %.300s",
                self._child_id,
                record.get("event"),
                record.get("error"),
            )

    def update(self, line: bytes) -> None:
        """A ``message_update`` line (observed children only): its delta counted, never the
        partial message it repeats."""
        size = update_delta_bytes(line)
        if size:
            self._message_bytes += size
            self._emit(OutputProgress(self._task_id, self._child_id, self._message_bytes))

    def _on_message(self, message: object) -> None:
        if not isinstance(message, dict):
            return
        role = message.get("role")
        if role == "assistant":
            self._emit(assistant_text(self._task_id, self._child_id, message))
            calls = requested_calls(message)
            if calls:
                self._emit(ToolCallsRequested(self._task_id, self._child_id, calls))
            if message.get("stopReason") == "error":
                self._emit(self._provider_error(message.get("errorMessage")))
        elif role == "toolResult":
            self._emit(tool_result(self._task_id, self._child_id, message))
        elif role == "user":
            self._user_message(user_text(message))

    def _user_message(self, text: str) -> None:
        """A user message entered the session: one carrying exactly a steered text is that
        steer's delivery (the first prompt and follow-ups are not reported)."""
        with self._lock:
            if text not in self._steered:
                return
            self._steered.remove(text)
        self._emit(SteerDelivered(self._task_id, self._child_id, text))

    def _provider_error(self, message: object) -> ProviderError:
        text = message if isinstance(message, str) and message else "no error message given"
        return ProviderError(self._task_id, self._child_id, text)

    def _on_response(self, record: dict[str, Any]) -> None:
        if record.get("command") == "get_state" and record.get("success") is True:
            session = session_from_state(record)
            if session is not None and not self._bound:
                self._bound = True
                self._emit(
                    SessionBound(
                        task_id=self._task_id,
                        child_id=self._child_id,
                        session_file=session[0],
                        session_id=session[1],
                    )
                )
        self._requests.answer(record)
