"""pi-flows' own settings as the process was given them (``PI_FLOWS_ERROR_GRACE_MS``,
``PI_FLOWS_BASH_RO_NO_SANDBOX``, ``PI_FLOWS_BASH_RO_REQUIRE_SANDBOX``; the entrypoint's
``Settings`` reads them): kept as text and parsed when a flow call runs, so a malformed one
refuses that call (``FLOW_INVALID``, naming the variable), as it always has, and nothing else
(a ``list`` call, a squad, the bridge itself)."""

from __future__ import annotations

import attrs

from domain.flows.child_limits import error_grace_ms
from domain.flows.tools import BashRoSwitches, bash_ro_switches


@attrs.frozen
class FlowSettings:
    """Each setting's text; empty: unset (its default)."""

    error_grace_ms: str = ""
    bash_ro_no_sandbox: str = ""
    bash_ro_require_sandbox: str = ""

    def error_grace(self) -> int:
        """The provider-error grace in milliseconds (``domain.flows.child_limits``)."""
        return error_grace_ms(self.error_grace_ms)

    def bash_ro_switches(self) -> BashRoSwitches:
        """pi-flows' bash-ro switches (``domain.flows.tools``)."""
        return bash_ro_switches(self.bash_ro_no_sandbox, self.bash_ro_require_sandbox)


DEFAULT_FLOW_SETTINGS = FlowSettings()
