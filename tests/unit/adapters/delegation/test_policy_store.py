"""The grant's files and flags, and the delegation store's own records."""

from __future__ import annotations

import json

import attrs
import pytest

from adapters.delegation.policy import FilePolicy
from adapters.delegation.store import FileDelegationStore
from adapters.delegation.store_codec import decode_state, encode_state
from domain.delegation.errors import DelegationError
from domain.delegation.policy import Grant, GrantFlags
from domain.errors import RecordError
from domain.usage import Usage
from tests.fakes.filesystem import InMemoryFileSystem
from tests.fakes.locks import FakeLockFactory
from tests.unit.domain.delegation.states import admitted_state

ROOT = "/root"
CWD = "/project"


NO_FLAGS = GrantFlags()


def policy(fs: InMemoryFileSystem, flags: GrantFlags = NO_FLAGS) -> Grant:
    return FilePolicy(fs, ROOT, CWD, flags).grant()


def write(fs: InMemoryFileSystem, path: str, document: object) -> None:
    fs.add_file(path, json.dumps(document).encode())


def test_without_files_the_defaults_grant_no_source_root() -> None:
    grant = policy(InMemoryFileSystem())
    assert grant.source_roots == ()
    assert grant == Grant()


def test_the_project_file_only_narrows_and_only_when_trusted() -> None:
    fs = InMemoryFileSystem()
    user = {"version": 1, "sourceRoots": ["/project"], "job": {"maxRequests": 8}}
    project = {
        "version": 1,
        "modes": ["review", "consult"],
        "sourceRoots": ["/project/src", "/etc"],
        "job": {"maxRequests": 99},
    }
    write(fs, f"{ROOT}/delegation/policy.json", user)
    write(fs, f"{CWD}/.pi/squad-delegation.json", project)
    assert policy(fs).modes == Grant().modes  # not trusted: ignored
    write(fs, f"{ROOT}/delegation/policy.json", {**user, "trustProjectPolicy": True})
    narrowed = policy(fs)
    assert narrowed.modes == ("consult", "review")
    assert narrowed.source_roots == ("/project/src",)  # /etc was never the user's to give
    assert narrowed.job.max_requests == 8


def test_flags_are_the_person_granting_at_the_terminal() -> None:
    grant = policy(InMemoryFileSystem(), GrantFlags(source_roots=("/work",), allowance_requests=3))
    assert grant.source_roots == ("/work",)
    assert grant.session.allowance_requests == 3
    assert grant.digest() != Grant().digest()


@pytest.mark.parametrize(
    "document",
    [{"version": 2}, {"version": 1, "extra": 1}, {"version": 1, "job": {"maxRequests": -1}}],
)
def test_an_invalid_policy_is_refused_never_widened(document: object) -> None:
    fs = InMemoryFileSystem()
    write(fs, f"{ROOT}/delegation/policy.json", document)
    with pytest.raises(DelegationError) as refused:
        policy(fs)
    assert refused.value.code == "DELEGATE_POLICY_INVALID"


def test_a_corrupt_state_is_refused_and_names_no_content() -> None:
    fs = InMemoryFileSystem()
    store = FileDelegationStore(fs, FakeLockFactory(), ROOT)
    fs.add_file(f"{ROOT}/delegation/sessions/s/state.json", b'{"session": "secret"')
    with pytest.raises(RecordError) as refused:
        store.snapshot("s")
    assert "secret" not in refused.value.message


def test_the_state_file_keeps_usage_as_receipts_show_it() -> None:
    """``state.json`` keeps each usage under its receipt names, a category never reported as
    ``null`` (not 0) and the reporting messages as ``reportedCalls``."""
    reported = Usage.turn(input_tokens=0, output_tokens=5, cost=0.25, cost_estimated=True)
    state = admitted_state()
    _, _, attempt = state.attempts()[0]
    attempt = attrs.evolve(attempt, usage=reported, request_usage=(reported, Usage()))
    document = json.loads(encode_state(state.with_attempt(attempt)))
    [batch] = document["batches"].values()
    kept = batch["jobs"][0]["attempts"][0]
    assert kept["usage"] == {
        "input": 0,
        "output": 5,
        "cacheRead": None,
        "cacheWrite": None,
        "cost": 0.25,
        "costEstimated": True,
        "reportedCalls": 1,
    }
    never_reported = kept["requestUsage"][1]
    assert (never_reported["input"], never_reported["reportedCalls"]) == (None, 0)
    assert decode_state(encode_state(state.with_attempt(attempt))) == state.with_attempt(attempt)
