"""The scripted model as Pi is pointed at it: ``models.json``, the ``python -m
adapters.scripted_model`` command line, and the saboteur's detached script."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from adapters.scripted_model import models_config, write_models_json
from adapters.scripted_model.policies import SABOTEUR_DONE, SABOTEUR_LOG, VERDICT_PASS
from adapters.scripted_model.saboteur import detached, saboteur_script
from tests.integration.scripted_model.completions_client import assemble, parse_sse, request

REPO = Path(__file__).resolve().parents[2]


def test_write_models_json(tmp_path: Path) -> None:
    path = write_models_json(tmp_path / "agent", "http://127.0.0.1:1234/v1/")
    document = json.loads(path.read_text())
    assert path == tmp_path / "agent" / "models.json"
    assert document == models_config("http://127.0.0.1:1234/v1")
    provider = document["providers"]["fake"]
    assert provider["baseUrl"] == "http://127.0.0.1:1234/v1"
    assert provider["api"] == "openai-completions"
    assert provider["models"][0]["id"] == "fake-model"
    assert sorted(p.name for p in (tmp_path / "agent").iterdir()) == ["models.json"]


def test_command_line_serves_until_terminated(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "adapters.scripted_model",
            "--port",
            "0",
            "--policy",
            "lazy",
            "--agent-dir",
            str(tmp_path),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert process.stdout is not None
        announced = json.loads(process.stdout.readline())
        assert announced["policy"] == "lazy"
        models = json.loads((tmp_path / "models.json").read_text())
        assert models["providers"]["fake"]["baseUrl"] == announced["baseUrl"]
        connection = http.client.HTTPConnection("127.0.0.1", announced["port"], timeout=10)
        connection.request("POST", "/v1/chat/completions", body=json.dumps(request("s", "go")))
        reply = assemble(parse_sse(connection.getresponse().read()))
        connection.close()
        assert VERDICT_PASS in reply["text"]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_saboteur_script_runs_to_its_end_after_the_reader_of_its_output_is_gone(
    tmp_path: Path,
) -> None:
    """Once the parent stops the child, nothing reads the bash tool's pipe any more; the detached
    script must still log every line, up to its done line, instead of dying of ``SIGPIPE``."""
    spec = tmp_path / "squad" / "spec" / "spec.md"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        finished = subprocess.run(
            ["bash", "-c", detached(saboteur_script(sibling="victim", only="no-such-attack"))],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.DEVNULL,
            cwd=tmp_path,
            env=dict(
                os.environ,
                PI_SQUAD_SPEC_PATH=str(spec),
                PI_SQUAD_TASK_ID="saboteur",
                PI_SQUAD_BRIDGE="[]",
            ),
            timeout=30,
            check=False,
        )
    finally:
        os.close(write_end)
    lines = (tmp_path / SABOTEUR_LOG).read_text(encoding="utf-8").splitlines()
    assert lines == [
        f"saboteur saboteur in {tmp_path / 'squad'}: sibling victim, deleting victim",
        SABOTEUR_DONE,
    ]
    assert finished.returncode == 0
