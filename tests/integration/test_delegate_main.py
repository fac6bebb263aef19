"""The main bridge offers ``delegate`` only when the human made a grant (a policy file), and
then over a host whose workers are real Pi children (entrypoints/delegate_main.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from entrypoints.main_bridge_container import build_main_bridge_role


def _tools(root: Path) -> list[str]:
    environ = {**os.environ, "PI_SQUAD_ROOT": str(root)}
    environ.pop("PI_SQUAD_CHILD", None)
    role = build_main_bridge_role(environ)
    return [tool.name for tool in role.events.registrations().tools]


def test_delegate_is_offered_only_with_a_policy_file(tmp_path: Path) -> None:
    assert "delegate" not in _tools(tmp_path / "root")
    policy = tmp_path / "root" / "delegation" / "policy.json"
    policy.parent.mkdir(parents=True)
    policy.write_text(json.dumps({"version": 1}))
    assert "delegate" in _tools(tmp_path / "root")
