"""Read, validate and verify a file spec and its artifacts: the shared front half of
``validate`` and ``create``.

Precedence (contract §5): hash argument, path, stable read and file size, hash, decoding,
schema, limits, plan, then artifacts in spec order.
"""

from __future__ import annotations

import attrs

from application.ports import FileSystem, ReadFailure, StableRead, StableReadError
from domain import paths
from domain.agents import AgentCatalog, UnavailableAgent
from domain.errors import ArtifactError, ErrorCode, SpecError
from domain.spec.limits import MAX_SPEC_BYTES
from domain.spec.model import ArtifactSpec
from domain.spec.parse import ValidatedSpec, check_sha256_argument, check_spec_size, parse_spec
from domain.spec.plan import AgentLookup


def resolve_spec_path(fs: FileSystem, spec_file: str, cwd: str) -> str:
    if not spec_file:
        raise SpecError(ErrorCode.SPEC_MALFORMED, "specFile: must not be empty")
    if "\0" in spec_file:
        raise SpecError(ErrorCode.SPEC_MALFORMED, "specFile: contains a NUL character")
    if "\0" in cwd or not paths.is_native_absolute(cwd, fs.flavour):
        raise SpecError(
            ErrorCode.SPEC_MALFORMED, "cwd: must be an absolute path without NUL characters"
        )
    return paths.resolve_against(cwd, spec_file, fs.flavour)


# What to do about a refused read, by failure (the message already says what and where).
_READ_ADVICE = {
    ReadFailure.MISSING: "check the path (a relative path resolves against --cwd, by default "
    "the current directory)",
    ReadFailure.SYMLINK: "pass the path of the file itself, not of a symlink to it",
    ReadFailure.NOT_REGULAR: "pass the path of a regular file",
    ReadFailure.CHANGED: "something wrote the file while it was read; retry once it is stable",
    ReadFailure.UNREADABLE: "check that the file exists and is readable",
    ReadFailure.INVALID_PATH: "pass a native absolute path, or a relative one with --cwd",
}


def read_advice(failure: ReadFailure) -> str:
    return _READ_ADVICE.get(failure, "check the file")


def read_spec_file(fs: FileSystem, path: str) -> StableRead:
    try:
        return fs.read_stable(path, max_bytes=MAX_SPEC_BYTES)
    except StableReadError as exc:
        if exc.failure is ReadFailure.TOO_LARGE and exc.size is not None:
            try:
                check_spec_size(exc.size)
            except SpecError as error:
                raise SpecError(error.code, f"{path}: {error.message}") from None
        raise SpecError(
            ErrorCode.SPEC_UNSTABLE,
            f"spec file {path}: {exc.failure.value}: {exc.detail}: {read_advice(exc.failure)}",
        ) from None
    except OSError as exc:
        # An I/O error below the stable-read checks (EIO, say) is as unusable as a refusal.
        raise SpecError(
            ErrorCode.SPEC_UNSTABLE, f"spec file {path}: unreadable: {_reason(exc)}"
        ) from None


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def load_validated_spec(
    fs: FileSystem, agents: AgentLookup, *, spec_file: str, spec_sha256: str, cwd: str
) -> tuple[str, ValidatedSpec]:
    """``(absolute spec path, validated spec)``; raises ``SpecError`` or ``ArtifactError``."""
    check_sha256_argument(spec_sha256)
    path = resolve_spec_path(fs, spec_file, cwd)
    read = read_spec_file(fs, path)
    try:
        validated = parse_spec(read.data, spec_sha256, agents)
    except SpecError as error:
        # Where: the file, then the JSON path the domain message starts with.
        raise SpecError(error.code, f"{path}: {error.message}") from None
    try:
        verify_artifacts(fs, validated.spec.artifacts)
    except ArtifactError as error:
        raise ArtifactError(error.code, f"{path}: {error.message}") from None
    return path, validated


_ARTIFACT_READ_CODES = {
    ReadFailure.MISSING: ErrorCode.ARTIFACT_MISSING,
    ReadFailure.INVALID_PATH: ErrorCode.ARTIFACT_PATH_INVALID,
}


def verify_artifacts(fs: FileSystem, artifacts: tuple[ArtifactSpec, ...]) -> None:
    """Every artifact is a stable regular file of the declared length and SHA-256.

    Checked in spec order; the first failure names the artifact by its ID and index. Content
    is streamed, so multi-gigabyte artifacts never load into memory.
    """
    for i, artifact in enumerate(artifacts):
        where = f"$.artifacts[{i}] ('{artifact.id}')"
        try:
            paths.check_artifact_path(artifact.path, fs.flavour)
        except ArtifactError as exc:
            raise ArtifactError(exc.code, f"{where}: {exc.message}") from None
        try:
            # The declared length is checked against the pinned descriptor before any byte is
            # hashed: a huge (or sparse) file declared small is refused at once.
            digest = fs.digest_stable(artifact.path, expected_size=artifact.bytes)
        except StableReadError as exc:
            if exc.failure is ReadFailure.SIZE_MISMATCH and exc.size is not None:
                raise _size_mismatch(i, where, exc.size, artifact.bytes) from None
            code = _ARTIFACT_READ_CODES.get(exc.failure, ErrorCode.ARTIFACT_UNSTABLE)
            advice = (
                "restore the file or correct"
                if exc.failure is ReadFailure.MISSING
                else f"{read_advice(exc.failure)}; see"
            )
            raise ArtifactError(
                code, f"{where}: {exc.failure.value}: {exc.detail}: {advice} $.artifacts[{i}].path"
            ) from None
        except OSError as exc:
            raise ArtifactError(
                ErrorCode.ARTIFACT_UNSTABLE, f"{where}: unreadable: {_reason(exc)}"
            ) from None
        if digest.size != artifact.bytes:
            raise _size_mismatch(i, where, digest.size, artifact.bytes)
        if digest.sha256 != artifact.sha256:
            raise ArtifactError(
                ErrorCode.ARTIFACT_HASH_MISMATCH,
                f"{where}: SHA-256 of the file does not match the declared "
                f"{artifact.sha256}: restore the file, or if it is the right one set "
                f"$.artifacts[{i}].sha256 to its sha256sum (never to a digest copied from an "
                "error message)",
            )


def _size_mismatch(index: int, where: str, size: int, declared: int) -> ArtifactError:
    return ArtifactError(
        ErrorCode.ARTIFACT_SIZE_MISMATCH,
        f"{where}: file is {size} bytes; the spec declares {declared}: restore the file, or if "
        f"it is the right one set $.artifacts[{index}].bytes and .sha256 to its length and "
        "sha256sum",
    )


@attrs.frozen
class CatalogLookup:
    """The catalog as the plan checks see it: available, or the reason it is not."""

    catalog: AgentCatalog

    def unavailable_reason(self, name: str) -> str | None:
        found = self.catalog.get(name)
        return found.describe() if isinstance(found, UnavailableAgent) else None
