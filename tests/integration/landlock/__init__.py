"""Landlock on the real kernel: confined children write only beneath the granted paths.

Each test starts the confined command the way ``adapters/pi_rpc/runtime.py`` starts Pi
(``Popen`` with ``start_new_session``, the environment passed through) and has it report,
operation by operation, ``ok`` or the errno name. Running as root does not matter: Landlock
applies to root. The Landlock layer alone (``PI_SQUAD_ISOLATION=landlock``): the namespaces
bubblewrap adds around it are ``tests/integration/test_child_namespaces.py``'s.
"""
