"""The `delegate` protocol host (docs/delegation.md): one load → decide → save transaction per
operation over the session store, source capture through the file system, the evidence broker a
worker calls, and the ``delegate`` tool. The decisions are ``domain/delegation/``'s."""
