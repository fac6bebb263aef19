"""Contract §2-§4: every rejection of ``parse_spec`` with its stable code."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from domain.errors import ErrorCode, SpecError
from domain.spec.limits import longest_encoded_run
from domain.spec.parse import parse_spec
from tests.builders import encode, sha, spec_document, task
from tests.fakes.agents import FakeAgentLookup

SECRET = "TOP-SECRET-MARKER-7f3a"


def parse(data: bytes, digest: str | None = None, agents: FakeAgentLookup | None = None) -> Any:
    return parse_spec(data, sha(data) if digest is None else digest, agents or FakeAgentLookup())


def rejection(data: bytes, digest: str | None = None, **kw: Any) -> SpecError:
    with pytest.raises(SpecError) as caught:
        parse(data, digest, **kw)
    assert SECRET not in str(caught.value), "messages never quote spec content"
    return caught.value


def test_valid_spec_keeps_exact_bytes_and_reports_identity() -> None:
    data = encode(spec_document(goal=f"naïve {SECRET} 東京 🙂"))
    validated = parse(data)
    assert validated.raw == data
    assert validated.sha256 == sha(data)
    assert validated.byte_length == len(data)
    assert validated.chunks.chunk_count == 1
    assert [t.id for t in validated.spec.tasks] == ["build", "qa"]
    assert validated.spec.config.review_on_complete is True


def test_insignificant_whitespace_and_final_newline_are_part_of_the_identity() -> None:
    compact = encode(spec_document(), indent=None)
    spaced = encode(spec_document(), indent=4)
    assert parse(compact).sha256 != parse(spaced).sha256


# --- hash -------------------------------------------------------------------------------


def test_wrong_hash_is_rejected_naming_the_claimed_digest_never_the_actual() -> None:
    data = encode(spec_document())
    error = rejection(data, "0" * 64)
    assert error.code is ErrorCode.SPEC_HASH_MISMATCH
    assert sha(data) not in error.message, "a model would copy the actual digest"
    assert "0" * 64 in error.message


def test_uppercase_hash_is_rejected_never_normalised() -> None:
    data = encode(spec_document())
    error = rejection(data, sha(data).upper())
    assert error.code is ErrorCode.SPEC_HASH_MISMATCH
    assert "uppercase" in error.message


@pytest.mark.parametrize(
    "digest", ["", "abc", "g" * 64, "a" * 63, "a" * 65, "a" * 64 + "\n", " " + "a" * 63]
)
def test_hash_argument_that_is_not_64_lowercase_hex_is_a_hash_mismatch(digest: str) -> None:
    assert rejection(encode(spec_document()), digest).code is ErrorCode.SPEC_HASH_MISMATCH


# --- decoding ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbf" + encode(spec_document()),
        b"\xff\xfe\x00",
        encode(spec_document()).replace(b'"goal"', b'"goal": "x", "goal"', 1),
        encode(spec_document()) + b"x",
        b"[]\n",
        encode(spec_document()).replace(b'"maxRetries": 2', b'"maxRetries": NaN'),
        encode(spec_document()).replace(b"Ship", b"Sh\xc0\xafp"),
        encode(spec_document()).replace(b"Ship", b"Sh\xed\xa0\x80p"),
    ],
    ids=["bom", "utf16", "duplicate-key", "trailing", "array", "nan", "overlong", "surrogate"],
)
def test_undecodable_spec_is_malformed_even_with_the_right_hash(data: bytes) -> None:
    assert rejection(data).code is ErrorCode.SPEC_MALFORMED


# --- schema -----------------------------------------------------------------------------


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


# --- limits -----------------------------------------------------------------------------


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


# --- plan ---------------------------------------------------------------------------------


def plan_rejection(document: dict[str, Any], agents: FakeAgentLookup | None = None) -> str:
    error = rejection(encode(document), agents=agents)
    assert error.code is ErrorCode.PLAN_INVALID
    return error.message


def test_duplicate_task_ids_are_a_plan_error() -> None:
    message = plan_rejection(spec_document(tasks=[task("a"), task("a")]))
    assert "duplicate task id 'a'" in message


def test_duplicate_artifact_ids_are_a_plan_error() -> None:
    entry = {"id": "a", "path": "/x", "sha256": "0" * 64, "bytes": 0, "purpose": "x"}
    assert "duplicate artifact id 'a'" in plan_rejection(spec_document(artifacts=[entry, entry]))


@pytest.mark.parametrize("reserved", ["spec", "session", "knowledge"])
def test_task_id_that_would_shadow_a_squad_directory_entry_is_a_plan_error(reserved: str) -> None:
    message = plan_rejection(spec_document(tasks=[task(reserved)]))
    assert f"'{reserved}' is reserved" in message


def test_unknown_dependency_is_a_plan_error() -> None:
    message = plan_rejection(spec_document(tasks=[task("a"), task("b", depends=["zz"])]))
    assert "unknown task 'zz'" in message


def test_self_dependency_is_a_plan_error() -> None:
    message = plan_rejection(spec_document(tasks=[task("a"), task("b", depends=["b"])]))
    assert "'b' depends on itself" in message
    assert "cycle" not in message


def test_cycle_is_a_plan_error_naming_the_path() -> None:
    tasks = [
        task("root"),
        task("a", depends=["b"]),
        task("b", depends=["c"]),
        task("c", depends=["a"]),
    ]
    assert "cycle 'a' -> 'b' -> 'c' -> 'a'" in plan_rejection(spec_document(tasks=tasks))


def test_agent_missing_from_the_roster_is_a_plan_error_and_never_remapped() -> None:
    document = spec_document(tasks=[task("a", agent="designer")])
    assert "'designer' of task 'a' is not declared in $.agents" in plan_rejection(document)


def test_declared_agent_without_definition_is_a_plan_error() -> None:
    document = spec_document(tasks=[task("a", agent="ghost")])
    document["agents"]["ghost"] = {"model": None, "thinking": None}
    assert "no enabled definition" in plan_rejection(document)


def test_disabled_agent_is_a_plan_error() -> None:
    agents = FakeAgentLookup(disabled={"backend"})
    assert "disabled" in plan_rejection(spec_document(), agents=agents)


def test_unknown_artifact_reference_is_a_plan_error() -> None:
    document = spec_document(tasks=[task("a", artifactRefs=["nope"])])
    assert "unknown artifact 'nope'" in plan_rejection(document)


def test_every_plan_error_is_reported_at_once() -> None:
    document = spec_document(tasks=[task("a", depends=["x"]), task("a", artifactRefs=["y"])])
    message = plan_rejection(document)
    assert "duplicate task id" in message
    assert "unknown task 'x'" in message
    assert "unknown artifact 'y'" in message


def test_unreferenced_artifacts_and_extra_roster_entries_are_allowed() -> None:
    entry = {"id": "ctx", "path": "/x", "sha256": "0" * 64, "bytes": 0, "purpose": "x"}
    document = spec_document(artifacts=[entry])
    document["agents"]["docs"] = {"model": None, "thinking": None}
    assert parse(encode(document)).spec.artifacts[0].id == "ctx"


def test_plan_style_rules_are_warnings_not_errors() -> None:
    tasks = [task(f"t{i}", description="") for i in range(10)]
    warnings = parse(encode(spec_document(tasks=tasks))).warnings
    assert any("10 tasks" in w for w in warnings)
    assert any("QA" in w for w in warnings)
    assert any("empty description" in w for w in warnings)
    no_verify = spec_document(tasks=[task("a", description="Write it nicely.")])
    assert any("no way to verify" in w for w in parse(encode(no_verify)).warnings)


# --- precedence ---------------------------------------------------------------------------


def test_precedence_size_before_hash_before_decoding() -> None:
    huge = b"\xef\xbb\xbf" + b" " * 1_048_576
    assert rejection(huge, "0" * 64).code is ErrorCode.SPEC_TOO_LARGE
    bom = b"\xef\xbb\xbf{}"
    assert rejection(bom, "0" * 64).code is ErrorCode.SPEC_HASH_MISMATCH
    assert rejection(bom).code is ErrorCode.SPEC_MALFORMED


def test_precedence_schema_before_limits_before_plan() -> None:
    document = spec_document(goal="g" * 70000, tasks=[task("a", depends=["zz"])])
    assert rejection(encode(document)).code is ErrorCode.SPEC_TOO_LARGE
    document["extra"] = True
    assert rejection(encode(document)).code is ErrorCode.SPEC_MALFORMED


def test_messages_never_contain_spec_content() -> None:
    leaky = spec_document(goal=SECRET * 5000, tasks=[task("a", title=SECRET, depends=[SECRET])])
    for data in (encode(leaky), encode({**leaky, SECRET: 1}), json.dumps([SECRET]).encode()):
        rejection(data)


# --- nesting depth (red-team issue 11, finding 1) ----------------------------------------


def deep_depends_spec(depth: int) -> bytes:
    """Two identical arrays nested ``depth`` deep in ``$.tasks[0].depends``: schema validation
    compares them for ``uniqueItems``, recursing once or more per level."""
    document = spec_document()
    document["tasks"][0]["depends"] = ["@NESTED@", "@NESTED@"]
    text = encode(document).decode().replace('"@NESTED@"', "[" * depth + "]" * depth)
    return text.encode()


@pytest.mark.parametrize("depth", [250, 100_000])
def test_spec_nested_too_deep_is_malformed_with_measured_and_allowed_depth(depth: int) -> None:
    error = rejection(deep_depends_spec(depth))
    assert error.code is ErrorCode.SPEC_MALFORMED
    # The document adds four levels: $ -> tasks -> tasks[0] -> depends.
    assert error.message == (
        f"spec file nests arrays and objects {depth + 4} levels deep; allowed 32 levels (a "
        "valid spec needs 4, at $.tasks[i].depends): remove the extra nesting"
    )


def test_spec_nesting_within_the_bound_reaches_the_schema_check() -> None:
    error = rejection(deep_depends_spec(28))
    assert error.code is ErrorCode.SPEC_MALFORMED
    assert error.message.startswith("$.tasks[0].depends")


# --- reserved task ids (red-team issue 11, finding 6) ------------------------------------


@pytest.mark.parametrize("device", ["con", "nul", "aux", "prn", "com1", "lpt9"])
def test_a_windows_device_name_as_task_id_is_a_plan_error_naming_the_path(device: str) -> None:
    message = plan_rejection(spec_document(tasks=[task("build"), task(device)]))
    assert message.startswith(
        f"$.tasks[1].id: task id '{device}' is reserved: it is a Windows device name"
    )


@pytest.mark.parametrize("variant", ["Session", "SPEC", "Knowledge", "Con", "con.txt"])
def test_a_case_or_extension_variant_of_a_reserved_task_id_is_refused(variant: str) -> None:
    error = rejection(encode(spec_document(tasks=[task("build"), task(variant)])))
    # The spec task-id pattern is lowercase without dots, so the schema refuses these first.
    assert error.code is ErrorCode.SPEC_MALFORMED
    assert error.message.startswith("$.tasks[1].id: does not match the pattern")
