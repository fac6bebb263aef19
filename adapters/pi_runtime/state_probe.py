"""One ``get_state`` exchange with a Pi started for a check (``doctor``): did it answer, which
extension errors did it report, what did it write to stderr."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import attrs


@attrs.frozen
class StateProbe:
    answered: bool
    timed_out: bool
    errors: tuple[str, ...]
    returncode: int
    stderr: str


def ask_state(argv: list[str], env: Mapping[str, str], cwd: Path, timeout: float) -> StateProbe:
    """Send ``get_state`` (id "1") over RPC, wait for its answer, close stdin, collect the rest."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    records: queue.Queue[dict[str, Any] | None] = queue.Queue()
    stderr_chunks: list[bytes] = []
    readers = [
        threading.Thread(target=_read_records, args=(process.stdout, records), daemon=True),
        threading.Thread(target=_drain, args=(process.stderr, stderr_chunks), daemon=True),
    ]
    for reader in readers:
        reader.start()
    answered = False
    timed_out = False
    errors: list[str] = []
    try:
        process.stdin.write(b'{"type":"get_state","id":"1"}\n')
        process.stdin.flush()
        deadline = time.monotonic() + timeout
        while not answered:
            try:
                record = records.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                timed_out = True
                break
            if record is None:  # stdout closed: Pi exited
                break
            errors.extend(_extension_errors([record]))
            if record.get("type") == "response" and record.get("id") == "1":
                answered = bool(record.get("success"))
    except OSError as error:
        errors.append(f"could not talk to pi: {error}")
    finally:
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            returncode = process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            returncode = process.wait()
        for reader in readers:
            reader.join(timeout=2)
    # Events that arrived after the answer (e.g. from session_start handlers) count too.
    rest: list[dict[str, Any]] = []
    while not records.empty():
        record = records.get_nowait()
        if record is not None:
            rest.append(record)
    errors.extend(_extension_errors(rest))
    stderr = b"".join(stderr_chunks).decode("utf-8", "replace").strip()
    return StateProbe(answered, timed_out, tuple(errors), returncode, stderr)


def _extension_errors(records: list[dict[str, Any]]) -> list[str]:
    return [
        f"extension_error in {r.get('event')}: {r.get('error')}"
        for r in records
        if r.get("type") == "extension_error"
    ]


def _read_records(stream: IO[bytes], records: queue.Queue[dict[str, Any] | None]) -> None:
    """Pi's stdout as JSON records, split on ``\\n`` only (Pi writes U+2028/U+2029 raw)."""
    buffer = b""
    read = getattr(stream, "read1", stream.read)
    try:
        while True:
            chunk = read(65536)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if isinstance(record, dict):
                        records.put(record)
    finally:
        records.put(None)


def _drain(stream: IO[bytes], chunks: list[bytes]) -> None:
    while True:
        chunk = stream.read(65536)
        if not chunk:
            return
        chunks.append(chunk)
