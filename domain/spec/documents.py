"""The JSON Schema documents of every external input, shipped as package data.

``schemas/`` holds the contract's documents (``spec-v1``, ``squad-call``, ``spec-read-call``)
and pi-squad's own inputs beside them (the main Pi's tool calls, the new-task object, review
evidence, agent definition files): one directory, one loader, one validator
(``domain.spec.schema``). Reading a file the package ships is not I/O the domain depends on:
the documents are constants of the code, read once and cached. No validator is loaded here.

A document may point at a sibling file with ``{"$ref": "<name>.schema.json"}``. Tool
parameters must be self-contained (model providers resolve no references), so
:func:`self_contained_document` inlines every such reference; validation uses the same
inlined document, so what a tool advertises and what is checked are one definition.
"""

from __future__ import annotations

import functools
import json
import pkgutil
from typing import Any

from domain.spec.tool_schema import provider_parameters

_SUFFIX = ".schema.json"
# Keys that identify a document as a file; they do not belong inside another document.
_FILE_KEYS = ("$schema", "$id", "title")


@functools.cache
def schema_document(name: str) -> dict[str, Any]:
    # ``pkgutil.get_data`` (the package's loader, so a zipped install works too), not
    # ``importlib.resources``: that imports ``tempfile``, ``shutil``, ``pathlib`` and more, ~8 ms
    # of every child bridge's start-up, which reads its reader tool's schema before ``hello``.
    data = pkgutil.get_data("domain.spec", f"schemas/{name}{_SUFFIX}")
    if data is None:
        raise FileNotFoundError(f"schemas/{name}{_SUFFIX} is not in the domain.spec package")
    document: dict[str, Any] = json.loads(data.decode("utf-8"))
    return document


def _embedded(name: str) -> dict[str, Any]:
    document = self_contained_document(name)
    return {key: value for key, value in document.items() if key not in _FILE_KEYS}


def _inline(node: Any) -> Any:
    if isinstance(node, dict):
        reference = node.get("$ref")
        if isinstance(reference, str) and reference.endswith(_SUFFIX):
            if len(node) != 1:
                raise ValueError(f"a reference to {reference} must stand alone")
            return _embedded(reference.removesuffix(_SUFFIX))
        return {key: _inline(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(item) for item in node]
    return node


@functools.cache
def self_contained_document(name: str) -> dict[str, Any]:
    """``schema_document`` with every sibling-file reference replaced by that file's schema."""
    inlined: dict[str, Any] = _inline(schema_document(name))
    return inlined


def tool_parameters(name: str) -> dict[str, Any]:
    """A tool's ``parameters`` as every provider accepts them
    (``domain.spec.tool_schema.provider_parameters`` of the self-contained schema): what the
    model is shown. Its input is validated against the full ``self_contained_document``."""
    return provider_parameters(self_contained_document(name))
