"""The canonical JSON serialisation every ``sha256:`` identity of a flow value hashes.

It is pi-flows' ``JSON.stringify(canon(value))`` hashed as UTF-8, spelled out so a Python
process computes the same bytes as the JavaScript one (docs/flows.md, "Canonical
serialisation"):

* objects: first the keys that are array indices (``"0"`` to ``"4294967294"``, no leading
  zero) in numeric order (a JavaScript object always lists them first), then the other keys
  sorted by their UTF-16 code units (JavaScript's default sort; it differs from code-point
  order only for keys holding characters above U+FFFF); ``"key":value`` pairs joined by ``,``
  inside ``{}``, no whitespace anywhere;
* arrays: in their own order, joined by ``,`` inside ``[]``;
* strings: ``"`` and ``\\`` escaped, ``\\b \\f \\n \\r \\t`` as such, other code points below
  U+0020 and lone surrogates as lowercase ``\\u00xx`` / ``\\udxxx``, everything else as itself;
* numbers: ECMAScript ``Number::toString`` of the IEEE-754 double the JSON text denotes
  (``2000.0`` is ``2000``, ``1e21`` is ``1e+21``, ``1e-7`` is ``1e-7``, ``-0`` is ``0``); an
  integer beyond 2^53 is that double, as JavaScript parses it; one too large for a double is
  ``null``, as JavaScript writes ``Infinity``;
* ``true``, ``false``, ``null``;
* the text encoded as UTF-8.

Pure: no I/O.
"""

from __future__ import annotations

import decimal
import hashlib
import math
from typing import Any

_SAFE_INTEGER = 2**53
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def js_number(value: int | float) -> str:
    """ECMAScript ``Number::toString`` of ``value`` as a double (JSON's only number type)."""
    if isinstance(value, int) and abs(value) <= _SAFE_INTEGER:
        return str(value)
    try:
        number = float(value)
    except OverflowError:
        return "null"
    if not math.isfinite(number):
        return "null"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    # ``repr`` is the shortest text that round-trips, as JavaScript's digits are.
    digits_tuple, exponent = _digits(abs(number))
    digits = "".join(map(str, digits_tuple))
    k = len(digits)
    n = exponent + k
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def _digits(number: float) -> tuple[tuple[int, ...], int]:
    parsed = decimal.Decimal(repr(number)).as_tuple()
    digits = list(parsed.digits)
    exponent = int(parsed.exponent)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exponent += 1
    while len(digits) > 1 and digits[0] == 0:
        digits.pop(0)
    return tuple(digits), exponent


def js_string(text: str) -> str:
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


_MAX_INDEX = 2**32 - 2


def _key_order(key: str) -> tuple[int, int, bytes]:
    # A JavaScript object lists its array-index keys ("0" .. "4294967294", no leading zero)
    # first, in numeric order, whatever order they were added in: ``JSON.stringify`` of the
    # sorted object writes them so. The other keys follow in the sorted (UTF-16 code unit)
    # order; big-endian UTF-16 bytes compare as the code units do.
    if key.isascii() and key.isdigit() and (key == "0" or key[0] != "0"):
        index = int(key)
        if index <= _MAX_INDEX:
            return (0, index, b"")
    return (1, 0, key.encode("utf-16-be", "surrogatepass"))


def canonical_text(value: Any) -> str:
    """``value`` (JSON data: dict, list, str, int, float, bool, None) as canonical JSON text."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return js_string(value)
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(canonical_text(item) for item in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=_key_order)
        return "{" + ",".join(f"{js_string(k)}:{canonical_text(value[k])}" for k in keys) + "}"
    raise TypeError(f"not JSON data: {type(value).__name__}")


def canonical_bytes(value: Any) -> bytes:
    # ``surrogatepass`` never applies: lone surrogates were escaped above.
    return canonical_text(value).encode("utf-8")


def canonical_sha256(value: Any) -> str:
    """``sha256:`` + the hex SHA-256 of ``value``'s canonical bytes."""
    return "sha256:" + hashlib.sha256(canonical_bytes(value)).hexdigest()
