"""The private file that carries a child's appended system prompt (``--append-system-prompt``).

``mkstemp`` creates it with mode ``0600``; the runtime writes it before the start and the child's
waiter removes it once the process has exited (or the start failed).
"""

from __future__ import annotations

import contextlib
import os
import tempfile


def write_prompt_file(text: str, temp_dir: str | None) -> str:
    """A new private file holding ``text`` (UTF-8); its path. Nothing is left behind on failure."""
    data = text.encode("utf-8")
    descriptor, path = tempfile.mkstemp(prefix="pi-squad-", suffix="-prompt.md", dir=temp_dir)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
    except BaseException:
        remove_prompt_file(path)
        raise
    return path


def remove_prompt_file(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
