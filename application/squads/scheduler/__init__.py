"""The squad scheduler (``squad_scheduler.Scheduler``) and the parts it is made of."""

from application.squads.scheduler.context import Notice
from application.squads.scheduler.live_children import LiveChild
from application.squads.scheduler.settlement import (
    DEFAULT_BACKOFF,
    MAX_ATTESTATION_REJECTIONS,
    REJECTION_PREFIX,
)
from application.squads.scheduler.spawning import NO_ISOLATION
from application.squads.scheduler.squad_scheduler import Scheduler

__all__ = [
    "DEFAULT_BACKOFF",
    "MAX_ATTESTATION_REJECTIONS",
    "NO_ISOLATION",
    "REJECTION_PREFIX",
    "LiveChild",
    "Notice",
    "Scheduler",
]
