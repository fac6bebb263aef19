"""The contract's JSON Schema documents, shipped as package data (no validator loaded here)."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any


@functools.cache
def schema_document(name: str) -> dict[str, Any]:
    text = (
        resources.files("domain.spec")
        .joinpath("schemas", f"{name}.schema.json")
        .read_text(encoding="utf-8")
    )
    document: dict[str, Any] = json.loads(text)
    return document
