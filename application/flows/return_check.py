"""The return check: a contracted run's envelope validated where its child settles, before the
mode (and so any dependent, the next chain step, a graph node, the caller) sees the result.

It is a ``RunHooks`` of the one spawn seam (``application.flows.dispatch.ChildDispatcher``):
``settle`` runs inside the dispatcher, after the child settled and before the run is reported
to the observer, the trace or the mode; a batch returns only once every run of it was checked,
so a concurrent wave exposes no result before all its returns were validated. The order and
codes are ``domain.flows.envelopes``'; the on-disk half of the integrity step is here: every
artifact must be a regular file reached through real directories inside the child's ``cwd``,
read through the ``FileSystem`` port's stable read (no symlink, nothing that changes while it
is hashed), and a declared SHA-256 must match its bytes.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

import attrs

from application.flows.dispatch import RunHooks
from application.ports import (
    ChildEvent,
    ChildHandle,
    FileSystem,
    ReadFailure,
    SpawnRequest,
    StableReadError,
)
from domain.errors import ErrorCode
from domain.flows.call import FlowCall
from domain.flows.call_roles import FlowTask
from domain.flows.envelopes import (
    Artifact,
    Rejection,
    artifacts,
    check_complete,
    check_data,
    parse_return,
)
from domain.flows.handoff_envelope import colliding_key, constraint_ids, declared_artifacts
from domain.flows.handoff_scan import strip_invisible
from domain.flows.redact import redact
from domain.flows.roles import ResolvedRole
from domain.flows.runs import ChildJob, RunResult, RunStatus


class ReturnCheck:
    """Validates each contracted run's return envelope as it settles."""

    def __init__(
        self,
        call: FlowCall,
        fs: FileSystem,
        resolve: Callable[[FlowTask], ResolvedRole],
        *,
        home: str | None = None,
    ) -> None:
        self._fs = fs
        self._resolve = resolve
        self._include = call.incomplete_handoff_policy
        self._redact = call.redact_secrets
        self._home = home

    def settle(self, job: ChildJob, result: RunResult) -> RunResult:
        contract = job.contract
        if contract is None:
            return result
        result = attrs.evolve(
            result,
            contract_id=contract.contract_id,
            constraint_ids=constraint_ids(contract.document),
        )
        if not result.ok:
            return result
        parsed = parse_return(result.output or "", contract)
        if isinstance(parsed, Rejection):
            return _rejected(result, parsed)
        # What it declared, for the trace's artifact events, whether or not it then passes.
        result = attrs.evolve(result, artifacts=declared_artifacts(parsed))
        merged = colliding_key(parsed, self._key_form)
        if merged is not None:
            return _rejected(
                result,
                Rejection(
                    ErrorCode.RETURN_ENVELOPE_INVALID,
                    f"{merged}: two of its keys become one once invisible characters are "
                    "removed (and secrets redacted), so what crossed would not be what was "
                    "validated; use distinct visible keys",
                ),
            )
        found = artifacts(parsed)
        if isinstance(found, Rejection):
            return _rejected(result, found)
        cwd = job.cwd or self._resolve(job.role).cwd
        for artifact in found:
            refused = self._on_disk(cwd, artifact)
            if refused is not None:
                return _rejected(result, refused)
        refused = check_data(parsed, contract)
        if refused is not None:
            return _rejected(result, refused)
        envelope = {**parsed, "usage": _usage(result)}
        if self._redact:
            envelope = _redacted(envelope, self._home)
        result = attrs.evolve(result, envelope=envelope)
        incomplete = check_complete(parsed, self._include)
        return _rejected(result, incomplete) if incomplete is not None else result

    def _key_form(self, key: str) -> str:
        """A key as it would cross (the handoff guard cleans keys like any string)."""
        cleaned, _ = strip_invisible(key)
        return redact(cleaned, home=self._home) if self._redact else cleaned

    def _on_disk(self, cwd: str, artifact: Artifact) -> Rejection | None:
        where = f"artifactReferences[{artifact.index}].path"
        parts = artifact.path.split("/")
        for depth in range(1, len(parts)):
            # A real directory at every step: a symlinked directory could lead outside the
            # cwd, and ``is_dir`` does not follow a final symlink.
            if not self._fs.is_dir(posixpath.join(cwd, *parts[:depth])):
                return Rejection(
                    ErrorCode.RETURN_ENVELOPE_INVALID,
                    f"{where} does not lead through real directories inside the child's cwd "
                    "(a directory is missing or a symlink)",
                )
        try:
            digest = self._fs.digest_stable(posixpath.join(cwd, artifact.path))
        except StableReadError as error:
            what = error.failure.value if error.failure is not ReadFailure.INVALID_PATH else "bad"
            return Rejection(
                ErrorCode.RETURN_ENVELOPE_INVALID, f"{where} names no readable file: {what}"
            )
        if artifact.sha256 is not None and digest.sha256 != artifact.sha256:
            return Rejection(
                ErrorCode.RETURN_DIGEST_MISMATCH,
                f"the SHA-256 declared for {where} does not match the file's bytes",
            )
        return None

    # The rest of ``RunHooks``: a return check adds nothing to the spawn or the stream.
    def request(self, job: ChildJob, request: SpawnRequest, *, read_only: bool) -> SpawnRequest:
        return request

    def spawned(self, job: ChildJob, handle: ChildHandle) -> None:
        return None

    def observe(self, job: ChildJob, event: ChildEvent) -> None:
        return None


class Hooks:
    """Several ``RunHooks`` as one, in order (an attested flow's proof, then the return
    check: a run without a valid attestation is failed before its envelope is read)."""

    def __init__(self, *hooks: RunHooks) -> None:
        self._hooks = hooks

    def request(self, job: ChildJob, request: SpawnRequest, *, read_only: bool) -> SpawnRequest:
        for hook in self._hooks:
            request = hook.request(job, request, read_only=read_only)
        return request

    def spawned(self, job: ChildJob, handle: ChildHandle) -> None:
        for hook in self._hooks:
            hook.spawned(job, handle)

    def observe(self, job: ChildJob, event: ChildEvent) -> None:
        for hook in self._hooks:
            hook.observe(job, event)

    def settle(self, job: ChildJob, result: RunResult) -> RunResult:
        for hook in self._hooks:
            result = hook.settle(job, result)
        return result


def _rejected(result: RunResult, rejection: Rejection) -> RunResult:
    return attrs.evolve(
        result, status=RunStatus.FAILED, error_code=rejection.code, error=rejection.message
    )


def _usage(result: RunResult) -> dict[str, Any]:
    usage = result.usage
    return {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cost": usage.cost,
        "turns": usage.turns,
    }


def _redacted(value: Any, home: str | None) -> Any:
    if isinstance(value, str):
        return redact(value, home=home)
    if isinstance(value, list):
        return [_redacted(item, home) for item in value]
    if isinstance(value, dict):
        return {key: _redacted(item, home) for key, item in value.items()}
    return value
