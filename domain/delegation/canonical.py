"""The canonical serialisation every delegation digest is computed over (docs/delegation.md,
"Canonical serialisation").

- UTF-8 bytes of one JSON text with no insignificant whitespace (``,`` and ``:`` separators);
- object keys sorted by Unicode code point (Python's ``str`` order), each key once;
- strings exactly as given (no normalisation), non-ASCII written as UTF-8, not ``\\u`` escapes;
- numbers: integers only (booleans are JSON ``true``/``false``); a float is refused, so no
  value has two spellings;
- arrays in the order given: order is meaningful (jobs, requirements, sources);
- an omitted or unavailable input is written explicitly as ``null``, never left out.

A digest detects accidental drift. It is not a signature: anyone who can write the store can
recompute it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


class NotCanonical(ValueError):
    """A value that has no canonical form (a float, a non-string key, an unknown type)."""


def _check(value: Any, path: str) -> None:
    if value is None or isinstance(value, bool | str):
        return
    if isinstance(value, int):
        return
    if isinstance(value, float):
        raise NotCanonical(f"{path}: floats have no canonical form")
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check(item, f"{path}[{index}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotCanonical(f"{path}: object keys must be strings")
            _check(item, f"{path}.{key}")
        return
    raise NotCanonical(f"{path}: {type(value).__name__} has no canonical form")


def canonical_bytes(value: Any) -> bytes:
    _check(value, "$")
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def canonical_digest(value: Any) -> str:
    """SHA-256 (lowercase hex) of :func:`canonical_bytes`."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()
