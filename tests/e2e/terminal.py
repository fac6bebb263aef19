"""A real interactive program in a pseudo-terminal, its screen rendered by a terminal emulator
(pexpect drives it, pyte draws what a person would see)."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import cast

import pexpect
import pyte

# A directory where every screen a test waited for is kept (unset: none is).
SCREENS_VARIABLE = "PI_SQUAD_TEST_SCREENS"
COLUMNS = 160
LINES = 48


class Terminal:
    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        *,
        columns: int = COLUMNS,
        lines: int = LINES,
    ) -> None:
        self.screen = pyte.Screen(columns, lines)
        self._stream = pyte.ByteStream(self.screen)
        self._lock = threading.Lock()
        self.transcript = bytearray()
        self.child = pexpect.spawn(
            argv[0],
            list(argv[1:]),
            env={**env, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(lines)},
            cwd=str(cwd),
            dimensions=(lines, columns),
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = self.child.read_nonblocking(65536, timeout=0.2)
            except pexpect.TIMEOUT:
                continue
            except (pexpect.EOF, OSError):  # the program ended, or close() closed the pty
                return
            chunk = cast(bytes, data)  # no encoding given: pexpect reads bytes
            with self._lock:
                self.transcript.extend(chunk)
                self._stream.feed(chunk)

    def text(self) -> str:
        """The screen as it looks now, one line per row."""
        with self._lock:
            return "\n".join(line.rstrip() for line in self.screen.display)

    def wait_for(
        self, wanted: str | re.Pattern[str] | Callable[[str], bool], timeout: float = 60.0
    ) -> str:
        """The screen once it shows ``wanted``; fails with the screen as it was."""
        if isinstance(wanted, str):
            found: Callable[[str], bool] = lambda screen: wanted in screen  # noqa: E731
        elif isinstance(wanted, re.Pattern):
            pattern = wanted
            found = lambda screen: pattern.search(screen) is not None  # noqa: E731
        else:
            found = wanted
        deadline = time.monotonic() + timeout
        while True:
            screen = self.text()
            if found(screen):
                self._keep(screen, wanted)
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never showed {wanted!r}; it shows:\n{screen}")
            time.sleep(0.1)

    def _keep(self, screen: str, wanted: object) -> None:
        """With ``SCREENS_VARIABLE`` naming a directory, each screen a test waited for is written
        there: the terminal captures a closing note shows, taken from the tests' own runs."""
        directory = os.environ.get(SCREENS_VARIABLE)
        if not directory:
            return
        kept = Path(directory)
        kept.mkdir(parents=True, exist_ok=True)
        number = len(list(kept.iterdir())) + 1
        test = os.environ.get("PYTEST_CURRENT_TEST", "unknown").split(" ")[0]
        body = f"# {test}\n# waited for: {wanted!r}\n{screen.rstrip()}\n"
        (kept / f"{number:03d}.txt").write_text(body, encoding="utf-8")

    def type(self, text: str) -> None:
        """Keys, as a person types them; ``\\r`` is Enter."""
        for key in text:
            self.child.send(key)
            time.sleep(0.01)

    def close(self) -> None:
        if self.child.isalive():
            self.child.sendcontrol("c")
            time.sleep(0.3)
            self.child.sendcontrol("c")
            time.sleep(0.3)
            self.child.sendcontrol("d")
            self.child.close(force=True)
        self._reader.join(timeout=5)
