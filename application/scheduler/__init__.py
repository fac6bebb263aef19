"""The squad scheduler (``squad_scheduler.Scheduler``) and the parts it is made of."""

from application.scheduler.context import Notice
from application.scheduler.live_children import LiveChild
from application.scheduler.settlement import (
    DEFAULT_BACKOFF,
    MAX_ATTESTATION_REJECTIONS,
    REJECTION_PREFIX,
)
from application.scheduler.spawning import NO_ISOLATION
from application.scheduler.squad_scheduler import Scheduler

__all__ = [
    "DEFAULT_BACKOFF",
    "MAX_ATTESTATION_REJECTIONS",
    "NO_ISOLATION",
    "REJECTION_PREFIX",
    "LiveChild",
    "Notice",
    "Scheduler",
]
