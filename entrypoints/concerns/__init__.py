"""The containers the composition roots are built from, one per concern: what the process was
told (``settings``), the outside world behind the ports (``system``, ``adapters``), the use
cases over them (``use_cases``) and the driving of a squad's children (``driver``).

Each declares what it needs from the others as a ``DependenciesContainer``, as in
dependency-injector's use-cases and decoupled-packages examples; the roots in
``entrypoints/container.py``, ``main_bridge_container.py`` and ``bridge_container.py`` wire them
together, and a process role's own factory is the one ``entrypoints/roles.py`` names.
"""
