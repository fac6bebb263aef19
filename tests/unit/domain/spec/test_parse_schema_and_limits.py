"""Contract §3, ``parse_spec``: schema violations named by their JSON path, and every size
limit (whole spec, field, cumulative, counts, encoded runs) with its measured and allowed
bytes."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from domain.errors import ErrorCode
from domain.spec.limits import longest_encoded_run
from tests.builders import encode, spec_document, task
from tests.unit.domain.spec.spec_parsing import SECRET, parse, rejection


def _with(path: list[str | int], value: Any, delete: bool = False) -> bytes:
    document = spec_document()
    node: Any = document
    for part in path[:-1]:
        node = node[part]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return encode(document)


SCHEMA_CASES: list[tuple[str, bytes, str]] = [
    ("unknown top-level property", _with(["extra"], 1), "$: 1 unknown property (allowed: agents"),
    ("unknown task property", _with(["tasks", 0, "dependz"], []), "$.tasks[0]: 1 unknown"),
    ("unknown config property", _with(["config", "reviewOnComplete"], True), "$.config"),
    ("unknown agent property", _with(["agents", "qa", "tools"], []), "$.agents.qa"),
    ("unknown artifact property", b"", "$.artifacts[0]"),
    ("missing goal", _with(["goal"], None, delete=True), "'goal'"),
    ("missing artifacts", _with(["artifacts"], None, delete=True), "'artifacts'"),
    ("missing task depends", _with(["tasks", 0, "depends"], None, delete=True), "'depends'"),
    ("schemaVersion 2", _with(["schemaVersion"], 2), "$.schemaVersion: must be 1"),
    ("schemaVersion string", _with(["schemaVersion"], "1"), "$.schemaVersion"),
    ("schemaVersion true", _with(["schemaVersion"], True), "$.schemaVersion"),
    ("empty goal", _with(["goal"], ""), "$.goal: must not be empty"),
    ("goal number", _with(["goal"], 5), "$.goal: expected string, found number"),
    ("no tasks", _with(["tasks"], []), "$.tasks: has 0 items"),
    ("task id uppercase", _with(["tasks", 0, "id"], "Build"), "$.tasks[0].id: does not match"),
    ("task id trailing dash", _with(["tasks", 0, "id"], "build-"), "$.tasks[0].id"),
    ("task id newline", _with(["tasks", 0, "id"], "build\n"), "$.tasks[0].id"),
    ("task id 65 chars", _with(["tasks", 0, "id"], "a" * 65), "$.tasks[0].id"),
    ("empty title", _with(["tasks", 0, "title"], ""), "$.tasks[0].title: must not be empty"),
    ("agent pattern", _with(["tasks", 0, "agent"], "-x"), "$.tasks[0].agent"),
    ("depends not unique", _with(["tasks", 1, "depends"], ["build", "build"]), "duplicate"),
    ("inheritContext string", _with(["tasks", 0, "inheritContext"], "no"), "expected boolean"),
    ("thinking unknown", _with(["agents", "qa", "thinking"], "huge"), "must be one of"),
    ("model number", _with(["agents", "qa", "model"], 3), "expected string or null"),
    ("agent name pattern", _with(["agents", "bad name"], {"model": None, "thinking": None}), ""),
    ("maxConcurrency 0", _with(["config", "maxConcurrency"], 0), "allowed at least 1"),
    ("maxConcurrency 65", _with(["config", "maxConcurrency"], 65), "allowed at most 64"),
    ("maxConcurrency 2.0", _with(["config", "maxConcurrency"], 2.0), "expected integer"),
    ("maxRetries 21", _with(["config", "maxRetries"], 21), "allowed at most 20"),
    ("autoUnblock null", _with(["config", "autoUnblock"], None), "expected boolean"),
]


_artifact_doc = spec_document(
    artifacts=[
        {"id": "a", "path": "/x", "sha256": "0" * 64, "bytes": 1, "purpose": "p", "url": "u"}
    ]
)


SCHEMA_CASES[4] = ("unknown artifact property", encode(_artifact_doc), "$.artifacts[0]")


@pytest.mark.parametrize(
    ("data", "expected"), [(d, e) for _, d, e in SCHEMA_CASES], ids=[n for n, _, _ in SCHEMA_CASES]
)
def test_schema_violation_is_malformed_with_the_json_path(data: bytes, expected: str) -> None:
    error = rejection(data)
    assert error.code is ErrorCode.SPEC_MALFORMED
    assert expected in error.message


def test_artifact_schema_violations_name_their_paths() -> None:
    bad = {"id": "-a", "path": "", "sha256": "A" * 64, "bytes": -1, "purpose": ""}
    error = rejection(encode(spec_document(artifacts=[bad])))
    for path in ("id", "path", "sha256", "bytes", "purpose"):
        assert f"$.artifacts[0].{path}" in error.message


def test_schema_version_given_as_a_float_is_malformed() -> None:
    data = encode(spec_document()).replace(b'"schemaVersion": 1', b'"schemaVersion": 1.0')
    assert rejection(data).code is ErrorCode.SPEC_MALFORMED


def test_unknown_property_names_that_look_like_content_are_withheld() -> None:
    error = rejection(_with([SECRET], 1))
    assert "$: 1 unknown property (allowed: agents, artifacts, config" in error.message


def test_spec_over_one_mebibyte_is_too_large_with_both_numbers() -> None:
    document = spec_document()
    data = encode(document)
    data = data[:-2] + b" " * (1_048_577 - len(data)) + data[-2:]
    assert len(data) == 1_048_577
    error = rejection(data)
    assert error.code is ErrorCode.SPEC_TOO_LARGE
    assert "1048577" in error.message
    assert "1048576" in error.message


def test_spec_of_exactly_one_mebibyte_is_accepted() -> None:
    data = encode(spec_document())
    data = data[:-2] + b" " * (1_048_576 - len(data)) + data[-2:]
    assert parse(data).byte_length == 1_048_576


@pytest.mark.parametrize(
    ("field", "document", "measured", "allowed"),
    [
        ("$.goal", spec_document(goal="é" * 32769), 65538, 65536),
        ("$.tasks[0].title", spec_document(tasks=[task("a", title="t" * 1025)]), 1025, 1024),
        (
            "$.tasks[0].description",
            spec_document(tasks=[task("a", description="word " * 26215)]),
            131075,
            131072,
        ),
    ],
)
def test_oversized_field_is_too_large_with_measured_and_allowed_bytes(
    field: str, document: dict[str, Any], measured: int, allowed: int
) -> None:
    document["agents"] = {"backend": {"model": None, "thinking": None}}
    error = rejection(encode(document))
    assert error.code is ErrorCode.SPEC_TOO_LARGE
    assert f"{field} is {measured} bytes; allowed {allowed} bytes" in error.message
    assert "artifact" in error.message


def test_limits_are_utf8_bytes_not_characters() -> None:
    at_limit = spec_document(tasks=[task("a", title="€" * 341)])  # 1023 bytes
    over = spec_document(tasks=[task("a", title="€" * 342)])  # 1026 bytes, 342 characters
    for document in (at_limit, over):
        document["agents"] = {"backend": {"model": None, "thinking": None}}
    parse(encode(at_limit))
    assert rejection(encode(over)).code is ErrorCode.SPEC_TOO_LARGE


def test_five_large_descriptions_exceed_the_cumulative_limit() -> None:
    tasks = [task(f"t{i}", description="lorem ipsum " * 9000) for i in range(5)]
    error = rejection(encode(spec_document(tasks=tasks)))
    assert error.code is ErrorCode.SPEC_TOO_LARGE
    assert "embedded contract" in error.message
    assert "allowed 524288 bytes" in error.message


def test_artifact_purposes_count_towards_the_cumulative_limit() -> None:
    purposes = [
        {"id": f"a{i}", "path": "/x", "sha256": "0" * 64, "bytes": 0, "purpose": "p " * 60000}
        for i in range(5)
    ]
    tasks = [task(f"t{i}", description="d " * 20000) for i in range(2)]
    error = rejection(encode(spec_document(tasks=tasks, artifacts=purposes)))
    assert error.code is ErrorCode.SPEC_TOO_LARGE
    assert "goal + titles + descriptions + artifact purposes" in error.message


def test_artifact_path_over_32_kib_is_too_large() -> None:
    entry = {"id": "a", "path": "/" + "p" * 32768, "sha256": "0" * 64, "bytes": 0, "purpose": "x"}
    error = rejection(encode(spec_document(artifacts=[entry])))
    assert error.code is ErrorCode.SPEC_TOO_LARGE
    assert "$.artifacts[0].path is 32769 bytes; allowed 32768 bytes" in error.message


@pytest.mark.parametrize(
    ("label", "count", "allowed"),
    [("tasks", 129, 128), ("agents", 65, 64), ("artifacts", 1025, 1024)],
)
def test_count_over_the_limit_is_too_large(label: str, count: int, allowed: int) -> None:
    document = spec_document()
    if label == "tasks":
        document["tasks"] = [task(f"t{i}") for i in range(count)]
    elif label == "agents":
        document["agents"].update(
            {f"extra{i}": {"model": None, "thinking": None} for i in range(63)}
        )
    else:
        document["artifacts"] = [
            {"id": f"a{i}", "path": "/x", "sha256": "0" * 64, "bytes": 0, "purpose": "x"}
            for i in range(count)
        ]
    error = rejection(encode(document))
    assert error.code is ErrorCode.SPEC_TOO_LARGE
    assert f"$.{label} has {count} entries; allowed at most {allowed}" in error.message


def test_a_real_schema_fault_outranks_a_count_limit() -> None:
    document = spec_document(tasks=[task(f"t{i}") for i in range(129)])
    document["tasks"][5]["id"] = "BAD"
    assert rejection(encode(document)).code is ErrorCode.SPEC_MALFORMED


BLOB = base64.b64encode(bytes(range(256)) * 16).decode()  # 5464 characters


@pytest.mark.parametrize(
    "field",
    ["goal", "title", "description", "purpose"],
)
def test_base64_run_over_4096_characters_is_too_large_in_each_text_field(field: str) -> None:
    text = f"See this: {BLOB} thanks"
    document = spec_document()
    if field == "goal":
        document["goal"] = text
    elif field == "purpose":
        document["artifacts"] = [
            {"id": "a", "path": "/x", "sha256": "0" * 64, "bytes": 0, "purpose": text}
        ]
    else:
        document["tasks"][0][field] = text
    error = rejection(encode(document))
    assert error.code is ErrorCode.SPEC_TOO_LARGE
    assert f"run of {len(BLOB)} characters; allowed 4096" in error.message


def test_base64_run_of_exactly_4096_characters_passes() -> None:
    parse(encode(spec_document(goal="x " + "A" * 4096 + " y")))


def test_data_uri_payload_is_measured_whatever_its_encoding() -> None:
    uri = "data:text/plain," + "%41" * 1400
    error = rejection(encode(spec_document(goal=f"image {uri} end")))
    assert error.code is ErrorCode.SPEC_TOO_LARGE


def test_wrapped_base64_counts_as_one_run() -> None:
    wrapped = "\n".join(BLOB[i : i + 76] for i in range(0, len(BLOB), 76))
    assert longest_encoded_run(wrapped) == len(BLOB)
    assert rejection(encode(spec_document(goal=wrapped))).code is ErrorCode.SPEC_TOO_LARGE


def test_long_ordinary_prose_and_source_text_pass() -> None:
    prose = (
        "The scheduler starts every task whose dependencies are done; "
        "it never starts more than maxConcurrency children at once. "
    ) * 500
    source = "def handler(event):\n    return {'status': 200, 'body': event['body']}\n" * 800
    words = "\n".join(["alpha", "beta", "gamma", "delta"] * 2000)
    document = spec_document(
        goal=prose[:60000],
        tasks=[
            task("build", description=source),
            task("qa", agent="qa", depends=["build"], description=words),
        ],
    )
    validated = parse(encode(document))
    assert validated.spec.goal == prose[:60000]
