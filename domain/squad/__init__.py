"""Squads, tasks and reviews as immutable values, with the upstream fields.

Import the modules (``domain.squad.model``, ``domain.squad.ids``, ...), not this package: it
re-exports nothing, so that a child's bridge, which needs only ``ids``, does not build the
squad model's classes (its start-up is paid per task; ``bench.child_start``).
"""
