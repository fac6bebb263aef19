"""What a delegated worker's Pi starts with: its private Pi agent directory, a copy of the
user's with Pi's retries and automatic compaction off."""

from __future__ import annotations

import json
import os
from typing import Any

from adapters.isolation.confinement import (
    AGENT_DIR_ENV,
    PRIVATE_AGENT_DIR_NAME,
    seed_private_agent_directory,
)

# Laid over the user's settings in the worker's private agent directory: Pi's automatic
# retries and the provider SDK's are off, since the host cannot admit each underlying attempt
# (seed §8: disable opaque retries when the admission hook cannot be called). Not project
# settings: every child starts with ``--no-approve``, which ignores the project's.
RETRY_OFF = {"enabled": False, "maxRetries": 0}
PROVIDER_RETRY_OFF = {"maxRetries": 0}
# Pi's automatic compaction is a model request no hook of ours admits (seed §7: every
# inference attempt is admitted): off. Should Pi compact anyway, the parent counts its
# ``compaction_start`` as a request against the attempt's allowance.
COMPACTION_OFF = {"enabled": False}
SETTINGS_FILE = "settings.json"


def worker_agent_variables(directory: str) -> dict[str, str]:
    """What points the worker's Pi at the agent directory ``write_worker_settings`` makes in
    ``directory``."""
    return {AGENT_DIR_ENV: os.path.join(directory, PRIVATE_AGENT_DIR_NAME)}


def write_worker_settings(directory: str, user_agent_dir: str) -> str:
    """``<directory>/agent``, the worker's own Pi agent directory (its ``PI_CODING_AGENT_DIR``):
    a confined child's private copy of ``user_agent_dir`` (credentials and models, no code),
    with ``RETRY_OFF`` and ``PROVIDER_RETRY_OFF`` laid over its settings' ``retry`` and
    ``COMPACTION_OFF`` over its ``compaction``."""
    private = seed_private_agent_directory(user_agent_dir, directory)
    path = os.path.join(private, SETTINGS_FILE)
    settings = _json_object(path)
    retry = _object(settings.get("retry"))
    provider = _object(retry.get("provider"))
    settings["retry"] = {**retry, **RETRY_OFF, "provider": {**provider, **PROVIDER_RETRY_OFF}}
    settings["compaction"] = {**_object(settings.get("compaction")), **COMPACTION_OFF}
    with open(path, "w", encoding="utf-8") as file:
        json.dump(settings, file)
    return private


def _json_object(path: str) -> dict[str, Any]:
    """The JSON object in ``path``; empty when there is none (Pi would refuse a malformed
    settings file of the user's in their own sessions too, so it is not carried over)."""
    try:
        with open(path, encoding="utf-8") as file:
            return _object(json.load(file))
    except (OSError, ValueError):
        return {}


def _object(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}
