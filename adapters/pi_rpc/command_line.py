"""The command line that starts one child Pi in RPC mode (reference/pi-squad-upstream.md §5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from application.ports import ForkSession, NewSession, ResumeSession, SpawnRequest

NOTHING_DISCOVERED = ("--no-extensions", "--no-approve", "--no-skills", "--no-prompt-templates")
"""What every child Pi starts without, whatever the user's settings and ``trust.json`` say:
extensions it would discover (``<agent dir>/extensions``, the project's ``.pi/extensions``,
settings ``packages``), project trust (``--no-approve``: the project's ``.pi/settings.json``,
with its ``packages`` and ``npmCommand``, and every other ``.pi`` resource are ignored), and
skills and prompt templates from anywhere. A child, or a sibling before it, can write the
project; a spawn that needs a skill or template would name it (``--skill``, which Pi loads
despite ``--no-skills``), and none does."""

CHILD_PI_VARIABLES: Mapping[str, str] = {"PI_OFFLINE": "1"}
"""Set for every child Pi, over anything inherited: no package install or update, so even a
user-level ``packages`` entry or ``npmCommand`` never runs while a child starts."""


def child_environment(base_env: Mapping[str, str], request: SpawnRequest) -> dict[str, str]:
    """The environment of one child Pi: ``base_env``, the request's variables, then
    ``CHILD_PI_VARIABLES``, which nothing before them can override."""
    return {**base_env, **request.environment, **CHILD_PI_VARIABLES}


def session_arguments(request: SpawnRequest) -> list[str]:
    session = request.session
    if isinstance(session, NewSession):
        return ["--session-dir", session.session_dir]
    if isinstance(session, ResumeSession):
        return ["--session", session.session_file]
    if isinstance(session, ForkSession):
        return ["--fork", session.source_file, "--session-dir", session.session_dir]
    raise TypeError(f"unknown session choice {type(session).__name__}")


def child_argv(
    prefix: Sequence[str],
    request: SpawnRequest,
    *,
    prompt_file: str,
    extension: str | None,
    provider: str | None,
) -> list[str]:
    """The full command line for one child. ``request.provider`` wins over ``provider``.

    ``tools=None`` passes no tool flag (Pi's defaults); an empty tuple passes ``--no-tools``.
    Always ``NOTHING_DISCOVERED``: a child loads pi-squad's extension and nothing Pi would
    discover, because any child that can write files could have planted code there.
    """
    argv = [*prefix, "--mode", "rpc", *session_arguments(request), *NOTHING_DISCOVERED]
    if extension is not None:
        argv += ["-e", extension]
    argv += ["--append-system-prompt", prompt_file]
    chosen_provider = request.provider if request.provider is not None else provider
    if chosen_provider is not None:
        argv += ["--provider", chosen_provider]
    if request.model is not None:
        argv += ["--model", request.model]
    if request.thinking is not None:
        argv += ["--thinking", request.thinking]
    if request.closed_context:
        argv += ["--no-context-files"]
    if request.tools is not None:
        argv += ["--tools", ",".join(request.tools)] if request.tools else ["--no-tools"]
    return argv
