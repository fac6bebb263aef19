"""The child role: what a file-spec child's Pi process runs, behind the ``PiEvents`` port."""
