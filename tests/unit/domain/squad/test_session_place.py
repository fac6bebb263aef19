"""``SquadLayout.session_file_problem``: a task's session is a file directly in its own session
directory, spelled exactly as that directory joined with one plain name (issue 28). The path
comes from the child's stream, so anything that only normalises there is refused: ``..``
through a link the child made lands elsewhere on disk."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.squad.layout import SquadLayout

POSIX = SquadLayout("/root", "squad", "posix")
WINDOWS = SquadLayout("C:\\root", "squad", "windows")
OWN = "/root/squad/build/session"


def test_a_file_directly_in_the_own_session_directory_is_the_task_session() -> None:
    assert POSIX.session_file_problem("build", f"{OWN}/2026-12-07_abc.jsonl") is None
    own = WINDOWS.session_dir("build")
    assert WINDOWS.session_file_problem("build", f"{own}\\2026-12-07_abc.jsonl") is None


@pytest.mark.parametrize(
    "reported",
    [
        "/root/squad/docs/session/x.jsonl",  # a sibling's
        "/tmp/x.jsonl",  # outside the squad
        "/root/squad/build/spec-read-attestation.json",  # the ledger itself
        OWN,  # the directory
        f"{OWN}/",
        f"{OWN}/.",
        f"{OWN}/..",
        f"{OWN}/../../docs/session/x.jsonl",
        f"{OWN}/sub/../x.jsonl",  # normalises back in: refused all the same
        f"{OWN}//x.jsonl",
        f"{OWN}/./x.jsonl",
        f"{OWN}/sub/x.jsonl",  # deeper
        "relative/x.jsonl",
        "",
    ],
)
def test_anything_else_is_refused_naming_the_own_directory(reported: str) -> None:
    problem = POSIX.session_file_problem("build", reported)
    assert problem is not None
    assert problem.endswith(f"is not a file directly in the task's own session directory {OWN}")


def test_a_long_reported_path_is_shown_cut() -> None:
    problem = POSIX.session_file_problem("build", "/x" * 1000)
    assert problem is not None
    assert len(problem) < 400
    assert "..." in problem


NAMES = st.text(
    alphabet=st.characters(blacklist_characters="/\x00", blacklist_categories=["Cs"]),
    min_size=1,
    max_size=40,
).filter(lambda name: name not in {".", ".."})


@given(NAMES)
def test_every_plain_name_in_the_own_directory_is_accepted(name: str) -> None:
    assert POSIX.session_file_problem("build", f"{OWN}/{name}") is None


@given(NAMES, st.sampled_from(["docs", "build/sub", "../build"]))
def test_no_name_elsewhere_is_accepted(name: str, where: str) -> None:
    reported = f"/root/squad/{where}/session/{name}"
    assert POSIX.session_file_problem("build", reported) is not None
