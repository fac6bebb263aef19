"""The accept-only fast schema check never accepts what ``jsonschema`` rejects.

``domain.spec.schema.violations`` returns ``[]`` without running ``jsonschema`` whenever the
check compiled from the same document (``domain.spec.schema_fast``) accepts an instance, so
its acceptance must imply "no ``iter_errors``". Instances are drawn from each schema itself:
mostly valid, with wrong types, out-of-range numbers, near-miss strings, missing and extra
keys and duplicate items mixed in at every level.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.spec import schema
from domain.spec.documents import self_contained_document
from domain.spec.regex import ecma_regex
from domain.spec.schema_fast import SUPPORTED_KEYWORDS, UnsupportedSchema, compile_check
from tests.builders import spec_document, task

SCHEMA_NAMES = sorted(
    entry.name.removesuffix(".schema.json")
    for entry in resources.files("domain.spec").joinpath("schemas").iterdir()
    if entry.name.endswith(".schema.json")
)
COMPILED = [name for name in SCHEMA_NAMES if schema.fast_check(name) is not None]

_JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 70),
    st.sampled_from([0.0, 1.0, 2.0, -1.5, 64.0, 1e3]),
    st.text(max_size=8),
)
_JUNK = st.recursive(
    _JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _near_misses(text: str) -> list[str]:
    return [text + "\n", text + "x", text.upper(), "", "-" + text, text[:-1] if text else "a"]


def _string(node: dict[str, Any], noisy: bool) -> st.SearchStrategy[str]:
    pattern = node.get("pattern")
    low = node.get("minLength", 0)
    if pattern is None:
        text = st.text(min_size=low, max_size=max(low, 6))
        return st.one_of(text, st.just("")) if noisy else text
    valid = st.from_regex(ecma_regex(pattern)).filter(lambda v: len(v) >= low)
    if not noisy:
        return valid
    return valid.flatmap(lambda v: st.sampled_from(_near_misses(v)))


def _number(node: dict[str, Any], integer: bool, noisy: bool) -> st.SearchStrategy[Any]:
    low = node.get("minimum", -5)
    high = node.get("maximum", low + 100)
    if not noisy:
        return st.integers(low, high)
    edges = st.sampled_from([low - 1, high + 1, float(low), float(high), low + 0.5, True, False])
    return edges if integer else st.one_of(edges, st.floats(low - 1, high + 1))


def instances(node: Any, noisy: bool = False) -> st.SearchStrategy[Any]:
    """Values of ``node``: valid ones, or (``noisy``) ones just outside it."""
    if not isinstance(node, dict):
        return _JUNK
    if "const" in node:
        return st.sampled_from([True, 1.0, "1"] if noisy else [node["const"]])
    if "enum" in node:
        return st.sampled_from(["OFF", 0, False] if noisy else node["enum"])
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    choices: list[st.SearchStrategy[Any]] = [_JUNK] if noisy else []
    for name in kinds:
        if name == "string":
            choices.append(_string(node, noisy))
        elif name in ("integer", "number"):
            choices.append(_number(node, name == "integer", noisy))
        elif name == "boolean":
            choices.append(st.sampled_from([0, 1, "true"]) if noisy else st.booleans())
        elif name == "null":
            choices.append(st.just(0) if noisy else st.none())
        elif name == "array":
            choices.append(_array(node, noisy))
        elif name == "object":
            choices.append(_object(node, noisy))
    return st.one_of(*choices) if choices else _JUNK


def _array(node: dict[str, Any], noisy: bool) -> st.SearchStrategy[list[Any]]:
    items = instances(node.get("items", True))
    low = node.get("minItems", 0)
    high = min(node.get("maxItems", 4), 4)
    unique = node.get("uniqueItems", False)
    valid = st.lists(
        items, min_size=low, max_size=max(low, high), unique_by=repr if unique else None
    )
    if not noisy:
        return valid
    wrong: list[st.SearchStrategy[list[Any]]] = [
        st.lists(items, min_size=1, max_size=3).map(lambda v: [*v, v[0]]),  # a duplicate
        st.lists(_JUNK, min_size=1, max_size=2),
    ]
    if low > 0:
        wrong.append(st.lists(items, max_size=low - 1))
    if node.get("maxItems", 999) <= 128:
        count = node["maxItems"] + 1
        wrong.append(st.lists(items, min_size=count, max_size=count))
    return st.one_of(*wrong)


def _object(node: dict[str, Any], noisy: bool) -> st.SearchStrategy[dict[str, Any]]:
    properties: dict[str, Any] = node.get("properties", {})
    required = set(node.get("required", ()))
    extra = node.get("additionalProperties", True)
    names = node.get("propertyNames")

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for key, sub in properties.items():
            if key in required or draw(st.booleans()):
                value[key] = draw(instances(sub))
        if isinstance(extra, dict):
            key_names = _string(names, False) if isinstance(names, dict) else st.text(max_size=6)
            for _ in range(draw(st.integers(0, 2))):
                value[draw(key_names)] = draw(instances(extra))
        if noisy:
            mutation = draw(st.integers(0, 2))
            if mutation == 0 and required:
                del value[draw(st.sampled_from(sorted(required)))]
            elif mutation == 1 and isinstance(names, dict):
                value[draw(st.sampled_from(["", "-x", "a b", "x\n"]))] = draw(instances(extra))
            else:
                value[draw(st.text(max_size=6))] = draw(_JUNK)
        return value

    return build()


def _sites(node: Any, value: Any, path: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], Any]]:
    """Every (path, schema) in ``value``, found through ``node``."""
    found = [(path, node)]
    if not isinstance(node, dict):
        return found
    if isinstance(value, dict):
        properties = node.get("properties", {})
        extra = node.get("additionalProperties", True)
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                found += _sites(sub, item, (*path, key))
    elif isinstance(value, list) and "items" in node:
        for index, item in enumerate(value):
            found += _sites(node["items"], item, (*path, index))
    return found


@st.composite
def near_valid(draw: st.DrawFn, document: dict[str, Any]) -> Any:
    """A valid instance of ``document`` with zero, one or two places made just invalid."""
    value = draw(instances(document))
    for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
        path, node = draw(st.sampled_from(_sites(document, value, ())))
        replacement = draw(instances(node, noisy=True))
        if not path:
            value = replacement
            continue
        target = value
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = replacement
    return value


def agrees(name: str, instance: Any) -> None:
    check = schema.fast_check(name)
    assert check is not None
    errors = list(schema.validator_for(name).iter_errors(instance))
    if check(instance):
        assert errors == [], f"fast check accepted an instance with {len(errors)} violations"


@pytest.mark.parametrize("name", COMPILED)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_the_fast_check_never_accepts_what_jsonschema_rejects(
    name: str, data: st.DataObject
) -> None:
    document = self_contained_document(name)
    agrees(name, data.draw(near_valid(document)))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_fast_check_accepts_exactly_the_valid_specs(data: st.DataObject) -> None:
    """For the spec, acceptance is exact: it never falls back on a valid document either."""
    instance = data.draw(near_valid(self_contained_document("spec-v1")))
    check = schema.fast_check("spec-v1")
    assert check is not None
    errors = list(schema.validator_for("spec-v1").iter_errors(instance))
    assert check(instance) is (errors == [])


def _keywords(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        found.update(node)
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    found |= _keywords(sub)
            elif key in ("items", "additionalProperties", "propertyNames"):
                found |= _keywords(value)
    return found


def test_the_spec_schema_compiles_so_a_new_keyword_needs_the_fast_check_extended() -> None:
    # If this fails, spec-v1 gained a keyword schema_fast does not compile: every 1 MiB spec
    # would fall back on jsonschema alone (58 ms instead of 3). Extend compile_check with it.
    assert "spec-v1" in COMPILED
    annotations = {"$schema", "$id", "title", "description"}
    assert _keywords(self_contained_document("spec-v1")) - annotations <= SUPPORTED_KEYWORDS


@pytest.mark.parametrize(
    "node",
    [
        {"oneOf": [{"type": "string"}]},
        {"patternProperties": {"^a": {}}},
        {"items": [{"type": "string"}]},
        {"type": "object", "properties": {"a": {"format": "date-time"}}},
        {"const": {"a": 1}},
    ],
)
def test_a_keyword_outside_the_supported_set_is_refused_not_ignored(node: Any) -> None:
    with pytest.raises(UnsupportedSchema):
        compile_check(node)


def spec_with(path: list[str | int], value: Any) -> dict[str, Any]:
    document = spec_document(
        artifacts=[
            {"id": "a", "path": "/x", "sha256": "a" * 64, "bytes": 1, "purpose": "p"},
        ]
    )
    document["tasks"][0]["artifactRefs"] = ["a"]
    target: Any = document
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return document


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (["schemaVersion"], True),  # Python's True == 1; JSON's true is not 1
        (["config", "maxRetries"], 2.0),  # the strict-integer rule
        (["config", "maxConcurrency"], True),
        (["config", "maxConcurrency"], 65),
        (["artifacts", 0, "sha256"], "a" * 64 + "\n"),  # ECMA $: end of input only
        (["artifacts", 0, "bytes"], -1),
        (["tasks", 0, "id"], "build\n"),
        (["tasks", 0, "depends"], ["x", "x"]),
        (["agents", "qa", "thinking"], "OFF"),
        (["agents", "bad name"], {"model": None, "thinking": None}),
        (["tasks", 1, "inheritContext"], 0),
    ],
)
def test_near_misses_are_left_to_jsonschema_which_rejects_them(
    path: list[str | int], value: Any
) -> None:
    document = spec_with(path, value)
    check = schema.fast_check("spec-v1")
    assert check is not None
    assert not check(document)
    assert schema.violations("spec-v1", document) != []


def test_a_valid_spec_is_accepted_without_running_jsonschema(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    document = spec_with(["tasks", 1, "depends"], ["build"])
    document["tasks"].append(task("docs", depends=["build", "qa"]))
    assert schema.violations("spec-v1", json.loads(json.dumps(document))) == []

    def refuse(_name: str) -> Any:
        raise AssertionError("jsonschema ran on a document the fast check accepts")

    monkeypatch.setattr(schema, "validator_for", refuse)
    assert schema.violations("spec-v1", document) == []


_LAZY_PROBE = """
import sys
from domain.errors import SpecError
from domain.spec.parse import check_spec_schema
from tests.builders import spec_document
check_spec_schema(spec_document())
print("valid:", "jsonschema" in sys.modules)
try:
    check_spec_schema(spec_document(goal=""))
except SpecError as exc:
    print("invalid:", "jsonschema" in sys.modules, exc.message)
"""


def test_jsonschema_is_imported_only_for_a_document_the_fast_check_cannot_prove_valid() -> None:
    # jsonschema is a large share of a fresh process's start-up (a CLI create pays it);
    # a valid spec never needs it, and an invalid one still gets jsonschema's description.
    import subprocess
    import sys

    probe = subprocess.run(
        [sys.executable, "-c", _LAZY_PROBE], capture_output=True, text=True, check=True
    )
    assert probe.stdout.splitlines() == [
        "valid: False",
        "invalid: True $.goal: must not be empty",
    ]
