"""Settings for the whole suite."""

from __future__ import annotations

from hypothesis import settings

# Hypothesis's default 200 ms deadline per example is a timed assertion, and this suite runs on
# small, shared, noisy machines (a jsonschema validator compiled on first use can exceed it under
# load). Speed is proven by the benchmarks under bench/, never by a test's clock.
settings.register_profile("pi-squad", deadline=None)
settings.load_profile("pi-squad")
