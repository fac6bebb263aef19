"""A model server on loopback that answers from scripted policies, on every wire protocol Pi
supports with a custom ``baseUrl`` (``wire.PROTOCOLS``): each request is routed by its path to
its protocol, which refuses what the real API refuses and streams what the real API streams.

``POST /v1/chat/completions``, ``/v1/responses``, ``/v1/messages`` and
``/v1beta/models/MODEL:streamGenerateContent``; ``GET /v1/models``. Standard library only; one
thread per connection; HTTP/1.1 keep-alive with a ``Content-Length`` on every answer.

In-process use::

    with ScriptedModelServer(default_policy="diligent") as server:
        write_models_json(agent_dir, server.base_url)
        ...  # run pi --provider fake --model fake-model
        server.exchanges()  # what was asked and answered
        server.requests_received()  # how many model requests arrived, errors included
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import attrs

from adapters.scripted_model.conversation import Conversation, RequestInvalid
from adapters.scripted_model.models_json import MODEL_ID
from adapters.scripted_model.policies import (
    POLICIES,
    Policy,
    PolicyState,
    Reply,
    select_policy_name,
)
from adapters.scripted_model.wire import (
    ApiRefusal,
    Encoded,
    Turn,
    WireProtocol,
    fitted,
    protocol_for,
    thinking_for,
    token_usage,
)

MAX_BODY_BYTES = 64 * 1024 * 1024
IDLE_CONNECTION_SECONDS = 60.0


class UnknownPolicy(ValueError):
    pass


@attrs.frozen
class Exchange:
    """One answered request: its protocol (Pi's ``api``), its body, and the reply as sent (fitted
    to the tools the provider received, with its thinking)."""

    policy: str
    request: Mapping[str, Any]
    reply: Reply
    api: str = "openai-completions"
    conversation: Conversation | None = None


class ScriptedModelServer:
    def __init__(
        self,
        default_policy: str = "echo",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        policies: Mapping[str, Policy] | None = None,
        chunk_delay: float = 0.0,
        verbose: bool = False,
    ) -> None:
        self._policies: dict[str, Policy] = {**POLICIES, **(policies or {})}
        if default_policy not in self._policies:
            raise UnknownPolicy(f"unknown policy {default_policy!r}; known: {self.policy_names}")
        self.default_policy = default_policy
        self.chunk_delay = chunk_delay
        self.verbose = verbose
        self.state = PolicyState()
        self._host = host
        self._requested_port = port
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []
        # Every model request received, answered or not (an error answer is no exchange).
        self._received = 0

    @property
    def policy_names(self) -> list[str]:
        return sorted(self._policies)

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The provider ``baseUrl`` for models.json: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.origin}/v1"

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``: the base of the APIs whose clients add their own version."""
        return f"http://{self._host}:{self.port}"

    def start(self) -> ScriptedModelServer:
        if self._httpd is not None:
            return self
        self._httpd = _HTTPServer((self._host, self._requested_port), _Handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"scripted-model:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Blocking form for the command line; returns after ``stop()`` from another thread."""
        if self._httpd is None:
            self._httpd = _HTTPServer((self._host, self._requested_port), _Handler, self)
        self._httpd.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)

    def requests_received(self) -> int:
        """The model requests that reached this server, those answered with an error too."""
        with self._lock:
            return self._received

    def answer(
        self, body: object, protocol: WireProtocol, path: str, size: int
    ) -> tuple[Exchange, Encoded]:
        """The answer to one request body of ``size`` bytes: ``ApiRefusal`` where the real API
        refuses the request, else the chosen policy's reply, as the provider would send it."""
        with self._lock:
            self._received += 1
        conversation = protocol.parse(body, path)
        name = select_policy_name(conversation, self.default_policy)
        policy = self._policies.get(name)
        if policy is None:
            raise UnknownPolicy(f"unknown policy {name!r}; known: {self.policy_names}")
        round_number = conversation.rounds + 1
        reply = fitted(policy(conversation, self.state), conversation.tools)
        if conversation.reasoning:
            reply = attrs.evolve(reply, thinking=thinking_for(name, reply, round_number))
        turn = Turn(
            model=conversation.model or MODEL_ID,
            round_number=round_number,
            stream=conversation.stream,
            usage=token_usage(size, reply, round_number),
        )
        request = body if isinstance(body, dict) else {}
        exchange = Exchange(name, request, reply, protocol.api, conversation)
        with self._lock:
            self._exchanges.append(exchange)
        return exchange, protocol.encode(reply, turn)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        owner: ScriptedModelServer,
    ) -> None:
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

    def track(self, connection: socket.socket, *, open_: bool) -> None:
        with self._connections_lock:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pi-squad-scripted-model/1"
    timeout = IDLE_CONNECTION_SECONDS
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, open_=True)

    def finish(self) -> None:
        self.server.track(self.connection, open_=False)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.owner.verbose:
            sys.stderr.write(f"scripted-model: {format % args}\n")

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            self._json(
                HTTPStatus.OK,
                {
                    "object": "list",
                    "data": [
                        {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "pi-squad"}
                    ],
                },
            )
        elif path in ("/health", "/v1/health"):
            self._json(HTTPStatus.OK, {"ok": True, "policies": self.server.owner.policy_names})
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no route for GET {path}")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        protocol = protocol_for(path)
        if protocol is None:
            self._discard_body()
            self._error(HTTPStatus.NOT_FOUND, f"no route for POST {path}")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            self._error(HTTPStatus.BAD_REQUEST, "a JSON body with a Content-Length is required")
            return
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
            _, encoded = self.server.owner.answer(body, protocol, path, length)
        except ApiRefusal as refusal:
            self._json(HTTPStatus(refusal.status), protocol.error_document(refusal))
            return
        except (json.JSONDecodeError, UnicodeDecodeError, UnknownPolicy, RequestInvalid) as error:
            # ``RequestInvalid`` from a policy: a request its script says the provider refuses.
            self._json(HTTPStatus.BAD_REQUEST, protocol.error_document(ApiRefusal(str(error))))
            return
        except Exception as error:  # a policy bug: answer, and say so where a person looks
            sys.stderr.write(f"scripted-model: policy failed: {error!r}\n")
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"policy failed: {error!r}")
            return
        if encoded.content_type.startswith("text/event-stream"):
            self._stream(encoded)
        else:
            self._send(HTTPStatus.OK, encoded.content_type, encoded.payload)

    def _stream(self, encoded: Encoded) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", encoded.content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(encoded.payload)))
        self.end_headers()
        delay = self.server.owner.chunk_delay
        if delay <= 0:
            self.wfile.write(encoded.payload)
            return
        for event in encoded.events:
            self.wfile.write(event)
            self.wfile.flush()
            time.sleep(delay)

    def _json(self, status: HTTPStatus, document: object) -> None:
        self._send(status, "application/json", json.dumps(document).encode("utf-8"))

    def _send(self, status: HTTPStatus, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, status: HTTPStatus, message: str) -> None:
        kind = "invalid_request_error" if status < HTTPStatus.INTERNAL_SERVER_ERROR else "server"
        self._json(status, {"error": {"message": message, "type": kind, "code": int(status)}})

    def _discard_body(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if 0 < length <= MAX_BODY_BYTES:
            self.rfile.read(length)
