"""The command line that starts one child Pi in RPC mode (reference/pi-squad-upstream.md §5)."""

from __future__ import annotations

from collections.abc import Sequence

from application.ports import ForkSession, NewSession, ResumeSession, SpawnRequest


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
    ``--no-extensions`` always: a child loads pi-squad's extension and nothing Pi would discover
    (``<agent dir>/extensions``, the project's ``.pi/extensions``, settings ``packages``),
    because any child that can write files could have planted code there.
    """
    argv = [*prefix, "--mode", "rpc", *session_arguments(request), "--no-extensions"]
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
        argv += ["--approve", "--no-skills", "--no-prompt-templates", "--no-context-files"]
    if request.tools is not None:
        argv += ["--tools", ",".join(request.tools)] if request.tools else ["--no-tools"]
    return argv
