"""The Node + Pi 0.80.10 runtime: finding it and starting Pi with it (``locate``), and checking
it with ``doctor`` (``doctor``, over one ``get_state`` exchange in ``state_probe``).

Pi 0.80.10 needs Node >= 22.19. The project installs both into ``<repo>/.runtime`` with
``make runtime`` (``scripts/install-runtime``); ``PI_SQUAD_RUNTIME_DIR`` points elsewhere.
"""

from adapters.pi_runtime.doctor import (
    DOCTOR_TIMEOUT_SECONDS,
    ISOLATED_INSTALL,
    MIN_PYTHON,
    OWN_DISTRIBUTION,
    TOP_LEVEL_PACKAGES,
    check_extension,
    doctor,
    import_name_clashes,
)
from adapters.pi_runtime.locate import (
    INSTALL_COMMAND,
    MIN_NODE,
    PI_PACKAGE,
    VERSION_TIMEOUT_SECONDS,
    PiRuntime,
    PiRuntimeUnavailable,
    RuntimeSource,
    detect_repo_root,
    locate_runtime,
    node_platform_package,
    pi_command,
    pi_environment,
    pi_isolation_variables,
    runtime_dir,
)
from domain.pi_version import PI_VERSION

__all__ = [
    "DOCTOR_TIMEOUT_SECONDS",
    "INSTALL_COMMAND",
    "ISOLATED_INSTALL",
    "MIN_NODE",
    "MIN_PYTHON",
    "OWN_DISTRIBUTION",
    "PI_PACKAGE",
    "PI_VERSION",
    "TOP_LEVEL_PACKAGES",
    "VERSION_TIMEOUT_SECONDS",
    "PiRuntime",
    "PiRuntimeUnavailable",
    "RuntimeSource",
    "check_extension",
    "detect_repo_root",
    "doctor",
    "import_name_clashes",
    "locate_runtime",
    "node_platform_package",
    "pi_command",
    "pi_environment",
    "pi_isolation_variables",
    "runtime_dir",
]
