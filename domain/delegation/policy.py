"""The human grant: which modes, source roots and limits delegation may use in a session.

The grant comes only from people: the user's policy file (``<root>/delegation/policy.json``),
a trusted project's file (read only when the user's file says ``trustProjectPolicy``, and able
only to narrow it), and the command line's flags. A request can only ask for less than the
grant: a requested limit above it is refused, never clamped silently. A session keeps the
canonical digest of the grant it was created under; a call under another grant never changes
it (``domain/delegation/upkeep.py``): only a person's ``renew`` adopts a new grant, as a new
``policyGeneration``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import attrs

from domain.delegation.canonical import canonical_digest
from domain.names import camel, camel_fields

MODES = ("investigate", "research", "consult", "review")


@attrs.frozen
class JobGrant:
    max_requests: int = 8
    deadline_ms: int = 600_000
    max_output_bytes: int = 16_384
    max_tool_calls: int = 96


@attrs.frozen
class BatchGrant:
    max_jobs: int = 4
    max_requests: int = 32


@attrs.frozen
class SessionGrant:
    allowance_requests: int = 128
    max_active_jobs: int = 2
    max_batches: int = 32
    retention_ms: int = 3_600_000
    max_idempotency_keys: int = 1024


@attrs.frozen
class ModelGrant:
    """The bound model route. Identity only: never a key, token, header or endpoint."""

    provider: str | None = None
    model: str | None = None
    thinking: str | None = None


# A grant's section: each is written and read field by field under camelCase keys.
_Section = TypeVar("_Section", JobGrant, BatchGrant, SessionGrant, ModelGrant)


@attrs.frozen
class Grant:
    modes: tuple[str, ...] = MODES
    source_roots: tuple[str, ...] = ()
    max_source_bytes: int = 1_048_576
    max_sources: int = 200
    job: JobGrant = JobGrant()
    batch: BatchGrant = BatchGrant()
    session: SessionGrant = SessionGrant()
    model: ModelGrant = ModelGrant()
    trust_project_policy: bool = False

    def document(self) -> dict[str, Any]:
        return {
            "modes": list(self.modes),
            "sourceRoots": list(self.source_roots),
            "maxSourceBytes": self.max_source_bytes,
            "maxSources": self.max_sources,
            "job": camel_fields(self.job),
            "batch": camel_fields(self.batch),
            "session": camel_fields(self.session),
            "model": camel_fields(self.model),
        }

    def digest(self) -> str:
        return canonical_digest(self.document())


def _section(document: Mapping[str, Any], name: str, default: _Section) -> _Section:
    """The section ``name`` (each field under its camelCase key, as ``Grant.document`` writes
    it); a field the section leaves out keeps ``default``'s value."""
    value = document.get(name, {})
    section: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
    return attrs.evolve(
        default,
        **{
            field.name: section[camel(field.name)]
            for field in attrs.fields(type(default))
            if camel(field.name) in section
        },
    )


def grant_from_document(document: Mapping[str, Any]) -> Grant:
    """A grant from a schema-checked ``delegate-policy-v1`` document; missing keys keep the
    defaults above."""
    base = Grant()
    return Grant(
        modes=tuple(document.get("modes", base.modes)),
        source_roots=tuple(document.get("sourceRoots", base.source_roots)),
        max_source_bytes=document.get("maxSourceBytes", base.max_source_bytes),
        max_sources=document.get("maxSources", base.max_sources),
        job=_section(document, "job", base.job),
        batch=_section(document, "batch", base.batch),
        session=_section(document, "session", base.session),
        model=_section(document, "model", base.model),
        trust_project_policy=bool(document.get("trustProjectPolicy", False)),
    )


def narrowed(user: Grant, project: Grant) -> Grant:
    """The user's grant narrowed by a trusted project's: fewer modes, roots inside the user's,
    smaller limits. A project file can never widen what the user granted."""
    roots = tuple(
        root
        for root in project.source_roots
        if any(root == own or root.startswith(own.rstrip("/") + "/") for own in user.source_roots)
    )
    return attrs.evolve(
        user,
        modes=tuple(mode for mode in user.modes if mode in project.modes),
        source_roots=roots,
        max_source_bytes=min(user.max_source_bytes, project.max_source_bytes),
        max_sources=min(user.max_sources, project.max_sources),
        job=JobGrant(
            *(
                min(a, b)
                for a, b in zip(attrs.astuple(user.job), attrs.astuple(project.job), strict=True)
            )
        ),
        batch=BatchGrant(
            *(
                min(a, b)
                for a, b in zip(
                    attrs.astuple(user.batch), attrs.astuple(project.batch), strict=True
                )
            )
        ),
        session=SessionGrant(
            *(
                min(a, b)
                for a, b in zip(
                    attrs.astuple(user.session), attrs.astuple(project.session), strict=True
                )
            )
        ),
    )


@attrs.frozen
class GrantFlags:
    """The command line's grant flags: the person at the terminal widening or setting it."""

    source_roots: tuple[str, ...] = ()
    allowance_requests: int | None = None
    modes: tuple[str, ...] = ()


def with_flags(grant: Grant, flags: GrantFlags) -> Grant:
    roots = tuple(dict.fromkeys((*grant.source_roots, *flags.source_roots)))
    session = grant.session
    if flags.allowance_requests is not None:
        session = attrs.evolve(session, allowance_requests=flags.allowance_requests)
    modes = flags.modes or grant.modes
    return attrs.evolve(grant, source_roots=roots, session=session, modes=modes)
