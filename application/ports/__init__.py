"""The ports: small protocols the use cases depend on. Adapters implement them explicitly.

One module per concern, each naming its ports in ``__all__``: the file system; the clock, ids,
temporary directories and locks (``system``); the squad store; the Pi extension host
(``pi_events``); child Pi processes (``children``); agent definitions; child write isolation.
All of them are re-exported here, so ``from application.ports import X`` is the way to use them.
"""

# Star imports on purpose: each module's ``__all__`` is the one list of its names, so a port
# added there is exported here without a second list to keep in step.
from application.ports.agents import *  # noqa: F403
from application.ports.children import *  # noqa: F403
from application.ports.filesystem import *  # noqa: F403
from application.ports.isolation import *  # noqa: F403
from application.ports.pi_events import *  # noqa: F403
from application.ports.store import *  # noqa: F403
from application.ports.system import *  # noqa: F403
