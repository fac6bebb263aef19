"""The bridge server in-process over real pipes, with scripted handlers: ordering, hooks, limits,
failures; and how the role is chosen and wired."""
