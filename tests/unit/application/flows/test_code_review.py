"""The ``code-review`` harness on the recording Git fake: which calls it recognises, what it
asks Git and in which directory, and what it pins into the call or why it cannot."""

from __future__ import annotations

import json

import pytest

from application.flows.code_review import CodeReviews
from domain.flows.code_review import ChangedFile
from tests.fakes.flows import FakePresetDirectory
from tests.fakes.git_range import RecordingGitRange

BASE, HEAD, FORK = "a" * 40, "b" * 40, "c" * 40
CHANGED = (ChangedFile("M", "app.py"),)


def git() -> RecordingGitRange:
    return RecordingGitRange(
        commits={"main": BASE, "feature": HEAD},
        merge_bases={(BASE, HEAD): FORK},
        diffs={(BASE, HEAD): CHANGED, (FORK, HEAD): CHANGED},
    )


def review_call(task: str, **fields: object) -> dict[str, object]:
    return {"preset": "code-review", "task": task, "why": "w", **fields}


@pytest.mark.parametrize(
    "document",
    [
        {"agent": "recon", "task": "main..feature", "why": "w"},
        {"preset": "scout", "task": "main..feature", "why": "w"},
        review_call("main..feature", agentScope="nowhere"),
        {"preset": "code-review", "why": "w"},
    ],
)
def test_a_call_that_is_not_a_code_review_is_left_alone_and_git_is_not_asked(
    document: dict[str, object],
) -> None:
    fake = git()
    assert CodeReviews(fake, FakePresetDirectory()).prepare(document, "/p") == (document, None)
    assert fake.asked == []


def test_a_preset_shadowing_code_review_without_its_result_is_a_plain_call() -> None:
    body = {"agent": "recon", "task": "{task}"}
    shadow = f"---\nname: code-review\ndescription: d\noverrides: cwd\n---\n{json.dumps(body)}\n"
    fake = git()
    document = review_call("main..feature")
    prepared = CodeReviews(fake, FakePresetDirectory(user=(shadow,))).prepare(document, "/p")
    assert prepared == (document, None)
    assert fake.asked == []


def test_a_three_dot_range_is_pinned_at_the_merge_base_in_the_calls_directory() -> None:
    fake = git()
    document, review = CodeReviews(fake, FakePresetDirectory()).prepare(
        review_call("Review main...feature", cwd="sub"), "/p"
    )
    assert fake.asked == [
        ("commit", "/p/sub", "main"),
        ("commit", "/p/sub", "feature"),
        ("merge-base", "/p/sub", BASE, HEAD),
        ("diff", "/p/sub", FORK, HEAD),
    ]
    assert review is not None
    assert review.pinned is not None
    assert (review.pinned.base, review.pinned.head, review.pinned.manifest) == (FORK, HEAD, CHANGED)
    assert isinstance(document, dict)
    assert document["task"] == "Review main...feature" + review.pinned.brief()


def test_of_several_against_phrases_the_one_git_resolves_is_the_range() -> None:
    fake = git()
    _, review = CodeReviews(fake, FakePresetDirectory()).prepare(
        review_call("Review feature against main; weigh it against docs"), "/p"
    )
    assert review is not None
    assert review.pinned is not None
    assert review.pinned.requested.text() == "feature against main"
    assert (review.pinned.base, review.pinned.head) == (BASE, HEAD)


@pytest.mark.parametrize(
    ("task", "reason"),
    [
        ("Review main..gone", "main..gone does not resolve in the call's working directory"),
        ("Review the parser", "the task names no Git range"),
        (
            "Review feature against main and main against feature",
            "2 of the ranges feature against main, main against feature resolve: name one",
        ),
    ],
)
def test_a_range_that_does_not_pin_leaves_the_call_unchanged_and_says_why(
    task: str, reason: str
) -> None:
    document = review_call(task)
    fake = git()
    fake.diffs[(HEAD, BASE)] = CHANGED
    prepared, review = CodeReviews(fake, FakePresetDirectory()).prepare(document, "/p")
    assert prepared == document
    assert review is not None
    assert review.pinned is None
    assert review.reason is not None
    assert review.reason.startswith(reason)


def test_without_git_a_code_review_cannot_pin_its_range() -> None:
    _, review = CodeReviews(None, FakePresetDirectory()).prepare(review_call("a..b"), "/p")
    assert review is not None
    assert review.reason == "Git cannot be asked here, so the range cannot be pinned"
