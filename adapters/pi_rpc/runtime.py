"""``PiRpcRuntime``: starting one child Pi, binding its session and handing it its first prompt."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Mapping, Sequence

from adapters.isolation.confinement import confined_launch, remove_scratch
from adapters.isolation.protected_code import protected_code
from adapters.pi_rpc import exit_cleanup
from adapters.pi_rpc.child import ChildSettings, PiRpcChild
from adapters.pi_rpc.command_line import child_argv, child_environment
from adapters.pi_rpc.event_gate import Sink
from adapters.pi_rpc.prompt_file import remove_prompt_file, write_prompt_file
from adapters.pi_rpc.records import error_text, session_from_state
from adapters.pi_rpc.requests import RequestFailed
from adapters.pi_rpc.stdout_records import MAX_RECORD_BYTES
from application.ports import ChildIsolation, ChildRuntime, IsolationSupport, SpawnRequest
from domain.errors import IsolationUnavailable
from domain.isolation import ProtectedPath


class SpawnFailed(Exception):
    """The child could not be started, did not bind its session, or refused the first prompt.

    The process (if any) has been killed and reaped and the prompt file removed when this is
    raised, and the sink never hears of that child. ``reason`` never contains spec or prompt
    content.
    """

    def __init__(
        self,
        task_id: str,
        child_id: str,
        reason: str,
        *,
        stderr_tail: str = "",
        exit_code: int | None = None,
        before_prompt: bool = False,
    ) -> None:
        super().__init__(f"task {task_id}: child {child_id} failed to start: {reason}")
        self.task_id = task_id
        self.child_id = child_id
        self.reason = reason
        self.stderr_tail = stderr_tail
        self.exit_code = exit_code
        # True when it failed before the first prompt was written: no model request can have
        # been sent, so starting again cannot bill anything twice.
        self.before_prompt = before_prompt


class PiRpcRuntime:
    """Starts children. Explicitly a ``ChildRuntime`` (see ``spawn``); it holds no clock.

    ``prefix``: the argv that starts Pi (``adapters.pi_runtime.pi_command``).
    ``base_env``: the complete environment for children before the request's variables (use
    ``adapters.pi_runtime.pi_environment`` so Pi's state stays out of ``~/.pi``).
    ``extension``: the ``entrypoints/pi`` package path passed with ``-e``; ``None`` for none.
    ``provider``: ``--provider`` unless the request names one.
    ``startup_timeout``: seconds to wait for the ``get_state`` answer; the other timeouts and
    ``max_record_bytes`` are each child's (``ChildSettings``).
    ``runtime_override``: ``PI_SQUAD_RUNTIME_DIR`` as given, for ``protected_code``.
    """

    def __init__(
        self,
        prefix: Sequence[str],
        base_env: Mapping[str, str],
        extension: str | None,
        *,
        provider: str | None = None,
        startup_timeout: float = 30.0,
        request_timeout: float = 10.0,
        settle_exit_grace: float = 2.0,
        kill_grace: float = 3.0,
        stream_join_timeout: float = 2.0,
        max_record_bytes: int = MAX_RECORD_BYTES,
        temp_dir: str | None = None,
        new_child_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        isolation: ChildIsolation | None = None,
        runtime_override: str | None = None,
    ) -> None:
        if not prefix:
            raise ValueError("the pi command prefix is empty")
        self._prefix = tuple(prefix)
        self._base_env = dict(base_env)
        self._extension = extension
        self._provider = provider
        self._startup_timeout = startup_timeout
        self._child_settings = ChildSettings(
            request_timeout=request_timeout,
            settle_exit_grace=settle_exit_grace,
            kill_grace=kill_grace,
            stream_join_timeout=stream_join_timeout,
            max_record_bytes=max_record_bytes,
        )
        self._temp_dir = temp_dir
        self._new_child_id = new_child_id
        self._isolation = isolation
        self._runtime_override = runtime_override
        self._protected: tuple[ProtectedPath, ...] | None = None

    @property
    def protected_code(self) -> tuple[ProtectedPath, ...]:
        """The code no confined child's write grant may reach: this process's Python and
        pi-squad, the Pi this runtime starts and the bridge its children start
        (``adapters.isolation.protected_code``); gathered once."""
        if self._protected is None:
            self._protected = protected_code(
                pi_prefix=self._prefix,
                extension=self._extension,
                environ=self._base_env,
                runtime_override=self._runtime_override,
            )
        return self._protected

    @property
    def isolation(self) -> IsolationSupport:
        """What this runtime can enforce on the children it starts."""
        if self._isolation is None:
            return IsolationSupport(mode="none", abi=None, reason="no isolation configured")
        return self._isolation.support()

    @property
    def pi_launch(self) -> tuple[tuple[str, ...], dict[str, str]]:
        """The argv prefix and environment every child's Pi starts with (before a request's
        own variables): what another Pi program needs to resolve what a child would."""
        return self._prefix, dict(self._base_env)

    @property
    def loads_extension(self) -> bool:
        """Whether every child loads pi-squad's extension (``-e``), whose bridge can screen a
        child's tool calls (the bash-ro allowlist)."""
        return self._extension is not None

    def spawn(self, request: SpawnRequest, sink: Sink) -> PiRpcChild:
        """Start the child, bind its session, send ``first_prompt``; raise ``SpawnFailed``.

        Blocks until the first prompt was accepted (Pi needs about a second to start). Events
        are queued meanwhile and delivered, ``SessionBound`` first, only once this returns; a
        failed start delivers none.
        """
        child_id = self._new_child_id()
        try:
            prompt_file = write_prompt_file(request.system_prompt, self._temp_dir)
        except (OSError, UnicodeEncodeError) as error:
            raise SpawnFailed(
                request.task_id,
                child_id,
                f"cannot write the system prompt file: {error}",
                before_prompt=True,
            ) from None
        argv = child_argv(
            self._prefix,
            request,
            prompt_file=prompt_file,
            extension=self._extension,
            provider=self._provider,
        )
        env = child_environment(self._base_env, request)
        scratch: str | None = None
        if request.confinement is not None:
            if self._isolation is None:
                remove_prompt_file(prompt_file)
                raise IsolationUnavailable("this runtime was built without child isolation")
            try:
                launch = confined_launch(
                    self._isolation,
                    argv,
                    env,
                    request.confinement,
                    temp_parent=self._temp_dir,
                    protected=self.protected_code,
                )
            except BaseException:
                remove_prompt_file(prompt_file)
                raise
            argv, env, scratch = launch.argv, launch.env, launch.scratch_dir
        elif self._isolation is not None:
            # Not confined, yet in namespaces of its own where the machine has them: its whole
            # process tree still ends with it.
            argv = self._isolation.enclose(argv)
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=request.cwd,
                env=env,
                start_new_session=os.name == "posix",
            )
        except OSError as error:
            remove_prompt_file(prompt_file)
            remove_scratch(scratch)
            raise SpawnFailed(
                request.task_id, child_id, f"cannot start {argv[0]}: {error}", before_prompt=True
            ) from None
        child = PiRpcChild(
            process,
            task_id=request.task_id,
            child_id=child_id,
            sink=sink,
            prompt_file=prompt_file,
            scratch_dir=scratch,
            settings=self._child_settings,
            observe_output=request.observe_output,
        )
        exit_cleanup.track(child)  # stopped and cleaned up should this process exit first
        prompted: list[bool] = []
        try:
            self._start_conversation(child, request.first_prompt, prompted)
        except RequestFailed as failure:
            child.abandon()
            raise SpawnFailed(
                request.task_id,
                child_id,
                str(failure),
                stderr_tail=child.stderr_tail(),
                exit_code=child.exit_code,
                before_prompt=not prompted,
            ) from None
        child.release()
        return child

    def _start_conversation(
        self, child: PiRpcChild, first_prompt: str, prompted: list[bool]
    ) -> None:
        """``get_state`` must bind a session, then ``first_prompt`` must be accepted; raises
        ``RequestFailed`` otherwise. ``prompted`` gets an entry once the prompt is sent."""
        state = child.request({"type": "get_state"}, self._startup_timeout)
        if session_from_state(state) is None:
            raise RequestFailed("get_state answered without a session file")
        prompted.append(True)
        answer = child.request(
            {"type": "prompt", "message": first_prompt}, self._child_settings.request_timeout
        )
        if answer.get("success") is not True:
            raise RequestFailed(f"the first prompt was refused: {error_text(answer)}")


_runtime_conforms: type[ChildRuntime] = PiRpcRuntime
