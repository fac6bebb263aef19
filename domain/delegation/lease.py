"""The lease a delegated attempt runs under: immutable admitted route data, valid while the
host's record of the attempt still holds the same ``token``.

A revoked lease (cancel, deadline, navigation, policy change) is refused, so a cancelled or
expired attempt can never publish a late result. Kept apart from ``worker_protocol``: a child's
bridge reads a worker's lease from its environment (``domain.child_environment``) at start-up,
paid per worker, and needs nothing of the envelope.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class WorkerLease:
    """A job-lifetime lease: the attempt it names and the token the host's record holds."""

    session: str
    batch_id: str
    job_id: str
    attempt_id: str
    token: str
    packet_digest: str
