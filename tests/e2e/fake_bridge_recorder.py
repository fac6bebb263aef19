"""A stand-in main bridge for the shim (``PI_SQUAD_BRIDGE``): it records every request line to
``FAKE_BRIDGE_RECORD`` (appended, one JSON object a line, also across the bridges a Pi starts
for each session), lists the navigation events at ``hello``, answers ``session_start`` and
``session_shutdown`` at once and **never answers** ``navigation``: a shim that awaited it would
hold the user's navigation up. Standard library only; exits at end of input."""

from __future__ import annotations

import json
import os
import sys

NAVIGATION = ["session_before_switch", "session_before_fork", "session_before_tree"]


def main() -> int:
    record = os.environ["FAKE_BRIDGE_RECORD"]
    for line in sys.stdin.buffer:
        request = json.loads(line)
        with open(record, "a", encoding="utf-8") as out:
            out.write(json.dumps({"method": request["method"], "params": request["params"]}) + "\n")
        if request["method"] == "navigation":
            continue  # never answered
        result: object = None
        if request["method"] == "hello":
            # A main role with no tools or commands that hears the session's lifecycle.
            registrations: dict[str, object] = dict.fromkeys(
                ("guard", "messageEnd", "bootstrap"), False
            )
            registrations.update(tools=[], commands=[], lifecycle=True, navigation=NAVIGATION)
            result = {"role": "main", "protocol": 1, "registrations": registrations}
        answer = {"v": 1, "id": request["id"], "ok": True, "result": result}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
