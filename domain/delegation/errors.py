"""The delegation family of :class:`domain.errors.PiSquadError`: every refusal of the
`delegate` host carries one stable code (docs/delegation.md, "Error codes") and a message that
names JSON paths, identifiers and numbers, never request or source content."""

from __future__ import annotations

from domain.errors import ErrorCode, PiSquadError

DELEGATION_CODES = frozenset(code for code in ErrorCode if code.startswith("DELEGATE_"))


class DelegationError(PiSquadError):
    """A `delegate` operation was refused; nothing was reserved, recorded or started."""

    family_codes = DELEGATION_CODES

    def document(self) -> dict[str, str]:
        return {"code": str(self.code), "message": self.message}


def refuse(code: ErrorCode, message: str) -> DelegationError:
    return DelegationError(code, message)
