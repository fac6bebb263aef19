"""``PiModelFiles``: the model-related files of a Pi agent directory, with the tier overrides
it is given (``PI_FLOWS_FAST_MODEL`` / ``PI_FLOWS_DEEP_MODEL``, which ``Settings`` reads), for
the flow model roster (``domain.flows.roster``); and, when it is given one, what Pi's model
registry says this install can run (``PiModelRegistry``).

Read only, each at most 1 MiB, following symbolic links as Pi itself does; a file that is
missing is simply absent, one that cannot be read is reported (never its content).
"""

from __future__ import annotations

import os
from typing import Protocol

from domain.flows.models import AvailableModels
from domain.flows.roster_config import FLOWS_CONFIG, ModelFiles

MAX_CONFIG_BYTES = 1024 * 1024


class Registry(Protocol):
    def available_models(self) -> AvailableModels: ...


class PiModelFiles:
    """``fast_model`` / ``deep_model``: the tiers' overrides as given (``None``: unset).
    ``registry``: asked afresh at each ``available_models`` (``None``: there is none, and the
    roster ranks ``models.json`` alone)."""

    def __init__(
        self,
        agent_dir: str,
        registry: Registry | None = None,
        *,
        fast_model: str | None = None,
        deep_model: str | None = None,
    ) -> None:
        self._agent_dir = agent_dir
        self._registry = registry
        self._fast_model = fast_model
        self._deep_model = deep_model

    def available_models(self) -> AvailableModels | None:
        return self._registry.available_models() if self._registry is not None else None

    def model_files(self) -> ModelFiles:
        problems: list[str] = []
        texts = [
            self._read(name, problems) for name in ("models.json", "settings.json", FLOWS_CONFIG)
        ]
        return ModelFiles(
            agent_dir=self._agent_dir,
            models_json=texts[0],
            settings_json=texts[1],
            flows_json=texts[2],
            fast_env=self._fast_model,
            deep_env=self._deep_model,
            read_problems=tuple(problems),
        )

    def _read(self, name: str, problems: list[str]) -> str | None:
        path = os.path.join(self._agent_dir, name)
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_CONFIG_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as error:
            problems.append(f"{name}: cannot be read ({error.strerror or 'error'}); ignored")
            return None
        if len(data) > MAX_CONFIG_BYTES:
            problems.append(f"{name}: larger than {MAX_CONFIG_BYTES} bytes; ignored")
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{name}: not UTF-8; ignored")
            return None
