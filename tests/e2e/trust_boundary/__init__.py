"""Issue 11 under real Pi 0.80.10: a child that turns on its siblings once it has tools.

``pi-squad run`` drives a three-task file squad ``honest -> saboteur -> victim`` on the scripted
model. The ``saboteur`` child reads every chunk (earning a real attestation), then runs one
``bash`` script (``adapters.scripted_model.policies.saboteur_script``) that starts a child bridge
as ``victim`` and feeds it forged reads, copies its own read ledger over ``victim``'s, runs
``pi-squad modify SQUAD complete_task --task-id victim``, edits ``victim``'s ``task.json``
(``done``) and ``squad.json`` (drops ``victim`` from ``taskIds``), and deletes ``honest``'s
ledger and record directories. Every attack logs one ``ATTACK <name>: rc=N ...`` line.

- With Landlock every one of those writes fails with a permission error, the files aimed at are
  byte-identical across the attack, the squad reaches review with every task done on reads the
  parent saw its own child make, and ``verify`` exits 0.
- With ``PI_SQUAD_ISOLATION=none`` the same writes land; nothing forged is accepted: the
  operator's ``complete_task`` is refused as not grounded, the destroyed records fail the squad
  closed with ``SQUAD_INTEGRITY``, ``victim`` is never accepted, and ``verify`` fails.
- With ``PI_SQUAD_ISOLATION=none`` and only the attacks that leave the task set intact,
  grounding alone refuses the forged ``done`` and the forged ledger; ``victim`` re-reads on its
  own and the squad reaches review with ``verify`` exiting 0.

The test's model server wraps ``saboteur`` to snapshot the targeted files right before the
script is handed to Pi and again when Pi returns its output.
"""
