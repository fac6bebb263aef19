"""``pi-squad status``, ``modify`` and ``review`` in a subprocess over a real squad root: JSON
shapes, exit codes, read-only status, and a running scheduler picking the changes up."""
