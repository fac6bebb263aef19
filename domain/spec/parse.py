"""Raw bytes -> ``ValidatedSpec``, in the precedence of contract §5.

Order: hash argument shape, file size, hash, decoding, schema, limits, plan. (Artifacts come
last and need the filesystem, so the application layer checks them after this succeeds.)
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from domain.chunks import ChunkTable, sha256_hex
from domain.errors import ErrorCode, SpecError
from domain.spec import limits, schema
from domain.spec.model import (
    AgentOverride,
    ArtifactSpec,
    SquadConfig,
    SquadSpec,
    TaskSpec,
)
from domain.spec.plan import AgentLookup, plan_errors, plan_warnings
from domain.strict_json import SPEC_MAX_DEPTH, JsonDecodeFailure, JsonTooDeep, decode_json

_SHA256_HEX = re.compile(r"^[a-f0-9]{64}\Z")
_UPPER_HEX = re.compile(r"^[A-Fa-f0-9]{64}\Z")


@attrs.frozen
class ValidatedSpec:
    """A spec whose exact bytes hashed to the caller's digest and passed every domain check."""

    spec: SquadSpec
    raw: bytes = attrs.field(repr=False)
    sha256: str
    chunks: ChunkTable = attrs.field(repr=False)
    warnings: tuple[str, ...]

    @property
    def byte_length(self) -> int:
        return len(self.raw)


def check_sha256_argument(value: str, field: str = "specSha256") -> None:
    if _SHA256_HEX.match(value):
        return
    if _UPPER_HEX.match(value):
        detail = "contains uppercase hex digits; use lowercase (hashes are never normalised)"
    else:
        detail = f"is {len(value)} characters; a SHA-256 is 64 lowercase hex characters"
    raise SpecError(ErrorCode.SPEC_HASH_MISMATCH, f"{field} {detail}")


def check_spec_size(size: int) -> None:
    if size > limits.MAX_SPEC_BYTES:
        raise SpecError(
            ErrorCode.SPEC_TOO_LARGE,
            f"spec file is {size} bytes; allowed {limits.MAX_SPEC_BYTES} bytes: move large "
            "content into artifacts (absolute path, bytes, sha256)",
        )


def check_spec_hash(data: bytes, expected_sha256: str) -> str:
    actual = sha256_hex(data)
    if actual != expected_sha256:
        raise SpecError(
            ErrorCode.SPEC_HASH_MISMATCH,
            # The actual digest is never said: a model would copy it instead of the file's
            # author vouching for the bytes (the pin is only worth what its author checked).
            f"SHA-256 of the spec file's {len(data)} bytes does not match specSha256 "
            f"{expected_sha256}: hash the exact file you mean (e.g. sha256sum) and pass that "
            "digest",
        )
    return actual


def decode_spec_document(data: bytes) -> dict[str, Any]:
    try:
        value = decode_json(data, vocabulary=schema.vocabulary("spec-v1"), max_depth=SPEC_MAX_DEPTH)
    except JsonTooDeep as exc:
        # Refused before any schema check: validation recurses once per level.
        raise SpecError(
            ErrorCode.SPEC_MALFORMED,
            f"spec file nests arrays and objects {exc.depth} levels deep; allowed "
            f"{exc.max_depth} levels (a valid spec needs 4, at $.tasks[i].depends): remove the "
            "extra nesting",
        ) from None
    except JsonDecodeFailure as exc:
        raise SpecError(
            ErrorCode.SPEC_MALFORMED,
            f"spec file is not strict JSON: {exc.reason}: fix it there (strict JSON: UTF-8 "
            "without a byte-order mark, no comments, no trailing commas, no duplicate keys)",
        ) from None
    if not isinstance(value, dict):
        raise SpecError(ErrorCode.SPEC_MALFORMED, "$: spec file's top level must be a JSON object")
    return value


def check_spec_schema(document: dict[str, Any]) -> None:
    """Schema violations are ``SPEC_MALFORMED``; if the only ones are counts, ``SPEC_TOO_LARGE``."""
    found = schema.violations("spec-v1", document)
    malformed: list[str] = []
    too_large: list[str] = []
    for error in found:
        count = limits.count_violation(
            list(error.absolute_path), str(error.validator), error.instance
        )
        if count is not None:
            too_large.append(count.message)
        else:
            malformed.append(schema.describe(error))
    if malformed:
        raise SpecError(ErrorCode.SPEC_MALFORMED, "; ".join(malformed))
    violations = too_large + [v.message for v in limits.check_limits(document)]
    if violations:
        raise SpecError(ErrorCode.SPEC_TOO_LARGE, "; ".join(violations))


def build_spec(document: dict[str, Any]) -> SquadSpec:
    """Map a schema- and limit-checked document onto the immutable model."""
    config = document["config"]
    return SquadSpec(
        schema_version=1,
        goal=document["goal"],
        tasks=tuple(
            TaskSpec(
                id=t["id"],
                title=t["title"],
                description=t["description"],
                agent=t["agent"],
                depends=tuple(t["depends"]),
                inherit_context=t["inheritContext"],
                artifact_refs=tuple(t["artifactRefs"]),
            )
            for t in document["tasks"]
        ),
        agents=tuple(
            AgentOverride(name=name, model=entry["model"], thinking=entry["thinking"])
            for name, entry in document["agents"].items()
        ),
        config=SquadConfig(
            max_concurrency=config["maxConcurrency"],
            auto_unblock=config["autoUnblock"],
            max_retries=config["maxRetries"],
        ),
        artifacts=tuple(
            ArtifactSpec(
                id=a["id"],
                path=a["path"],
                sha256=a["sha256"],
                bytes=a["bytes"],
                purpose=a["purpose"],
                media_type=a.get("mediaType"),
            )
            for a in document["artifacts"]
        ),
    )


def parse_spec(data: bytes, expected_sha256: str, agents: AgentLookup) -> ValidatedSpec:
    """Validate raw spec bytes against the caller's digest; raises ``SpecError``."""
    check_sha256_argument(expected_sha256)
    check_spec_size(len(data))
    digest = check_spec_hash(data, expected_sha256)
    document = decode_spec_document(data)
    check_spec_schema(document)
    if type(document["schemaVersion"]) is not int:
        # The schema's ``const: 1`` also matches the JSON token ``1.0``.
        raise SpecError(ErrorCode.SPEC_MALFORMED, "$.schemaVersion: must be the integer 1")
    spec = build_spec(document)
    errors = plan_errors(spec, agents)
    if errors:
        raise SpecError(ErrorCode.PLAN_INVALID, "; ".join(errors))
    return ValidatedSpec(
        spec=spec,
        raw=data,
        sha256=digest,
        chunks=ChunkTable.of(data),
        warnings=tuple(plan_warnings(spec)),
    )
