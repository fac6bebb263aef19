"""Real Pi 0.80.10 in RPC mode for the benchmarks: launching it with or without pi-squad's
extension (talk to it with ``tests.e2e.pi_rpc_client.PiRpcClient``, which stamps every record
with its arrival), and a benchmark-only policy for the scripted model.

``bench-bash``: issues ``bench-calls: N`` trivial ``bash`` calls (``true``), ``bench-per-message:
K`` per assistant message (default 1), then a one-line report. Both markers go in the appended
system prompt, beside ``scripted-policy: bench-bash``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from adapters.pi_runtime import PiRuntime, pi_command, pi_environment
from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.replies import PlannedCall, PolicyState, Reply
from bench.common import REPO

EXTENSION = REPO / "entrypoints" / "pi"
BRIDGE_ARGV = (sys.executable, "-m", "entrypoints.bridge")
BENCH_POLICY = "bench-bash"
CALLS_MARKER = "bench-calls"
PER_MESSAGE_MARKER = "bench-per-message"


def bench_bash(conversation: Conversation, state: PolicyState) -> Reply:
    total = int(conversation.marker(CALLS_MARKER) or "200")
    per_message = max(1, int(conversation.marker(PER_MESSAGE_MARKER) or "1"))
    made = sum(1 for _ in conversation.calls("bash"))
    if made >= total:
        return Reply(f"bench-bash: {made} calls made.")
    count = min(per_message, total - made)
    return Reply("", tuple(PlannedCall("bash", {"command": "true"}) for _ in range(count)))


BENCH_POLICIES = {BENCH_POLICY: bench_bash}


def pi_argv(
    runtime: PiRuntime,
    *,
    extension: bool,
    model: bool = False,
    append_prompt: Path | None = None,
) -> list[str]:
    argv = [*pi_command(runtime), "--mode", "rpc", "--no-session"]
    if model:
        argv += ["--provider", "fake", "--model", "fake-model"]
    argv.append("--no-extensions")
    if extension:
        argv += ["-e", str(EXTENSION)]
    if append_prompt is not None:
        argv += ["--append-system-prompt", str(append_prompt)]
    return argv


def pi_env(
    runtime: PiRuntime, agent_dir: Path, base: Mapping[str, str], extra: Mapping[str, str]
) -> dict[str, str]:
    env = pi_environment(base, agent_dir, runtime)
    env.update(extra)
    env["PI_SQUAD_BRIDGE"] = json.dumps(list(BRIDGE_ARGV))
    return env
