"""The Python side of the JSON-lines protocol spoken with the Pi extension shim
(``entrypoints/pi/index.ts``); documented in ``docs/bridge.md``."""

from adapters.bridge.protocol import PROTOCOL_VERSION
from adapters.bridge.roles import (
    BridgeRole,
    Emit,
    InertMainRole,
    MainRoleHandler,
    Notification,
    NotificationSource,
    RequestedRole,
    RoleName,
    bridge_role_for,
    failed_closed_bridge_role,
    inert_main_bridge_role,
    main_bridge_role,
)
from adapters.bridge.server import BridgeServer

__all__ = [
    "PROTOCOL_VERSION",
    "BridgeRole",
    "BridgeServer",
    "Emit",
    "InertMainRole",
    "MainRoleHandler",
    "Notification",
    "NotificationSource",
    "RequestedRole",
    "RoleName",
    "bridge_role_for",
    "failed_closed_bridge_role",
    "inert_main_bridge_role",
    "main_bridge_role",
]
