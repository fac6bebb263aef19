"""Strict squad specifications: bytes in, an immutable ``SquadSpec`` or a coded ``SpecError``.

Import the modules, not this package: it re-exports nothing. ``domain.spec.parse`` holds the
validation pipeline (and ``jsonschema``); ``domain.spec.model`` the values; a child's bridge
needs only ``domain.spec.documents`` (its reader tool's parameters) and, paying its start-up
per task (``bench.child_start``), builds neither.
"""
