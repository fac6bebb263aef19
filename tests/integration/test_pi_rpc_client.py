"""The end-to-end tests' Pi client: a wait that times out says what Pi did last, so a flake in
CI can be read from its output alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.e2e.pi_rpc_client import PiRpcClient, PiRpcError

RECORDS = [
    {
        "type": "message_end",
        "message": {"role": "custom", "customType": "squad-gate", "content": "gate"},
    },
    {"type": "extension_ui_request", "method": "notify", "message": "squad-status failed: busy"},
    {"type": "response", "command": "prompt", "success": True},
]


def test_a_timed_out_wait_names_the_recent_records_and_the_tail_of_stderr(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        f"for line in {[json.dumps(r) for r in RECORDS]!r}:\n"
        "    print(line, flush=True)\n"
        "print('shim: command: the bridge refused', file=sys.stderr, flush=True)\n"
        "sys.stdin.read()\n"
    )
    client = PiRpcClient([sys.executable, "-c", script], {}, tmp_path)
    try:
        client.find(lambda r: r.get("type") == "response", timeout=10)
        with pytest.raises(PiRpcError) as failure:
            client.find(lambda r: r.get("type") == "agent_settled", timeout=0.5)
    finally:
        client.close()
    text = str(failure.value)
    assert "the last 3 of 3 records" in text
    assert "message_end custom squad-gate gate" in text
    assert "extension_ui_request notify squad-status failed: busy" in text
    assert "response prompt success=True" in text
    assert "shim: command: the bridge refused" in text
