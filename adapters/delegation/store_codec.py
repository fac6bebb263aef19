"""The JSON shape of the delegation state's values: camelCase fields, ``Usage`` as the row
receipts show, compact UTF-8 bytes; and the single-document ``state.json`` the store wrote
before it kept parts (read, and replaced by a head at the first write)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from domain.delegation.session import SessionState
from domain.delegation.usage_rows import usage_from_totals, usage_totals
from domain.names import camel
from domain.strict_json import decode_json
from domain.usage import Usage


def _converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)

    def renames(cls: type[Any]) -> dict[str, Any]:
        return {f.name: override(rename=camel(f.name)) for f in attrs.fields(cls)}

    def structure(cls: type[Any]) -> Callable[[Any, Any], Any]:
        return make_dict_structure_fn(cls, converter, **renames(cls))

    def unstructure(cls: type[Any]) -> Callable[[Any], Any]:
        return make_dict_unstructure_fn(cls, converter, **renames(cls))

    converter.register_structure_hook_factory(attrs.has, structure)
    converter.register_unstructure_hook_factory(attrs.has, unstructure)
    # A usage keeps the row receipts show: "never reported" is null, not 0.
    converter.register_unstructure_hook(Usage, usage_totals)
    converter.register_structure_hook(Usage, lambda row, _: usage_from_totals(row))
    return converter


CONVERTER = _converter()


def encode_document(document: Any) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def encode_state(state: SessionState) -> bytes:
    """The whole state as one document: the layout before parts (tests build old sessions)."""
    return encode_document(CONVERTER.unstructure(state))


def structure_state(document: Any) -> SessionState:
    state: SessionState = CONVERTER.structure(document, SessionState)
    return state


def decode_state(data: bytes) -> SessionState:
    """A whole-state document's bytes (``encode_state``'s) as the state."""
    return structure_state(decode_json(data))
