"""Children from both sides: the role a child's Pi process runs behind the ``PiEvents`` port
(``role``, ``reader``, ``worker``, ...), and ``session``, the one way a parent of any face
starts a child and watches it until it ends."""
