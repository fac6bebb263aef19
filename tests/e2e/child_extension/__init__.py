"""The pi-squad package (``entrypoints/pi``) loaded by real Pi 0.80.10 as a file-spec child.

Pi runs in RPC mode with the §6 environment of a really published squad, the shim spawns the
real ``pi-squad bridge`` (pinned to this interpreter through ``PI_SQUAD_BRIDGE``), and the
scripted model plays the agent. Skipped when the project runtime is not installed.
"""
