"""What a process was told: its environment and the settings read from it.

Every ``PI_SQUAD_*`` and ``PI_FLOWS_*`` setting is read here (through ``setting_reads``, one
function each), by one provider each, when first asked for; the rest of the process is given
the values. What stays an environment is the one children inherit (``environ``), and the child
contract's variables (``domain.child_environment``), which say what a process is rather than
how it is set up.
"""

from __future__ import annotations

from dependency_injector import providers

from adapters.isolation.confinement import agent_directory
from adapters.isolation.landlock import ISOLATION_VARIABLE, TEST_ABI_VARIABLE, IsolationSetting
from application.flows.trace_setup import TRACE_FILE_VARIABLE, TraceDefaults
from domain.flows.child_limits import ERROR_GRACE_VARIABLE
from domain.flows.flow_settings import FlowSettings
from domain.flows.roster_config import ENV_OVERRIDES
from domain.flows.tools import NO_SANDBOX_VARIABLE, REQUIRE_SANDBOX_VARIABLE
from domain.squad.advisor import advisor_from_environment
from domain.squad.monitor import policy_from_environment
from entrypoints.concerns import setting_reads as read
from entrypoints.concerns.reading import RootSettings


class Settings(RootSettings):
    """The environment and the squad root (``RootSettings``), and the values read from the
    environment lazily, when a provider is first called."""

    environ = RootSettings.environ
    # ``PI_CODING_AGENT_DIR``, else ``~/.pi/agent``: Pi's own, where pi-flows' user agents are.
    pi_agent_dir = providers.Callable(agent_directory, environ)
    default_provider = providers.Callable(read.optional, environ, read.PROVIDER_VARIABLE)
    default_model = providers.Callable(read.optional, environ, read.MODEL_VARIABLE)
    require_isolation = providers.Callable(read.isolation_required, environ)
    # ``PI_SQUAD_ISOLATION`` and ``PI_SQUAD_TEST_LANDLOCK_ABI``: how children are confined.
    isolation = providers.Factory(
        IsolationSetting,
        mode=providers.Callable(read.text, environ, ISOLATION_VARIABLE),
        abi_cap=providers.Callable(read.text, environ, TEST_ABI_VARIABLE),
    )
    # ``PI_SQUAD_RUNTIME_DIR``: where the Pi runtime is, instead of the checkout's.
    runtime_dir = providers.Callable(read.runtime_dir, environ)
    monitor_policy = providers.Callable(policy_from_environment, environ)
    # ``PI_SQUAD_ADVISOR_MODEL``: the monitor's advisor for escalations; unset, none.
    advisor = providers.Callable(advisor_from_environment, environ)
    # ``PI_FLOWS_TRACE_FILE`` and ``PI_FLOWS_TRACE_STRICT``: a flow call's trace defaults.
    trace_defaults = providers.Factory(
        TraceDefaults,
        file=providers.Callable(read.optional, environ, TRACE_FILE_VARIABLE),
        strict=providers.Callable(read.trace_strict, environ),
    )
    # ``PI_FLOWS_FAST_MODEL`` and ``PI_FLOWS_DEEP_MODEL``: the flow roster's tier overrides.
    tier_models = providers.Callable(read.tier_models, environ, ENV_OVERRIDES)
    # pi-flows' grace and bash-ro switches, as text: a flow call parses (and refuses) them.
    flow_settings = providers.Factory(
        FlowSettings,
        error_grace_ms=providers.Callable(read.text, environ, ERROR_GRACE_VARIABLE),
        bash_ro_no_sandbox=providers.Callable(read.text, environ, NO_SANDBOX_VARIABLE),
        bash_ro_require_sandbox=providers.Callable(read.text, environ, REQUIRE_SANDBOX_VARIABLE),
    )
    worker_context = providers.Callable(read.in_worker_context, environ)
