"""The names every face spells one way: a snake_case field's camelCase JSON key (and a record's
fields under those keys), the thinking levels Pi knows, the roster's tiers, the pattern of an
agent's name, and how a JSON Schema document of the project names itself and is written. The
domain's parsers and records and the schema scripts (``scripts/flow_schemas.py``,
``scripts/delegate_schemas.py``) all import them from here."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, get_args

import attrs

# Pi's thinking levels, lowest first (pi-ai 0.80.10).
Thinking = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
THINKING_LEVELS: tuple[Thinking, ...] = get_args(Thinking)

# The model roster's tiers (docs/flows.md, "The model roster"): what an agent, a call or a role
# may ask for instead of naming a model.
TIERS = ("fast", "capable", "deep")

# An agent's (or a preset's, or a graph node's) name, unanchored: each reader anchors it as
# its own matching requires (``fullmatch``, or ``^...$`` in a schema).
AGENT_NAME = "[A-Za-z0-9][A-Za-z0-9._-]{0,63}"

# The JSON Schema dialect of the project's schema documents (``domain/spec/schemas/``).
SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def schema_file(name: str, title: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The schema document ``<name>.schema.json``: its dialect, identity and title, then
    ``body``."""
    return {
        "$schema": SCHEMA_DRAFT,
        "$id": f"https://pi-squad.local/schemas/{name}.schema.json",
        "title": title,
        **body,
    }


def schema_text(document: Mapping[str, Any]) -> str:
    """A schema document as its committed file holds it."""
    return json.dumps(document, indent=2) + "\n"


def camel(name: str) -> str:
    """The JSON key of the field ``name``: ``max_cost_usd`` is ``maxCostUsd``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def camel_fields(record: attrs.AttrsInstance) -> dict[str, Any]:
    """An attrs record's fields in field order, each under its camelCase key, values as they are:
    the JSON object of a record whose every field is written as itself."""
    return {camel(field.name): getattr(record, field.name) for field in attrs.fields(type(record))}
