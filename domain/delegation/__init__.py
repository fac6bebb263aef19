"""The `delegate` protocol's pure rules (docs/delegation.md): the closed request, the host
envelope and its canonical digest, the human grant, the lifecycle, result validation, and every
transition of a session's frozen state as a decision (admission, bindings, collection,
resolution, revocation, the worker side, recovery), in the squads' idiom."""
