"""A delegated worker's own Pi agent directory: the user's credentials and models, Pi's retries
off, and nothing that would make its Pi trust a project or run code (issue 28, break 1: every
child starts with ``--no-approve``, so the retry settings cannot live in the project)."""

from __future__ import annotations

import json
from pathlib import Path

from adapters.delegation.worker_setup import write_worker_settings


def test_the_users_files_are_copied_and_retries_are_laid_over_their_settings(
    tmp_path: Path,
) -> None:
    user = tmp_path / "user-agent"
    (user / "extensions").mkdir(parents=True)
    (user / "auth.json").write_text('{"p": {"type": "api_key", "key": "k"}}')
    (user / "trust.json").write_text(json.dumps({str(tmp_path): True}))
    settings = {"defaultModel": "m", "retry": {"baseDelayMs": 5, "provider": {"timeoutMs": 9}}}
    (user / "settings.json").write_text(json.dumps(settings))
    worker = tmp_path / "worker"
    worker.mkdir()

    private = Path(write_worker_settings(str(worker), str(user)))

    assert private == worker / "agent"
    assert sorted(p.name for p in private.iterdir()) == ["auth.json", "settings.json"]
    assert json.loads((private / "settings.json").read_text()) == {
        "defaultModel": "m",
        "retry": {
            "baseDelayMs": 5,
            "enabled": False,
            "maxRetries": 0,
            "provider": {"timeoutMs": 9, "maxRetries": 0},
        },
        # Automatic compaction is a model request no hook admits (issue 30): off too.
        "compaction": {"enabled": False},
    }
    assert not (worker / ".pi").exists(), "no project settings: they would need trust"


def test_without_a_user_agent_directory_or_with_unreadable_settings_retries_are_still_off(
    tmp_path: Path,
) -> None:
    off = {"enabled": False, "maxRetries": 0, "provider": {"maxRetries": 0}}
    worker = tmp_path / "worker"
    worker.mkdir()
    private = Path(write_worker_settings(str(worker), str(tmp_path / "missing")))
    compaction_off = {"enabled": False}
    assert json.loads((private / "settings.json").read_text()) == {
        "retry": off,
        "compaction": compaction_off,
    }

    user = tmp_path / "user"
    user.mkdir()
    (user / "settings.json").write_text('{"retry": "not an object"')
    other = tmp_path / "other"
    other.mkdir()
    private = Path(write_worker_settings(str(other), str(user)))
    assert json.loads((private / "settings.json").read_text()) == {
        "retry": off,
        "compaction": compaction_off,
    }
