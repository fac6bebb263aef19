"""The child environment contract (§6): what the parent writes, the child reads back.

The names are spelled out here on purpose: they are the wire contract with the TypeScript shim
and with every Pi child, so a rename in ``domain.child_environment`` must fail these tests.
"""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
from hypothesis import assume, given
from hypothesis import strategies as st

from domain.child_environment import (
    ALL_CHILD_VARIABLES,
    CHILD_FLAG,
    SPEC_VARIABLES,
    ChildEnvironment,
    FailedClosedChild,
    LegacyChild,
    MainProcess,
    SpecChild,
    SpecVariables,
)
from domain.chunks import CHUNK_BYTES
from domain.paths import PathFlavour
from domain.spec.model import SquadConfig
from domain.squad.model import SpecRef, Squad, SquadStatus

_SQUAD_IDS = st.from_regex(r"\A[a-z0-9](?:[a-z0-9-]{0,20}[a-z0-9])?\Z")
_TASK_IDS = st.from_regex(r"\A[a-z0-9](?:[a-z0-9-]{0,20}[a-z0-9])?\Z")
_SHA256 = st.from_regex(r"\A[a-f0-9]{64}\Z")
_SIZES = st.integers(min_value=1, max_value=10**15)
_DIR_NAMES = st.from_regex(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]{0,11}\Z").filter(
    lambda name: name not in (".", "..") and not name.endswith(".")
)
_OTHER = st.dictionaries(
    st.from_regex(r"\A[A-Z][A-Z_]{0,10}\Z").filter(lambda n: n not in ALL_CHILD_VARIABLES),
    st.text(max_size=8),
    max_size=4,
)


def _spec_path(flavour: PathFlavour, parents: list[str], squad_id: str) -> str:
    if flavour == "windows":
        return "\\".join(["C:", *parents, squad_id, "spec", "spec.v1.json"])
    return "/" + "/".join([*parents, squad_id, "spec", "spec.v1.json"])


@st.composite
def spec_environments(draw: st.DrawFn, flavour: PathFlavour = "posix") -> ChildEnvironment:
    squad_id = draw(_SQUAD_IDS)
    parents = draw(st.lists(_DIR_NAMES, min_size=1, max_size=3))
    return ChildEnvironment(
        SpecVariables(
            squad_id=squad_id,
            task_id=draw(_TASK_IDS),
            spec_path=_spec_path(flavour, parents, squad_id),
            spec_sha256=draw(_SHA256),
            spec_bytes=draw(_SIZES),
            chunk_bytes=CHUNK_BYTES,
        )
    )


def test_the_variable_names_are_the_contract() -> None:
    assert CHILD_FLAG == "PI_SQUAD_CHILD"
    assert SPEC_VARIABLES == (
        "PI_SQUAD_ID",
        "PI_SQUAD_TASK_ID",
        "PI_SQUAD_SPEC_PATH",
        "PI_SQUAD_SPEC_SHA256",
        "PI_SQUAD_SPEC_BYTES",
        "PI_SQUAD_SPEC_CHUNK_BYTES",
    )


def test_a_legacy_child_gets_the_flag_alone_and_reads_back_as_legacy() -> None:
    assert ChildEnvironment().to_environ() == {"PI_SQUAD_CHILD": "1"}
    assert ChildEnvironment.from_environ(ChildEnvironment().to_environ(), "posix") == LegacyChild()


@given(spec_environments(), _OTHER)
def test_a_complete_environment_round_trips_to_a_spec_child(
    environment: ChildEnvironment, other: dict[str, str]
) -> None:
    environ = {**other, **environment.to_environ()}
    assert set(environment.to_environ()) == set(ALL_CHILD_VARIABLES)

    role = ChildEnvironment.from_environ(environ, "posix")

    assert isinstance(role, SpecChild)
    assert role.environment == environment
    assert environment.spec is not None
    assert f"{role.squad_dir}/spec/spec.v1.json" == environment.spec.spec_path


@given(spec_environments("windows"))
def test_a_windows_environment_round_trips_too(environment: ChildEnvironment) -> None:
    role = ChildEnvironment.from_environ(environment.to_environ(), "windows")
    assert isinstance(role, SpecChild)
    assert role.environment == environment


@given(spec_environments(), st.sets(st.sampled_from(ALL_CHILD_VARIABLES), min_size=1))
def test_a_partial_spec_environment_fails_closed(
    environment: ChildEnvironment, removed: set[str]
) -> None:
    environ = {k: v for k, v in environment.to_environ().items() if k not in removed}
    role = ChildEnvironment.from_environ(environ, "posix")
    if not set(SPEC_VARIABLES) - removed:
        # nothing of the spec is left: the flag alone decides
        expected = MainProcess() if CHILD_FLAG in removed else LegacyChild()
        assert role == expected
    else:
        assert isinstance(role, FailedClosedChild)
        assert all(name in role.reason for name in removed)


@given(spec_environments(), st.text(max_size=3).filter(lambda flag: flag != "1"))
def test_spec_variables_without_the_child_flag_fail_closed(
    environment: ChildEnvironment, flag: str
) -> None:
    role = ChildEnvironment.from_environ({**environment.to_environ(), CHILD_FLAG: flag}, "posix")
    assert role == FailedClosedChild("PI_SQUAD_CHILD must be 1 when spec variables are set")


@given(spec_environments(), st.sampled_from(SPEC_VARIABLES), st.text(max_size=70))
def test_an_invalid_value_fails_closed_naming_its_variable(
    environment: ChildEnvironment, name: str, value: str
) -> None:
    environ = {**environment.to_environ(), name: value}
    role = ChildEnvironment.from_environ(environ, "posix")
    if isinstance(role, SpecChild):
        # the value happened to be valid too: it is what the child now reads
        assert role.environment.to_environ()[name] == value
    else:
        assert isinstance(role, FailedClosedChild)
        assert name in role.reason


@given(spec_environments(), st.integers(min_value=1, max_value=10**6))
def test_another_chunk_size_fails_closed(environment: ChildEnvironment, chunk_bytes: int) -> None:
    assume(chunk_bytes != CHUNK_BYTES)
    assert environment.spec is not None
    other = ChildEnvironment(attrs.evolve(environment.spec, chunk_bytes=chunk_bytes))
    role = ChildEnvironment.from_environ(other.to_environ(), "posix")
    assert role == FailedClosedChild(f"PI_SQUAD_SPEC_CHUNK_BYTES is not {CHUNK_BYTES}")


@given(_OTHER)
def test_no_child_variable_is_the_main_process(other: dict[str, str]) -> None:
    assert ChildEnvironment.from_environ(other, "posix") == MainProcess()


def test_for_task_takes_every_value_from_the_persisted_squad() -> None:
    spec = SpecRef(sha256="a" * 64, bytes=10, path="/r/sq-1/spec/spec.v1.json", chunk_count=1)
    squad = _squad(spec)
    assert ChildEnvironment.for_task(squad, "build").to_environ() == {
        "PI_SQUAD_CHILD": "1",
        "PI_SQUAD_ID": squad.id,
        "PI_SQUAD_TASK_ID": "build",
        "PI_SQUAD_SPEC_PATH": "/r/sq-1/spec/spec.v1.json",
        "PI_SQUAD_SPEC_SHA256": "a" * 64,
        "PI_SQUAD_SPEC_BYTES": "10",
        "PI_SQUAD_SPEC_CHUNK_BYTES": str(CHUNK_BYTES),
    }
    assert ChildEnvironment.for_task(_squad(None), "build") == ChildEnvironment()


def _squad(spec: SpecRef | None) -> Squad:
    return Squad(
        id="sq-1",
        goal="g",
        status=SquadStatus.RUNNING,
        created=datetime(2026, 1, 1, tzinfo=UTC),
        cwd="/work",
        config=SquadConfig(max_concurrency=1, auto_unblock=True, max_retries=0),
        spec=spec,
    )
