"""How the ``validate_attestation`` tests judge a document: the keys of a valid one, the
verdict on it or on a mutated copy, and the reason an invalid verdict gives."""

from __future__ import annotations

from collections.abc import Callable

from domain.attestation import AttestationInvalid, AttestationVerdict, validate_attestation
from domain.strict_json import JsonObject
from tests.unit.domain.attestation.support import BINDING, TABLE, attestation_dict

TOP_KEYS = list(attestation_dict())
CHUNK_KEYS = list(attestation_dict()["chunks"][0])


def reason_of(verdict: AttestationVerdict) -> str:
    assert isinstance(verdict, AttestationInvalid), "expected an invalid verdict"
    return verdict.reason


def judge(document: object) -> AttestationVerdict:
    return validate_attestation(document, BINDING, TABLE)


def mutated(mutate: Callable[[JsonObject], object]) -> AttestationVerdict:
    document = attestation_dict()
    mutate(document)
    return judge(document)
