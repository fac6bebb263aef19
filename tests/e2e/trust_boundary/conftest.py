"""The trust-boundary squad, run by ``pi-squad run`` with the isolation and the attacks a test asks
for (indirect parametrization of ``squad``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer
from adapters.scripted_model.saboteur import PLANT_MARKER, PLANTED_EXTENSION
from tests.e2e.trust_boundary.support import (
    HONEST,
    SABOTEUR,
    VICTIM,
    AttackWitness,
    Squad,
    agent_definition,
    spec_bytes,
)


@pytest.fixture
def squad(request: pytest.FixtureRequest, tmp_path: Path, runtime: PiRuntime) -> Iterator[Squad]:
    """The squad's project; ``indirect`` parametrization may name a subset of the attacks."""
    attacks: str | None = getattr(request, "param", None)
    witness = AttackWitness(root=tmp_path / "root")
    with ScriptedModelServer("diligent", policies={SABOTEUR: witness.policy}) as model:
        built = Squad(base=tmp_path, runtime=runtime, model=model, witness=witness)
        built.write_models()
        (tmp_path / "home").mkdir()
        built.agents.mkdir(parents=True)
        saboteur_markers = [
            "scripted-policy: saboteur",
            f"scripted-sibling: {VICTIM}",
            f"scripted-delete: {HONEST}",
            f"{PLANT_MARKER}: {built.user_agent_dir}",
        ]
        # As if an earlier, unconfined child had already planted code: every Pi that
        # discovered it would leave a PLANTED-EXTENSION-LOADED-<task> file in the project.
        planted = built.user_agent_dir / "extensions" / "planted-earlier.ts"
        planted.parent.mkdir(parents=True, exist_ok=True)
        planted.write_text(PLANTED_EXTENSION)
        (built.project / ".pi" / "extensions").mkdir(parents=True)
        (built.project / ".pi" / "extensions" / "planted-in-project.ts").write_text(
            PLANTED_EXTENSION
        )
        if attacks is not None:
            saboteur_markers.append(f"scripted-attacks: {attacks}")
        markers = {
            HONEST: "scripted-policy: diligent",
            SABOTEUR: "\n".join(saboteur_markers),
            VICTIM: "scripted-policy: diligent",
        }
        for name, marker in markers.items():
            (built.agents / f"{name}.json").write_text(json.dumps(agent_definition(name, marker)))
        (built.project / "squad-spec.json").write_bytes(spec_bytes())
        yield built
