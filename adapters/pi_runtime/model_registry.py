"""``PiModelRegistry``: the models this Pi install can run, asked of Pi's own model registry.

Runs ``entrypoints/pi/model-registry.mjs`` with the runtime's Node: it loads that Pi's
``ModelRuntime`` with the network off and lists ``getAvailable()`` (built-in providers with
credentials, ``models.json``'s models), under the environment the children start with, so the
answer is the one a child's Pi would resolve. About a second; bounded by ``timeout``.

Never raises: no runtime, a timeout, a failed exit or output that is not the expected JSON line
is an ``AvailableModels`` with its ``problem``, and the roster falls back to ``models.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from adapters.pi_runtime.locate import PI_PACKAGE
from domain.flows.models import AvailableModels, parse_available

SOURCE = "Pi's model registry"
DEFAULT_TIMEOUT_SECONDS = 20.0
MAX_OUTPUT_BYTES = 8 * 1024 * 1024
_MAX_PROBLEM = 200


class PiModelRegistry:
    """``pi_command``: the argv that starts Pi (``[node, <pi>/dist/cli.js]``); ``environ``: the
    children's environment (``PI_CODING_AGENT_DIR`` and the providers' variables decide what
    is available); ``script``: the path of ``model-registry.mjs``."""

    def __init__(
        self,
        pi_command: Sequence[str],
        environ: Mapping[str, str],
        script: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self._pi_command = tuple(pi_command)
        self._environ = dict(environ)
        self._script = script
        self._timeout = timeout

    def available_models(self) -> AvailableModels:
        if len(self._pi_command) < 2:
            return _failed("no Node + Pi command to ask it with")
        node, entry = self._pi_command[0], self._pi_command[-1]
        package = pi_package_dir(entry)
        if package is None:
            return _failed(f"no {PI_PACKAGE} package around {entry}")
        # Offline twice over: the script turns the registry's network off, and Pi's own
        # variables keep anything else it loads from calling home.
        env = {**self._environ, "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}
        env["PI_TELEMETRY"] = "0"
        try:
            completed = subprocess.run(
                [node, self._script, str(package)],
                capture_output=True,
                timeout=self._timeout,
                env=env,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return _failed(f"no answer within {self._timeout:g} s")
        except OSError as error:
            return _failed(f"cannot run {node}: {error.strerror or error}")
        return parse_answer(completed.stdout, completed.returncode)


def parse_answer(stdout: bytes, returncode: int) -> AvailableModels:
    """The script's one JSON line (the last line of ``stdout``, in case Pi printed anything
    before it)."""
    if len(stdout) > MAX_OUTPUT_BYTES:
        return _failed(f"answer larger than {MAX_OUTPUT_BYTES} bytes")
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        document = json.loads(lines[-1]) if lines else None
    except ValueError:
        document = None
    if not isinstance(document, dict):
        return _failed(f"no JSON answer (exit status {returncode})")
    error = document.get("error")
    error_text = _one_line(error) if isinstance(error, str) and error else None
    entries = document.get("models")
    if returncode != 0 or not isinstance(entries, list):
        return _failed(error_text or f"exit status {returncode}")
    models, skipped = parse_available(entries)
    warnings = [error_text] if error_text is not None else []
    if skipped:
        warnings.append(f"{skipped} malformed model entries skipped")
    return AvailableModels(models, SOURCE, warning="; ".join(warnings) or None)


def pi_package_dir(entry: str) -> Path | None:
    """The ``@earendil-works/pi-coding-agent`` directory holding Pi's entry script."""
    for directory in Path(entry).resolve().parents:
        manifest = directory / "package.json"
        try:
            name = json.loads(manifest.read_text(encoding="utf-8")).get("name")
        except (OSError, ValueError, AttributeError):
            continue
        if name == PI_PACKAGE and (directory / "dist" / "index.js").is_file():
            return directory
    return None


def _failed(problem: str) -> AvailableModels:
    return AvailableModels((), SOURCE, problem=_one_line(problem))


def _one_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else "no reason given"
    return first if len(first) <= _MAX_PROBLEM else first[: _MAX_PROBLEM - 1] + "…"


def script_path(extension_dir: str | os.PathLike[str]) -> str:
    """Where the script sits in pi-squad's Pi package (``entrypoints/pi``)."""
    return os.path.join(os.fspath(extension_dir), "model-registry.mjs")
