"""``GrantSource`` over the people's files and flags (docs/delegation.md, "The grant").

The user's ``<root>/delegation/policy.json`` (optional: without it, the defaults of
``domain.delegation.policy.Grant`` and no source root), narrowed by a project's
``<cwd>/.pi/squad-delegation.json`` only when the user's file says ``trustProjectPolicy``
(a project file can only narrow), then the command line's flags. This is the grant of one
call; whether it is the session's is the transaction's question (``GrantUse``). Each file is
strict JSON checked against ``delegate-policy-v1``; a bad file refuses every operation
(``DELEGATE_POLICY_INVALID``) rather than falling back to a wider default.
"""

from __future__ import annotations

import posixpath

from application.ports import FileSystem, StableReadError
from domain.delegation.errors import DelegationError
from domain.delegation.policy import Grant, GrantFlags, grant_from_document, narrowed, with_flags
from domain.errors import ErrorCode
from domain.spec.schema import describe, violations
from domain.strict_json import JsonDecodeFailure, decode_json

MAX_POLICY_BYTES = 256 * 1024
PROJECT_POLICY = ".pi/squad-delegation.json"


class FilePolicy:
    def __init__(self, fs: FileSystem, root: str, cwd: str, flags: GrantFlags) -> None:
        self._fs = fs
        self._user = f"{root.rstrip('/')}/delegation/policy.json"
        self._project = posixpath.join(cwd, PROJECT_POLICY)
        self._flags = flags

    def _read(self, path: str) -> Grant | None:
        if not self._fs.exists(path):
            return None
        try:
            document = decode_json(self._fs.read_small(path, MAX_POLICY_BYTES))
        except (StableReadError, JsonDecodeFailure) as error:
            raise DelegationError(ErrorCode.DELEGATE_POLICY_INVALID, f"{path}: {error}") from None
        found = violations("delegate-policy-v1", document)
        if found:
            raise DelegationError(
                ErrorCode.DELEGATE_POLICY_INVALID, f"{path}: {describe(found[0])}"
            )
        return grant_from_document(document)

    def grant(self) -> Grant:
        user = self._read(self._user) or Grant()
        if user.trust_project_policy:
            project = self._read(self._project)
            if project is not None:
                user = narrowed(user, project)
        return with_flags(user, self._flags)
