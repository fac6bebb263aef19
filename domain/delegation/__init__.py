"""The `delegate` protocol host's pure rules (docs/delegation.md): the closed request, the host
envelope and its canonical digest, the human grant, the lifecycle and result validation."""
