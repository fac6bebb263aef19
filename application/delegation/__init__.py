"""The `delegate` protocol host (docs/delegation.md): admission, status, collect, follow-up,
resolve, cancel and source capture over one durable session store."""
