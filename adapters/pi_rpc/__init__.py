"""``ChildRuntime`` over real child processes: one ``pi --mode rpc`` per task (contract §6, §12).

Command line (reference/pi-squad-upstream.md §5)::

    <prefix> --mode rpc <session> [-e <extension>] --append-system-prompt <file>
             [--provider P] [--model M] [--thinking T] [--tools a,b | --no-tools]

``<session>`` is ``--session-dir D`` (new), ``--session F`` (resume) or
``--fork F --session-dir D`` (fork). The appended system prompt goes to a private temporary
file (mode ``0600``) that is removed once the process has exited. ``cwd`` is the request's;
the environment is the runtime's base environment plus the request's variables, nothing else.

Protocol (reference/pi-runtime.md): stdout is read as bytes and split on ``\\n`` only (Pi writes
U+2028/U+2029 raw inside strings); each record goes through the project's strict JSON decoder,
and a malformed record is logged (never its content) and skipped. Startup sends ``get_state``
(its answer binds the session: ``SessionBound``), then ``prompt`` with the first prompt, which
must be accepted. Settlement is ``agent_settled``, never ``agent_end``: the runtime then closes
the child's stdin (Pi exits cleanly, letting extensions see ``session_shutdown``) and, if the
child is still there after a grace period, terminates it (SIGTERM, then SIGKILL).

Threads and the sink. Each child has four daemon threads: a stdout reader, a stderr drain
(keeping the last 64 KiB for ``Exited.stderr_tail``), a waiter that reaps the process, and a
dispatcher, the only thread that calls the sink for that child. So for one child the sink is
called from one thread at a time, in the order the child produced the events, starting once
``spawn`` has returned (``SessionBound`` first) and ending with ``Exited``, exactly once;
different children call it concurrently, so the sink must be thread-safe. The
sink may call the handle's methods (``steer`` included: the reader keeps reading while the
dispatcher is busy). An exception raised by the sink is logged and the next event is delivered.

Every event carries the ``child_id`` of the handle that produced it; a scheduler that replaced
or killed a handle recognises its late events by that id.

The modules: ``runtime`` (``PiRpcRuntime.spawn``, ``SpawnFailed``), ``child`` (``PiRpcChild``,
the handle and its threads), ``record_events`` (what each stdout record means as events),
``event_gate`` (the events held until the spawn decides, then delivered), ``command_line``,
``prompt_file``, ``requests`` (request ids and their answers), ``stdout_records`` (framing and
decoding the output), ``stderr_tail``, ``termination`` (SIGTERM, then SIGKILL, to the process
group). Their loggers all sit below ``adapters.pi_rpc``.
"""

from adapters.pi_rpc.child import ChildSettings, PiRpcChild
from adapters.pi_rpc.command_line import child_argv, session_arguments
from adapters.pi_rpc.event_gate import Sink
from adapters.pi_rpc.runtime import PiRpcRuntime, SpawnFailed
from adapters.pi_rpc.stderr_tail import STDERR_TAIL_BYTES
from adapters.pi_rpc.stdout_records import MAX_RECORD_BYTES

__all__ = [
    "MAX_RECORD_BYTES",
    "STDERR_TAIL_BYTES",
    "ChildSettings",
    "PiRpcChild",
    "PiRpcRuntime",
    "Sink",
    "SpawnFailed",
    "child_argv",
    "session_arguments",
]
