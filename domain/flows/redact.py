"""``redactSecrets``: secret-shaped strings, email addresses and the home directory taken out
of what a flow returns to its caller.

Best effort by shape, not a guarantee: a secret with no recognisable shape passes. Each match
is replaced by ``[REDACTED:<kind>]`` (the home directory by ``~``), so a reader sees that
something was removed and what kind it was.
"""

from __future__ import annotations

import re

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.S,
        ),
    ),
    ("aws-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("api-key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer", re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/-]{16,}=*")),
    ("email", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")),
)
# ``password = hunter22``: the name stays, the value goes.
_ASSIGNMENT = re.compile(
    r"(?i)\b((?:password|passwd|secret|token|api[_-]?key|access[_-]?key|client[_-]?secret)"
    r"\b[\"']?\s*[:=]\s*[\"']?)([^\s\"',;]{6,})"
)


def redact(text: str, *, home: str | None = None) -> str:
    for kind, pattern in _PATTERNS:
        text = pattern.sub(f"[REDACTED:{kind}]", text)
    text = _ASSIGNMENT.sub(lambda m: f"{m.group(1)}[REDACTED:secret]", text)
    if home and len(home) > 1:
        home = home.rstrip("/")
        # Only the directory itself or a path below it, never a longer name that starts alike.
        text = re.sub(re.escape(home) + r"(?=/|\b|$)", "~", text)
    return text
