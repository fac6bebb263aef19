"""``pi-squad bridge`` as a subprocess, spoken to exactly as the shim does (docs/bridge.md).

The squads are really published in ``tmp_path`` (POSIX file system, fasteners locks); the bridge
builds its role from the §6 environment alone.
"""
