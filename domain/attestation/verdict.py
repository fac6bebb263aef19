"""The auditor's verdict on a task's attestation (``application.attestation_check``). Its own
module: a spec child's bridge imports it and must stay light (no squad model; see
``tests/integration/test_bridge_startup.py``)."""

from __future__ import annotations

import enum


class AttestationStatus(enum.StrEnum):
    """The auditor's verdict on a task's attestation file, now."""

    VALID = "valid"
    MISSING = "missing"
    INVALID = "invalid"
    NOT_REQUIRED = "not_required"
