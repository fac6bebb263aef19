"""A scripted, deterministic OpenAI-compatible model server that drives real Pi in tests and demos.

See ``policies`` for the policies and the marker lines that select them, and ``spec_reading`` for
the contract between the squad bootstrap and the scripted model (``squad-spec-chunks: N``,
``squad-spec-missing: 0,1,2``).
"""

from adapters.scripted_model.models_json import MODEL_ID, PROVIDER, models_config, write_models_json
from adapters.scripted_model.policies import POLICIES, PlannedCall, Policy, PolicyState, Reply
from adapters.scripted_model.server import Exchange, ScriptedModelServer, UnknownPolicy

__all__ = [
    "MODEL_ID",
    "POLICIES",
    "PROVIDER",
    "Exchange",
    "PlannedCall",
    "Policy",
    "PolicyState",
    "Reply",
    "ScriptedModelServer",
    "UnknownPolicy",
    "models_config",
    "write_models_json",
]
