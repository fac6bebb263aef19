"""The bundled ``code-review`` preset over real Pi children on the scripted model, on a real
repository: both overwatch children read the pinned range from their prompt and return typed
reviews, one with a finding, so the review settles ``FINDINGS``. Skipped without the runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.pi_runtime import PiRuntime
from adapters.scripted_model import ScriptedModelServer
from adapters.scripted_model.conversation import Conversation
from adapters.scripted_model.replies import PolicyState, Reply
from tests.e2e.flow_runs import WHY, run_flow
from tests.fakes.code_reviewer import finding, review_answer
from tests.integration.test_flow_code_review import commit, git

pytestmark = pytest.mark.realpi


def flags_app_in_standards(axis: str, data: dict[str, object]) -> dict[str, object]:
    return {**data, "findings": [finding("app.py")]} if axis == "standards" else data


def code_reviewer(conversation: Conversation, state: PolicyState) -> Reply:
    return Reply(review_answer(conversation.last_user_text(), flags_app_in_standards))


def test_a_code_review_of_real_pi_children_settles_findings(
    tmp_path: Path, runtime: PiRuntime
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    commit(project, "start", {"app.py": "v1\n"})
    git(project, "checkout", "-q", "-b", "feature")
    head = commit(project, "feature", {"app.py": "v2\n", "new.py": "n\n"})
    base = git(project, "merge-base", "main", "feature")
    call = {
        "preset": "code-review",
        "task": "Review main...feature exactly once\nscripted-policy: code-reviewer",
        "why": WHY,
    }
    server = ScriptedModelServer("echo", policies={"code-reviewer": code_reviewer})
    with server:
        status, document = run_flow(tmp_path, call, model_server=server)
    assert document["presetOutcome"] == "FINDINGS", document["summary"]
    assert status == 0
    assert (document["codeReview"]["range"]["base"], document["codeReview"]["range"]["head"]) == (
        base,
        head,
    )
    assert [r["envelope"]["data"]["axis"] for r in document["results"]] == ["standards", "spec"]
    assert document["codeReview"]["findings"]["total"] == 1
    assert document["summary"].startswith("Flow code-review: FINDINGS, 1 (1 high)")
