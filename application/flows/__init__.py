"""Running flows (docs/flows.md): admission before any spawn (``admission``), the one place a
flow child is spawned (``dispatch``), and the use case (``run_flow``)."""
