"""Loading agent definitions from real directories: the bundled defaults, overrides by name,
reading without writing, where the squad root is, and any JSON object either a definition or a
reported rejection."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.catalogue.agent_files import (
    AGENT_KEYS,
    BUNDLED_AGENTS_DIR,
    AgentFileRejected,
    load_agent_catalog,
    load_agent_directory,
    parse_agent_definition,
)
from domain.agents import (
    AgentDefinition,
    AgentSource,
    AgentUnavailable,
    LoadedAgent,
    UnavailableReason,
)
from entrypoints.concerns.setting_reads import squad_root
from tests.integration.agent_files.support import (
    BUNDLED_NAMES,
    VERDICT_LINES,
    agent_json,
    catalog_for,
    problem_for,
    snapshot,
    write_agent,
)


class TestBundledDefaults:
    def test_all_twelve_load_without_problems(self) -> None:
        loaded = load_agent_directory(BUNDLED_AGENTS_DIR, AgentSource.BUNDLED)
        assert loaded.problems == ()
        assert [agent.name for agent in loaded.agents] == BUNDLED_NAMES

    @pytest.mark.parametrize("name", BUNDLED_NAMES)
    def test_each_is_complete_and_leaves_model_choice_open(self, name: str) -> None:
        path = Path(BUNDLED_AGENTS_DIR) / f"{name}.json"
        document = json.loads(path.read_bytes())
        # ``tier`` is for flows (pi-flows' agents carry it); squads' own leave it out.
        assert set(document) == set(AGENT_KEYS) - {"disabled", "tier"}
        definition = parse_agent_definition(path.read_bytes())
        assert definition.name == name
        assert (definition.model, definition.thinking, definition.tools) == (None, None, None)
        assert definition.role
        assert definition.tags
        assert "\n" not in definition.description
        assert 6 <= len(definition.prompt.splitlines()) <= 15
        assert not definition.disabled

    @pytest.mark.parametrize("name", ["qa", "reviewer"])
    def test_verifiers_are_told_to_end_with_a_verdict_and_issues(self, name: str) -> None:
        prompt = parse_agent_definition((Path(BUNDLED_AGENTS_DIR) / f"{name}.json").read_bytes())
        for line in VERDICT_LINES:
            assert f"`{line}`" in prompt.prompt
        assert "`## Issues`" in prompt.prompt

    def test_with_no_user_or_project_dirs_the_catalog_is_the_bundled_set(
        self, tmp_path: Path
    ) -> None:
        catalog = catalog_for(tmp_path)
        assert catalog.enabled_names() == BUNDLED_NAMES
        assert catalog.problems == ()
        assert all(entry.source is AgentSource.BUNDLED for entry in catalog.entries)


class TestOverrides:
    def test_user_overrides_bundled_and_project_overrides_user(
        self, tmp_path: Path, user_dir: Path, project_dir: Path
    ) -> None:
        write_agent(user_dir, "qa.json", agent_json("qa", role="user qa", model="m1"))
        write_agent(user_dir, "docs.json", agent_json("docs", role="user docs"))
        write_agent(project_dir, "qa.json", agent_json("qa", role="project qa"))
        catalog = catalog_for(tmp_path)
        assert catalog.resolve("qa").role == "project qa"
        assert catalog.resolve("qa").model is None
        assert catalog.resolve("docs").role == "user docs"
        assert catalog.resolve("architect").role == "Software Architect"

    def test_override_is_by_name_field_not_file_name(
        self, tmp_path: Path, project_dir: Path
    ) -> None:
        path = write_agent(project_dir, "my-tester.json", agent_json("qa", role="renamed"))
        catalog = catalog_for(tmp_path)
        found = catalog.get("qa")
        assert isinstance(found, LoadedAgent)
        assert (found.definition.role, found.origin) == ("renamed", str(path))
        assert "my-tester" not in catalog.enabled_names()

    def test_project_disables_a_bundled_agent(self, tmp_path: Path, project_dir: Path) -> None:
        path = write_agent(project_dir, "security.json", agent_json("security", disabled=True))
        catalog = catalog_for(tmp_path)
        assert "security" not in catalog.enabled_names()
        with pytest.raises(AgentUnavailable) as caught:
            catalog.resolve("security")
        assert caught.value.reason is UnavailableReason.DISABLED
        assert caught.value.unavailable.origin == str(path)

    def test_new_user_agent_is_offered(self, tmp_path: Path, user_dir: Path) -> None:
        write_agent(
            user_dir,
            "dba.json",
            agent_json("dba", tools=["read", "bash"], tags=["db"], thinking="high"),
        )
        catalog = catalog_for(tmp_path)
        assert "dba" in catalog.enabled_names()
        assert catalog.resolve("dba").tools == ("read", "bash")
        assert catalog.resolve("dba").thinking == "high"

    def test_an_agent_file_edited_between_two_loads_is_seen(
        self, tmp_path: Path, user_dir: Path
    ) -> None:
        """Parses are kept per file content (the catalog is loaded on every spawn): an edited
        file is parsed afresh, and a broken edit is still rejected."""
        path = write_agent(user_dir, "dba.json", agent_json("dba", thinking="high"))
        assert catalog_for(tmp_path).resolve("dba").thinking == "high"
        write_agent(user_dir, "dba.json", agent_json("dba", thinking="low"))
        assert catalog_for(tmp_path).resolve("dba").thinking == "low"
        path.write_bytes(b"{")
        catalog = catalog_for(tmp_path)
        assert "dba" not in catalog.enabled_names()
        assert problem_for(catalog.problems, path)

    def test_symlinked_agent_file_is_followed(self, tmp_path: Path, user_dir: Path) -> None:
        target = write_agent(tmp_path / "elsewhere", "real.json", agent_json("linked"))
        user_dir.mkdir(parents=True)
        (user_dir / "linked.json").symlink_to(target)
        assert catalog_for(tmp_path).resolve("linked").name == "linked"

    def test_files_not_ending_in_json_are_ignored(self, tmp_path: Path, user_dir: Path) -> None:
        write_agent(user_dir, "README.md", b"not an agent")
        write_agent(user_dir, "qa.json.bak", b"{")
        write_agent(user_dir, "notes.JSON", b"{")
        (user_dir / "sub").mkdir()
        catalog = catalog_for(tmp_path)
        assert catalog.problems == ()
        assert catalog.enabled_names() == BUNDLED_NAMES


class TestReadOnly:
    def test_loading_writes_nothing(
        self, tmp_path: Path, user_dir: Path, project_dir: Path
    ) -> None:
        write_agent(user_dir, "qa.json", agent_json("qa"))
        write_agent(user_dir, "bad.json", b"{")
        write_agent(project_dir, "docs.json", agent_json("docs", disabled=True))
        roots = (tmp_path, Path(BUNDLED_AGENTS_DIR))
        before = snapshot(*roots)
        catalog_for(tmp_path)
        assert snapshot(*roots) == before

    def test_missing_directories_are_not_created(self, tmp_path: Path) -> None:
        home = tmp_path / "home"
        home.mkdir()
        root = squad_root({"HOME": str(home)})
        load_agent_catalog(squad_root=root, cwd=str(tmp_path / "repo"))
        assert list(home.iterdir()) == []
        assert not (tmp_path / "repo").exists()


class TestSquadRoot:
    def test_environment_variable_wins_when_set(self, tmp_path: Path) -> None:
        assert squad_root({"PI_SQUAD_ROOT": str(tmp_path), "HOME": "/home/u"}) == str(tmp_path)

    @pytest.mark.parametrize("environ", [{}, {"PI_SQUAD_ROOT": ""}, {"OTHER": "/x"}])
    def test_default_is_dot_pi_squad_under_home(self, environ: dict[str, str]) -> None:
        home = {"HOME": "/home/u"}
        assert squad_root({**environ, **home}) == os.path.join("/home/u", ".pi", "squad")

    def test_user_agents_come_from_the_root_in_the_environment(self, tmp_path: Path) -> None:
        root = tmp_path / "custom-root"
        write_agent(root / "agents", "mine.json", agent_json("mine"))
        resolved = squad_root({"PI_SQUAD_ROOT": str(root), "HOME": str(tmp_path / "home")})
        catalog = load_agent_catalog(squad_root=resolved, cwd=str(tmp_path / "repo"))
        found = catalog.get("mine")
        assert isinstance(found, LoadedAgent)
        assert found.origin == str(root / "agents" / "mine.json")


_json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([*AGENT_KEYS, "extra"]) | st.text(max_size=5), _json_values, max_size=10
    )
)
def test_any_json_object_is_either_a_definition_or_a_reported_rejection(
    document: dict[str, Any],
) -> None:
    outcome = parse_outcome(json.dumps(document).encode())
    if isinstance(outcome, AgentFileRejected):
        # One line each, whatever the file held: the CLI prints reasons as warnings.
        assert outcome.reason
        assert "\n" not in outcome.reason
    else:
        assert outcome.name == document["name"]


def parse_outcome(data: bytes) -> AgentDefinition | AgentFileRejected:
    try:
        return parse_agent_definition(data)
    except AgentFileRejected as rejected:
        return rejected
