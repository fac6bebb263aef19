"""``python -m adapters.scripted_model --port N --policy NAME [--agent-dir DIR]``.

Prints one JSON line ``{"baseUrl", "port", "policy"}`` once listening, then serves until
interrupted (SIGINT or SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from types import FrameType

from adapters.scripted_model.models_json import write_models_json
from adapters.scripted_model.policies import POLICIES
from adapters.scripted_model.server import ScriptedModelServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adapters.scripted_model",
        description="A scripted model server for Pi, on every wire protocol Pi speaks with a "
        "custom baseUrl (openai-completions, openai-responses, anthropic-messages, "
        "google-generative-ai).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--policy", default="echo", choices=sorted(POLICIES))
    parser.add_argument(
        "--agent-dir",
        help="also write DIR/models.json: one provider per protocol, all pointing at this server",
    )
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between events")
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)

    server = ScriptedModelServer(
        args.policy,
        host=args.host,
        port=args.port,
        chunk_delay=args.chunk_delay,
        verbose=args.verbose,
    ).start()

    stopped = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    if args.agent_dir:
        write_models_json(args.agent_dir, server.base_url)
    print(
        json.dumps({"baseUrl": server.base_url, "port": server.port, "policy": args.policy}),
        flush=True,
    )
    try:
        stopped.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
