"""What a delegated worker starts with and what each of its messages costs: the private
directory's Pi settings (retries off) and a finalised message's usage as the receipt keeps it."""

from __future__ import annotations

import json
import os

from application.ports import AssistantText
from domain.delegation.session import Usage


def usage_of(event: AssistantText) -> Usage:
    if not event.usage_reported:
        return Usage()  # nothing reported: every category unknown, never a made-up zero
    return Usage(
        input=event.input_tokens,
        output=event.output_tokens,
        cache_read=event.cache_read,
        cache_write=event.cache_write,
        cost=event.cost,
        cost_estimated=True,  # Pi computes it from its model table, not from a bill
        reported_calls=1,
    )


# The worker's project settings (its private cwd's ``.pi/settings.json``): Pi's automatic
# retries and the provider SDK's are off, since the host cannot admit each underlying attempt
# (seed §8: disable opaque retries when the admission hook cannot be called).
WORKER_SETTINGS = {"retry": {"enabled": False, "maxRetries": 0, "provider": {"maxRetries": 0}}}


def write_worker_settings(directory: str) -> None:
    os.makedirs(os.path.join(directory, ".pi"), mode=0o700)
    with open(os.path.join(directory, ".pi", "settings.json"), "w", encoding="utf-8") as file:
        json.dump(WORKER_SETTINGS, file)
