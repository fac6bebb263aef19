"""Full-read coverage and attestation (contract §9), pure: no I/O, no clock, no environment.

- :mod:`~domain.attestation.binding`: what coverage is bound to, one delivered chunk;
- :mod:`~domain.attestation.coverage`: the REQUIRED/READING/COMPLETE/INVALID state machine;
- :mod:`~domain.attestation.record`: the §9 attestation file and its validator;
- :mod:`~domain.attestation.progress`: the durable ``spec-read-state.json`` record;
- :mod:`~domain.attestation.timestamps`: RFC 3339 rendering and parsing.
"""

from domain.attestation.binding import ChunkDelivery, ChunkIndexOutOfRange, SpecBinding
from domain.attestation.coverage import (
    NOT_REQUIRED,
    Coverage,
    CoverageNotComplete,
    CoverageNotRequired,
    CoverageState,
    TaskCoverage,
)
from domain.attestation.progress import (
    ProgressCorrupt,
    parse_progress,
    progress_json_dict,
    serialise_progress,
)
from domain.attestation.record import (
    Attestation,
    AttestationInvalid,
    AttestationValid,
    AttestationVerdict,
    validate_attestation,
    validate_attestation_bytes,
)
from domain.attestation.timestamps import (
    TimestampInvalid,
    format_rfc3339_millis,
    parse_rfc3339,
)

__all__ = [
    "NOT_REQUIRED",
    "Attestation",
    "AttestationInvalid",
    "AttestationValid",
    "AttestationVerdict",
    "ChunkDelivery",
    "ChunkIndexOutOfRange",
    "Coverage",
    "CoverageNotComplete",
    "CoverageNotRequired",
    "CoverageState",
    "ProgressCorrupt",
    "SpecBinding",
    "TaskCoverage",
    "TimestampInvalid",
    "format_rfc3339_millis",
    "parse_progress",
    "parse_rfc3339",
    "progress_json_dict",
    "serialise_progress",
    "validate_attestation",
    "validate_attestation_bytes",
]
