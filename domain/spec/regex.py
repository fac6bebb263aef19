"""ECMA-262 pattern semantics on Python's ``re`` (shared by both schema checks and the plan).

``jsonschema`` uses Python's ``re``, where ``$`` also matches before a final newline: the
contract's ``^[a-f0-9]{64}$`` would accept 64 hex digits plus ``"\\n"``. Patterns are therefore
translated so ``$`` means end of input, as in the JavaScript the schemas were written for.
"""

from __future__ import annotations

import functools
import re


def _ecma_to_python(pattern: str) -> str:
    """Make every unescaped ``$`` outside a character class mean end of input."""
    out: list[str] = []
    in_class = False
    escaped = False
    for char in pattern:
        if escaped:
            out.append(char)
            escaped = False
        elif char == "\\":
            out.append(char)
            escaped = True
        elif char == "[" and not in_class:
            in_class = True
            out.append(char)
        elif char == "]" and in_class:
            in_class = False
            out.append(char)
        elif char == "$" and not in_class:
            out.append(r"\Z")
        else:
            out.append(char)
    return "".join(out)


@functools.cache
def ecma_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(_ecma_to_python(pattern))
