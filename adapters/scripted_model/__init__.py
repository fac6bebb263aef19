"""A scripted, deterministic model server that drives real Pi in tests and demos, on every wire
protocol Pi speaks with a custom ``baseUrl`` (``wire``): each refuses what its real API refuses,
fills only the tool fields the provider was shown, streams thinking for a reasoning request and
reports priced token usage (``models_json`` names one provider per protocol).

Contract between the squad (agent prompts, child bootstrap, ``squad_spec_read``) and this model.
Each marker is a ``key: value`` line on its own (leading spaces allowed):

=========================  ======================================================================
``scripted-policy: NAME``  Chooses the policy for that request: the last such line of the system
                           prompt (Pi appends ``--append-system-prompt`` text and
                           ``before_agent_start`` additions there), else of the user messages,
                           else the server's default policy. Tool results are never searched.
``scripted-task: ID``      The task, for ``qa-fail`` (fails once per task; ``-retest-N`` and
                           ``-fix-N`` suffixes are dropped). Default: the ``taskId`` of a
                           ``squad_spec_read`` metadata line, else one key for the whole server.
``squad-spec-chunks: N``   The spec's chunk count (system prompt, user message or a tool result
                           such as a block reason; the last wins). Fallbacks: ``"chunkCount": N``,
                           ``chunk count: N``, ``chunks: N`` or ``N chunks`` in the system prompt
                           or user messages, else the metadata line of a delivered chunk.
``squad-spec-missing: L``  The indices still to read (``0,1,2``, ``[0, 1, 2]``, empty or
                           ``none``). Also understood: ``Missing chunk indices: [..]``,
                           ``missing indices: [..]``, ``"missingIndices": [..]``. The latest
                           statement wins, minus chunks delivered after it.
``scripted-bash: CMD``     The command of ``bash-once`` (default ``echo scripted-bash-ok``).
=========================  ======================================================================

A ``squad_spec_read`` call (argument ``index``, or the schema's one integer property) counts as
delivered when its result opens with a JSON line naming its ``index`` (the contract's metadata
block; content blocks reach the model joined by ``"\\n"``), or, in any other format, when it
does not open like an error (``Error``, ``Blocked``, ``Validation failed``, ``Read every ...``).
Text of delivered chunks is never searched for markers.

Policies (``policies.POLICIES``): ``diligent``, ``impatient``, ``lazy``, ``qa-fail``, ``echo``,
``bash-once``, ``tool-once`` and ``saboteur`` (reads everything, then attacks its siblings with
``bash``: the trust-boundary tests); extra ones can be passed to
``ScriptedModelServer(policies=...)``.
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
