"""Benchmarks of the attestation contract (issue 8), each figure beside its floor.

One command per measure, each writing ``bench/results/<name>.json`` (or ``--results-dir`` /
``PI_SQUAD_BENCH_RESULTS``); ``--quick`` runs tiny sizes for the CI smoke test:

- ``uv run python -m bench.create_limits``: (1) create at the limits, time and peak RSS growth;
- ``uv run python -m bench.full_read``: (2) a 33-chunk full read through the real bridge;
- ``uv run python -m bench.guard``: (3) guard overhead per tool call (real Pi and the bridge);
- ``uv run python -m bench.attestation``: (4) attestation validation, with and without re-hash;
- ``uv run python -m bench.child_start``: (5) ``pi --mode rpc`` start to ready;
- ``uv run python -m bench.scheduler``: (6) scheduler overhead on a 128-task DAG;
- ``uv run python -m bench.scaling``: (7) growth order of create and full read;
- ``uv run python -m bench.profiles``: cProfile of the paths whose targets are missed;
- ``uv run python -m bench.report``: renders ``docs/benchmarks.md`` from the results.

``make bench`` runs them all at full size and regenerates ``docs/benchmarks.md``. Timings are
reported, never asserted.
"""
