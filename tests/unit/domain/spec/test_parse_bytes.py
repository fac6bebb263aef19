"""Contract §2-§4, ``parse_spec`` on the bytes themselves: the identity a valid spec keeps,
the hash, decoding, nesting depth, and which rejection comes first."""

from __future__ import annotations

import json

import pytest

from domain.errors import ErrorCode
from tests.builders import encode, sha, spec_document, task
from tests.unit.domain.spec.spec_parsing import SECRET, parse, rejection


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
