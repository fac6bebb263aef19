"""The ``GitWorktrees`` port over the ``git`` command line.

Every command is an argument list (never a shell), with the system configuration ignored
(``GIT_CONFIG_NOSYSTEM``), no hook, pager, editor, fsmonitor, signing or credential prompt: a
repository's own settings cannot run code or wait for a person here. Commits are made as
``pi-squad flow`` (the parent commits the children's work), so they need no configured identity.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from application.ports import GitFailed, GitWorktrees

# Options that switch off what a repository's configuration could run or wait on.
_NEUTRAL = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "merge.verifySignatures=false",
    "-c",
    "credential.helper=",
)
_IDENTITY = {
    "GIT_AUTHOR_NAME": "pi-squad flow",
    "GIT_AUTHOR_EMAIL": "pi-squad-flow@localhost",
    "GIT_COMMITTER_NAME": "pi-squad flow",
    "GIT_COMMITTER_EMAIL": "pi-squad-flow@localhost",
}
_MARKERS = ("<<<<<<< ", ">>>>>>> ")
_TIMEOUT_SECONDS = 120


def _environ() -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {
        **kept,
        **_IDENTITY,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "GIT_EDITOR": "true",
        "GIT_MERGE_AUTOEDIT": "no",
        "LC_ALL": "C",
    }


class SubprocessGitWorktrees:
    def __init__(self, executable: str = "git") -> None:
        self._git = executable

    def _run(self, cwd: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [self._git, "--no-pager", *_NEUTRAL, *args]
        try:
            done = subprocess.run(  # an argument list, never a shell
                argv,
                cwd=cwd,
                env=_environ(),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=_TIMEOUT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise GitFailed(f"git {' '.join(args)} could not run in {cwd}: {error}") from None
        if check and done.returncode != 0:
            said = (done.stderr or done.stdout).strip()
            raise GitFailed(f"git {' '.join(args)} exited {done.returncode}: {said}")
        return done

    def toplevel(self, cwd: str) -> str | None:
        try:
            done = self._run(cwd, "rev-parse", "--show-toplevel", check=False)
        except GitFailed:
            return None
        return done.stdout.strip() or None if done.returncode == 0 else None

    def resolve(self, cwd: str, ref: str) -> str | None:
        done = self._run(
            cwd,
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            f"{ref}^{{commit}}",
            check=False,
        )
        return done.stdout.strip() or None if done.returncode == 0 else None

    def dirty_paths(self, cwd: str) -> tuple[str, ...]:
        done = self._run(cwd, "status", "--porcelain=v1", "-z", "--untracked-files=all")
        entries = [entry for entry in done.stdout.split("\0") if entry]
        paths: list[str] = []
        skip_next = False
        for entry in entries:
            if skip_next:  # a rename's source path follows its entry
                skip_next = False
                continue
            paths.append(entry[3:])
            skip_next = entry[0] in "RC"
        return tuple(sorted(paths))

    def scratch_dir(self, prefix: str) -> str:
        return tempfile.mkdtemp(prefix=prefix)

    def add_worktree(self, repo: str, path: str, branch: str, start: str) -> None:
        self._run(repo, "worktree", "add", "-b", branch, "--end-of-options", path, start)

    def commit_all(self, cwd: str, message: str) -> str | None:
        self._run(cwd, "add", "--all")
        staged = self._run(cwd, "diff", "--cached", "--quiet", check=False)
        if staged.returncode == 0:
            return None
        self._run(cwd, "commit", "--quiet", "--no-verify", "-m", message)
        return self._run(cwd, "rev-parse", "HEAD").stdout.strip()

    def merge(self, cwd: str, branch: str, message: str) -> tuple[str, ...]:
        done = self._run(
            cwd,
            "merge",
            "--no-ff",
            "--no-edit",
            "-m",
            message,
            "--end-of-options",
            branch,
            check=False,
        )
        if done.returncode == 0:
            return ()
        conflicts = self._unmerged(cwd)
        if not conflicts:
            said = (done.stderr or done.stdout).strip()
            raise GitFailed(f"git merge {branch} exited {done.returncode}: {said}")
        return conflicts

    def _unmerged(self, cwd: str) -> tuple[str, ...]:
        done = self._run(cwd, "diff", "--name-only", "-z", "--diff-filter=U")
        return tuple(sorted({path for path in done.stdout.split("\0") if path}))

    def unresolved(self, cwd: str, paths: tuple[str, ...]) -> tuple[str, ...]:
        unmerged = set(self._unmerged(cwd))
        return tuple(path for path in paths if path in unmerged or _marked(Path(cwd, path)))

    def conclude(self, cwd: str, message: str) -> str:
        self._run(cwd, "add", "--all")
        merging = self._run(cwd, "rev-parse", "--quiet", "--verify", "MERGE_HEAD", check=False)
        staged = self._run(cwd, "diff", "--cached", "--quiet", check=False)
        if merging.returncode == 0 or staged.returncode != 0:
            self._run(cwd, "commit", "--quiet", "--no-verify", "-m", message)
        return self._run(cwd, "rev-parse", "HEAD").stdout.strip()

    def is_ancestor(self, cwd: str, ancestor: str, descendant: str) -> bool:
        done = self._run(
            cwd,
            "merge-base",
            "--is-ancestor",
            "--end-of-options",
            ancestor,
            descendant,
            check=False,
        )
        return done.returncode == 0

    def remove_worktree(self, repo: str, path: str) -> None:
        self._run(repo, "worktree", "remove", "--force", "--end-of-options", path)

    def delete_branch(self, repo: str, branch: str) -> None:
        self._run(repo, "branch", "-D", "--end-of-options", branch)

    def remove_dir(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)


def _marked(path: Path) -> bool:
    """Whether the file still holds a conflict marker line (a removed file holds none)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError):
        return False
    return any(line.startswith(_MARKERS) for line in text.splitlines())


_conforms: type[GitWorktrees] = SubprocessGitWorktrees
