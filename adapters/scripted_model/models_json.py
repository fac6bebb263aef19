"""The Pi ``models.json`` pointing provider ``fake`` / model ``fake-model`` at a scripted server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

PROVIDER = "fake"
MODEL_ID = "fake-model"


def models_config(base_url: str) -> dict[str, Any]:
    """The provider configuration Pi 0.80.10 reads (see docs/models.md in the Pi package)."""
    return {
        "providers": {
            PROVIDER: {
                "baseUrl": base_url.rstrip("/"),
                "api": "openai-completions",
                "apiKey": "dummy",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [
                    {
                        "id": MODEL_ID,
                        "name": "Scripted",
                        "reasoning": False,
                        "input": ["text"],
                        "contextWindow": 128000,
                        "maxTokens": 4096,
                    }
                ],
            }
        }
    }


def write_models_json(agent_dir: str | os.PathLike[str], base_url: str) -> Path:
    """Write ``<agent_dir>/models.json`` atomically (replacing any) and return its path.

    Select the model with ``pi --provider fake --model fake-model`` and
    ``PI_CODING_AGENT_DIR=<agent_dir>``.
    """
    directory = Path(agent_dir)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "models.json"
    staging = directory / f".models.json.tmp.{os.getpid()}"
    staging.write_text(json.dumps(models_config(base_url), indent=2) + "\n", encoding="utf-8")
    os.replace(staging, target)
    return target
