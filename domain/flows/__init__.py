"""Flows (docs/flows.md): a call to coordinate child Pi agents in one named mode, under bounds.

Pure: the call model and its validation (``call``), pi-flows' error catalogue (``catalogue``,
``errors``), the graph's waves (``graph``) and the modes as strategies over one dispatch seam
(``modes``). Spawning, waiting and the clock are the application's (``application.flows``).
"""
