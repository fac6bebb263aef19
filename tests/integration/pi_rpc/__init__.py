"""``adapters.pi_rpc`` against a stand-in ``pi`` executable (tests/fakes/fake_pi_executable.py).

Real processes, pipes and signals; only Pi is faked. The fake's behaviour is chosen with
``FAKE_PI_MODE`` and it records its argv, cwd, environment and system prompt file.
"""
