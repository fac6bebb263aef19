"""What ``pi-squad --version`` prints, without importing anything else of pi-squad's.

``VERSION`` is the ``[project] version`` of ``pyproject.toml``, written here because reading the
installed distribution's metadata (``importlib.metadata``) costs more than the rest of
``--version``; a unit test holds the two equal.
"""

from __future__ import annotations

from domain.pi_version import PI_VERSION

DISTRIBUTION = "pi-squad"
VERSION = "0.1.0"


def version_text() -> str:
    return f"{DISTRIBUTION} {VERSION} (Pi {PI_VERSION})"
