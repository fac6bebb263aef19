"""The fields tables of ``docs/reference/fields.md``, read from the JSON Schema files the
validation itself uses (``domain/spec/schemas/``), so a field, bound or pattern the page shows is
the one a call is checked against. ``scripts/gen_docs.py`` writes them; a test compares.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

SCHEMAS = Path(__file__).resolve().parents[1] / "domain" / "spec" / "schemas"
SUFFIX = ".schema.json"

# The squad inputs in the order the page explains them. Flow and delegation schemas are found by
# their prefix, led by the forms a call takes: the flow modes, and the ops the `delegate` tool's
# schema names. A schema file in no group makes the generator fail, so none goes undocumented.
SQUAD_INPUTS = (
    "spec-v1",
    "squad-call",
    "squad-status-call",
    "squad-modify-call",
    "new-task",
    "squad-review-call",
    "squad-message-call",
    "spec-read-call",
    "agent-definition",
)
# Rows these schemas share word for word are shown once, under COMMON_HEADING.
FLOW_MODES = tuple(
    f"flow-{mode}-v1"
    for mode in ("list", "show-config", "single", "parallel", "chain", "graph", "tool")
)
DELEGATE_TOOL = "delegate-tool-v1"
LEADS = {
    "Squads": "The spec file, the squad tools of the main Pi (the same objects the CLI's "
    "`--task-json` and `review` options build), a child's reader call and an agent file.",
    "Flows": "A flow call is one mode's closed object; the `flow` tool takes the union of the "
    "modes and a preset. Fields every mode takes are listed once, under *Every flow mode*.",
    "Delegation": "One closed request per `op` (the `delegate` tool takes any of them), the "
    "policy file (the human grant), the worker's result and the evidence broker's three tools.",
}
COMMON_HEADING = "Every flow mode"

Row = tuple[str, str, str, str]  # field, type, required, rule


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((SCHEMAS / f"{name}{SUFFIX}").read_text("utf-8"))
    return document


def schema_names() -> list[str]:
    return sorted(p.name.removesuffix(SUFFIX) for p in SCHEMAS.glob(f"*{SUFFIX}"))


def code(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return "`" + text.replace("|", "\\|") + "`"


def reference(ref: str) -> str:
    name = ref.removesuffix(SUFFIX)
    return f"[`{name}`](#{name})"


def number(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def bounds(low: object, high: object, unit: str) -> str:
    low, high = (None if v is None else number(v) for v in (low, high))
    if low is not None and high is not None:
        return f"{low}..{high} {unit}".rstrip()
    if low is not None:
        return f"≥ {low} {unit}".rstrip()
    if high is not None:
        return f"≤ {high} {unit}".rstrip()
    return ""


def length(low: object, high: object) -> str:
    return bounds(None if low == 0 else low, high, "chars")


def scalar_type(node: dict[str, Any]) -> str:
    kind = node.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if "const" in node:
        return {bool: "boolean", int: "integer", str: "string"}.get(type(node["const"]), "value")
    if "enum" in node:
        return "enum"
    if "$ref" in node:
        return reference(node["$ref"])
    if "oneOf" in node:
        return "one of"
    return str(kind) if kind else "any"


def rules(node: dict[str, Any]) -> list[str]:
    found: list[str] = []
    if "const" in node:
        found.append(f"exactly {code(node['const'])}")
    if "enum" in node:
        found.append("one of " + ", ".join(code(v) for v in node["enum"]))
    if node.get("pattern") == "\\S":
        found.append("not blank")
    elif "pattern" in node:
        found.append(f"pattern {code(node['pattern'])}")
    if "minLength" in node or "maxLength" in node:
        low, high = node.get("minLength"), node.get("maxLength")
        found.append("non-empty" if low == 1 and high is None else length(low, high))
    if "minimum" in node or "maximum" in node:
        found.append(bounds(node.get("minimum"), node.get("maximum"), ""))
    if "minItems" in node or "maxItems" in node:
        found.append(bounds(node.get("minItems"), node.get("maxItems"), "items"))
    if node.get("uniqueItems"):
        found.append("unique items")
    if "minProperties" in node or "maxProperties" in node:
        found.append(bounds(node.get("minProperties"), node.get("maxProperties"), "entries"))
    if "propertyNames" in node:
        found.append(f"keys match {code(node['propertyNames'].get('pattern'))}")
    alternatives = node.get("oneOf", [])
    if alternatives and all(set(alt) == {"required"} for alt in alternatives):
        names = ", ".join(code(alt["required"][0]) for alt in alternatives)
        found.append(f"exactly one of {names}")
    elif alternatives:
        found.append("; or ".join(describe(alt) for alt in alternatives))
    return [rule for rule in found if rule]


def describe(node: dict[str, Any]) -> str:
    """One alternative of a ``oneOf`` in a cell: its type and rules."""
    if "$ref" in node:
        return reference(node["$ref"])
    kind = scalar_type(node)
    if kind == "array":
        kind = f"array of {describe(node.get('items', {}))}"
    return ", ".join([kind, *rules(node)])


def field_rows(node: dict[str, Any], prefix: str) -> Iterator[Row]:
    """A row per field of an object schema, nested fields under dotted paths (``a[].b``)."""
    required = set(node.get("required", ()))
    for name, child in node.get("properties", {}).items():
        yield from value_rows(child, f"{prefix}{name}", "yes" if name in required else "")


def uniform_keys(node: dict[str, Any]) -> dict[str, Any] | None:
    """The one schema every optional key of ``node`` shares, when there are many such keys
    (``modeHandoffPolicy``): shown as one row, not one row a key."""
    values = list(node.get("properties", {}).values())
    if len(values) > 4 and not node.get("required") and all(v == values[0] for v in values):
        return dict(values[0])
    return None


def value_rows(node: dict[str, Any], path: str, required: str) -> Iterator[Row]:
    kind = scalar_type(node)
    found = rules(node)
    shared = uniform_keys(node)
    if shared is not None:
        keys = ", ".join(code(key) for key in node["properties"])
        yield (code(path), kind, required, f"optional keys {keys}: each {describe(shared)}")
        return
    items = node.get("items")
    if kind.startswith("array") and isinstance(items, dict):
        of = "objects" if "properties" in items else describe(items)
        kind = kind.replace("array", f"array of {of}", 1)
    entries = node.get("additionalProperties")
    if isinstance(entries, dict):
        kind = "map of objects" if "properties" in entries else f"map of {describe(entries)}"
    yield (code(path), kind, required, "; ".join(found))
    if "properties" in node:
        yield from field_rows(node, f"{path}.")
    if isinstance(items, dict) and "properties" in items:
        yield from field_rows(items, f"{path}[].")
        yield from item_constraints(items, f"{path}[]")
    if isinstance(entries, dict) and "properties" in entries:
        yield from field_rows(entries, f"{path}.<key>.")


def item_constraints(items: dict[str, Any], path: str) -> Iterator[Row]:
    """A constraint on a whole array item (``oneOf`` of required fields) as a row of its own."""
    if "oneOf" in items:
        yield (code(path), "object", "", "; ".join(rules({"oneOf": items["oneOf"]})))


def schema_rows(document: dict[str, Any]) -> list[Row]:
    if "properties" in document:
        return list(field_rows(document, ""))
    return []


def table(rows: Sequence[Row]) -> list[str]:
    lines = ["| Field | Type | Required | Rule |", "|---|---|---|---|"]
    lines += [f"| {field} | {kind} | {required} | {rule} |" for field, kind, required, rule in rows]
    return lines


def forms(document: dict[str, Any]) -> list[str]:
    """A schema that is a ``oneOf`` of whole objects (``squad-call``) or of other schemas."""
    lines: list[str] = []
    for number, alternative in enumerate(document.get("oneOf", []), start=1):
        if "properties" in alternative:
            lines += ["", f"Form {number}:", "", *table(list(field_rows(alternative, "")))]
        else:
            lines.append(f"- {describe(alternative)}")
    return lines


def common_rows() -> list[Row]:
    shared = [set(schema_rows(load(name))) for name in FLOW_MODES]
    first = schema_rows(load(FLOW_MODES[0]))
    return [row for row in first if all(row in rows for rows in shared)]


def section(name: str, hidden: set[Row]) -> list[str]:
    document = load(name)
    lines = ["", f"### `{name}`", "", f"{document.get('title', name)}.", ""]
    rows = [row for row in schema_rows(document) if row not in hidden]
    if "oneOf" in document:
        lines.append("One of:")
        lines += forms(document)
    elif rows:
        lines += table(rows)
    elif "properties" in document:
        lines.append(f"Only the fields of [{COMMON_HEADING}](#every-flow-mode).")
    return lines


def groups(names: Sequence[str]) -> dict[str, list[str]]:
    ops = [form["$ref"].removesuffix(SUFFIX) for form in load(DELEGATE_TOOL)["oneOf"]]

    def led_by(prefix: str, first: Sequence[str]) -> list[str]:
        rest = sorted(n for n in names if n.startswith(prefix) and n not in first)
        return [*first, *rest]

    return {
        "Squads": list(SQUAD_INPUTS),
        "Flows": led_by("flow-", FLOW_MODES),
        "Delegation": led_by("delegate-", ops),
    }


def render() -> str:
    """The fields region: every schema file, grouped; a file in no group is an error."""
    names = schema_names()
    grouped = groups(names)
    listed = {name for members in grouped.values() for name in members}
    missing, stale = sorted(set(names) - listed), sorted(listed - set(names))
    if missing or stale:
        raise SystemExit(f"docgen_fields: ungrouped schemas {missing}, missing files {stale}")
    shared = set(common_rows())
    lines: list[str] = []
    for heading, members in grouped.items():
        lines += ["", f"## {heading}", "", LEADS[heading]]
        if heading == "Flows":
            lines += ["", f"### {COMMON_HEADING}", "", *table(common_rows())]
        for name in members:
            lines += section(name, shared if name in FLOW_MODES else set())
    return "\n".join(lines).strip("\n") + "\n"
