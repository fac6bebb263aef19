"""A shell transcript in a document, read as steps, run, and compared with what it shows.

A transcript is a fenced ``console`` block: a line starting ``$ `` begins a command, a line
starting ``> `` continues it (a here-document, a function), any other line is the command's
output. An output is either nothing or one JSON document in which ``…`` stands for what the
document leaves out (``matches``): a string ``"…"`` is any value, ``…`` inside a string is any
text, a key ``"…"`` admits keys the document does not show, a last element ``"…"`` admits more
elements. Everything else must be exactly what the run printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import attrs

ELLIPSIS = "…"
FENCE = re.compile(r"^```console\n(.*?)^```", re.MULTILINE | re.DOTALL)
STEP_MARK = "@@transcript-step@@"


@attrs.frozen
class Step:
    command: str
    output: str

    def shown(self) -> Any:
        """The output as the document shows it: ``None`` (nothing) or its JSON."""
        return json.loads(self.output) if self.output.strip() else None


def section(text: str, heading: str) -> str:
    """The text of the section under ``heading`` (a whole heading line), to the next heading
    of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(heading + "\n") + len(heading) + 1
    ends = re.compile(rf"^#{{1,{level}}} ", re.MULTILINE)
    found = ends.search(text, start)
    return text[start : found.start() if found else len(text)]


def steps(text: str) -> list[Step]:
    """The steps of every ``console`` block in ``text``, in order."""
    found: list[Step] = []
    command: list[str] = []
    output: list[str] = []
    for block in FENCE.findall(text):
        for line in block.splitlines():
            if line.startswith("$ "):
                if command:
                    found.append(Step("\n".join(command), "\n".join(output)))
                command, output = [line[2:]], []
            elif line.startswith("> ") or line == ">":
                command.append(line[2:])
            else:
                output.append(line)
    if command:
        found.append(Step("\n".join(command), "\n".join(output)))
    return found


def run(
    found: list[Step], cwd: Path, env: dict[str, str], prelude: str, timeout: float
) -> list[str]:
    """Every step's command run in one ``bash`` from ``cwd`` after ``prelude``, in order;
    what each printed on stdout. Raises ``AssertionError`` (with stderr) if one fails.

    The shell leads its own process group, killed whole once it has ended (or ``timeout``
    passed): whatever a step left in the background goes with it. Output goes to files, not
    pipes, so a background process holding them open cannot keep the run waiting."""
    script = [prelude, "set -e"]
    for step in found:
        script += [f"echo {STEP_MARK}", step.command]
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        shell = subprocess.Popen(
            ["bash", "-c", "\n".join(script)],
            cwd=cwd,
            env=env,
            stdout=stdout,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
        try:
            returncode = shell.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(shell.pid, signal.SIGKILL)
            shell.wait()
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read(), stderr.read()
    assert returncode == 0, f"exit {returncode}\n{out}{err}"
    printed = out.split(STEP_MARK + "\n")[1:]
    assert len(printed) == len(found), out + err
    return printed


def _wildcard(shown: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in shown.split(ELLIPSIS)), re.DOTALL)


def mismatch(shown: Any, printed: Any, path: str = "$") -> str | None:
    """Where ``printed`` is not what ``shown`` shows (a JSON path and why), ``None`` if it is."""
    if shown == ELLIPSIS:
        return None
    if isinstance(shown, str) and ELLIPSIS in shown:
        if isinstance(printed, str) and _wildcard(shown).fullmatch(printed):
            return None
        return f"{path}: {printed!r} is not {shown!r}"
    if isinstance(shown, dict) and isinstance(printed, dict):
        return _dict_mismatch(shown, printed, path)
    if isinstance(shown, list) and isinstance(printed, list):
        return _list_mismatch(shown, printed, path)
    if type(shown) is not type(printed) or shown != printed:
        return f"{path}: printed {printed!r}, the document shows {shown!r}"
    return None


def _dict_mismatch(shown: dict[str, Any], printed: dict[str, Any], path: str) -> str | None:
    keys = set(shown) - {ELLIPSIS}
    if not keys <= set(printed):
        return f"{path}: no {sorted(keys - set(printed))} in what was printed"
    if ELLIPSIS not in shown and keys != set(printed):
        return f"{path}: printed {sorted(set(printed) - keys)} the document does not show"
    for key in sorted(keys):
        found = mismatch(shown[key], printed[key], f"{path}.{key}")
        if found:
            return found
    return None


def _list_mismatch(shown: list[Any], printed: list[Any], path: str) -> str | None:
    more = bool(shown) and shown[-1] == ELLIPSIS
    listed = shown[:-1] if more else shown
    if len(printed) < len(listed) or (not more and len(printed) != len(listed)):
        return f"{path}: {len(printed)} elements printed, the document shows {len(shown)}"
    for index, element in enumerate(listed):
        found = mismatch(element, printed[index], f"{path}[{index}]")
        if found:
            return found
    return None


def step_mismatch(step: Step, printed: str) -> str | None:
    """Where a step's printed output is not what the document shows, ``None`` if it is."""
    shown = step.shown()
    if shown is None:
        return None if not printed.strip() else f"printed {printed!r}, the document shows nothing"
    try:
        document = json.loads(printed)
    except json.JSONDecodeError:
        return f"printed {printed!r}, not JSON"
    return mismatch(shown, document)


# The variables a document's transcript sets for itself; the test's temporary directory stands
# in for the user's home, so that `mktemp -d` and any stray write land in it.
OWN_VARIABLES = frozenset({"PI_SQUAD_ROOT", "PI_CODING_AGENT_DIR", "PI_SQUAD_CHILD", "VIRTUAL_ENV"})
# A transcript that starts the scripted model in the background stops it with the shell.
STOP_THE_MODEL = "trap 'if [ -n \"${MODEL:-}\" ]; then kill $MODEL 2>/dev/null || true; fi' EXIT"


def document_drifts(
    document: Path, heading: str, repo: Path, scratch: Path, timeout: float
) -> list[str]:
    """Every step of the ``heading`` section of ``document`` run in one shell from ``repo``
    (``TMPDIR`` and ``HOME`` under ``scratch``); each step whose printed output is not what the
    document shows, as ``$ command`` and where it drifted. Empty: the section runs as written."""
    found = steps(section(document.read_text(encoding="utf-8"), heading))
    env = {key: value for key, value in os.environ.items() if key not in OWN_VARIABLES}
    env.update(TMPDIR=str(scratch), HOME=str(scratch / "home"))
    printed = run(found, repo, env, STOP_THE_MODEL, timeout)
    drifts = [
        (step, step_mismatch(step, output)) for step, output in zip(found, printed, strict=True)
    ]
    return [f"$ {step.command}\n{drift}" for step, drift in drifts if drift is not None]
