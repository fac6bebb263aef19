"""``GitRange`` over the ``git`` command: argument lists (never a shell), the system and user
configuration ignored, no pager, no hooks, no optional locks, no external diff or textconv,
so a repository's own settings cannot run a program or write anything while it is read."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping

from domain.flows.code_review import ChangedFile

# A range's refs resolve in milliseconds; a diff of a large change set in seconds.
GIT_TIMEOUT_SECONDS = 60.0
_COMMIT_ID = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
# Read-only: each neutralises one way a repository's configuration could run a program.
_SETTINGS = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "diff.external=",
)


def git_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with Git kept to the repository's own data: no system or user
    configuration, no prompt, no pager, no optional locks."""
    found = {k: v for k, v in environ.items() if not k.startswith("GIT_")}
    found.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        GIT_OPTIONAL_LOCKS="0",
        LC_ALL="C",
    )
    return found


class GitCommandRange:
    """``GitRange`` through ``git`` (``executable``) in the caller's environment, cleaned."""

    def __init__(self, executable: str = "git", environ: Mapping[str, str] | None = None) -> None:
        self._executable = executable
        self._environ = git_environment(os.environ if environ is None else environ)

    def _run(self, cwd: str, *argv: str) -> bytes | None:
        settings = [arg for setting in _SETTINGS for arg in ("-c", setting)]
        try:
            done = subprocess.run(
                [self._executable, "--no-pager", *settings, *argv],
                cwd=cwd,
                env=self._environ,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=GIT_TIMEOUT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    def commit(self, cwd: str, ref: str) -> str | None:
        out = self._run(
            cwd, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"
        )
        return _commit_id(out)

    def merge_base(self, cwd: str, first: str, second: str) -> str | None:
        return _commit_id(self._run(cwd, "merge-base", "--end-of-options", first, second))

    def changed_files(self, cwd: str, base: str, head: str) -> tuple[ChangedFile, ...] | None:
        out = self._run(
            cwd,
            "diff",
            "--name-status",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "-z",
            "--end-of-options",
            base,
            head,
            "--",
        )
        if out is None:
            return None
        fields = out.decode("utf-8", errors="replace").split("\0")
        if fields and fields[-1] == "":
            fields.pop()
        return tuple(
            ChangedFile(status, path)
            for status, path in zip(fields[::2], fields[1::2], strict=True)
        )


def _commit_id(out: bytes | None) -> str | None:
    text = (out or b"").decode("ascii", errors="replace").strip()
    return text if _COMMIT_ID.match(text) else None
