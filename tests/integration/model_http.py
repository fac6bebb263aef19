"""One POST to the scripted model server over real HTTP on loopback, as a provider client
sends it: the tests of each wire protocol share it."""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping

from adapters.scripted_model import ScriptedModelServer


def post(
    server: ScriptedModelServer,
    body: object,
    path: str,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, str, bytes]:
    """``body`` (bytes as they are, anything else as JSON) to ``path``; the status, the
    content type and the raw answer."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        connection.request(
            "POST",
            path,
            body=payload,
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        connection.close()
