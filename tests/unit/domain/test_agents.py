"""The agent catalog: validation of one definition, and precedence by the ``name`` field."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from domain.agents import (
    AgentCatalog,
    AgentDefinition,
    AgentFileProblem,
    AgentSource,
    AgentUnavailable,
    InvalidAgentField,
    LoadedAgent,
    UnavailableAgent,
    UnavailableReason,
)


def definition(name: str, **changes: Any) -> AgentDefinition:
    base = AgentDefinition(name=name, role=f"{name} role", description="d", prompt="p")
    return attrs.evolve(base, **changes)


def bundled(name: str, **changes: Any) -> LoadedAgent:
    return LoadedAgent(definition(name, **changes), AgentSource.BUNDLED, f"/bundled/{name}.json")


def user(name: str, file_stem: str | None = None, **changes: Any) -> LoadedAgent:
    origin = f"/home/u/.pi/squad/agents/{file_stem or name}.json"
    return LoadedAgent(definition(name, **changes), AgentSource.USER, origin)


def project(name: str, file_stem: str | None = None, **changes: Any) -> LoadedAgent:
    origin = f"/repo/.pi/squad/agents/{file_stem or name}.json"
    return LoadedAgent(definition(name, **changes), AgentSource.PROJECT, origin)


class TestAgentDefinition:
    def test_defaults_mean_no_preference_all_tools_enabled(self) -> None:
        agent = AgentDefinition(name="qa", role="QA", description="d", prompt="p")
        assert (agent.model, agent.thinking, agent.tools, agent.tags, agent.disabled) == (
            None,
            None,
            None,
            (),
            False,
        )

    @pytest.mark.parametrize("name", ["a", "A9", "qa", "back-end_2.v1", "9lives", "x" * 64])
    def test_accepts_names_matching_the_pattern(self, name: str) -> None:
        assert definition(name).name == name

    @pytest.mark.parametrize(
        "name", ["", "-qa", ".qa", "_qa", "q a", "qa/x", "qa\n", "x" * 65, "é"]
    )
    def test_rejects_names_outside_the_pattern(self, name: str) -> None:
        with pytest.raises(InvalidAgentField) as caught:
            definition(name)
        assert caught.value.field == "name"

    @pytest.mark.parametrize(
        "level", ["off", "minimal", "low", "medium", "high", "xhigh", "max", None]
    )
    def test_accepts_each_thinking_level(self, level: str | None) -> None:
        assert definition("qa", thinking=level).thinking == level

    @pytest.mark.parametrize("level", ["ultra", "HIGH", "", "main"])
    def test_rejects_other_thinking_values(self, level: str) -> None:
        with pytest.raises(InvalidAgentField) as caught:
            definition("qa", thinking=level)
        assert caught.value.field == "thinking"

    def test_rejects_a_blank_model(self) -> None:
        with pytest.raises(InvalidAgentField) as caught:
            definition("qa", model="  ")
        assert caught.value.field == "model"

    def test_rejects_blank_tool_names_with_their_index(self) -> None:
        with pytest.raises(InvalidAgentField) as caught:
            definition("qa", tools=("read", ""))
        assert caught.value.field == "tools[1]"

    def test_empty_tools_is_distinct_from_all_tools(self) -> None:
        assert definition("qa", tools=()).tools == ()
        assert definition("qa").tools is None

    def test_rejects_a_list_where_a_tuple_is_required(self) -> None:
        with pytest.raises(TypeError):
            definition("qa", tags=["a"])


class TestMergePrecedence:
    def test_bundled_alone_is_the_catalog(self) -> None:
        catalog = AgentCatalog.merge([bundled("qa"), bundled("architect")], [], [])
        assert catalog.enabled_names() == ["architect", "qa"]
        assert catalog.resolve("qa").role == "qa role"

    def test_user_overrides_bundled(self) -> None:
        catalog = AgentCatalog.merge([bundled("qa")], [user("qa", role="mine")], [])
        assert catalog.resolve("qa").role == "mine"
        found = catalog.get("qa")
        assert isinstance(found, LoadedAgent)
        assert found.source is AgentSource.USER
        assert [loser.source for loser in catalog.shadowed] == [AgentSource.BUNDLED]

    def test_project_overrides_user_and_bundled(self) -> None:
        catalog = AgentCatalog.merge(
            [bundled("qa")], [user("qa", role="user")], [project("qa", role="project")]
        )
        assert catalog.resolve("qa").role == "project"
        assert {loser.source for loser in catalog.shadowed} == {
            AgentSource.BUNDLED,
            AgentSource.USER,
        }

    def test_precedence_is_by_name_field_not_file_name(self) -> None:
        # File "strict-qa.json" defines name "qa": it overrides "qa", and no agent is called
        # "strict-qa".
        catalog = AgentCatalog.merge(
            [bundled("qa")], [], [project("qa", file_stem="strict-qa", role="strict")]
        )
        assert catalog.resolve("qa").role == "strict"
        assert catalog.enabled_names() == ["qa"]
        assert isinstance(catalog.get("strict-qa"), UnavailableAgent)

    def test_a_file_named_after_an_agent_but_naming_another_does_not_override_it(self) -> None:
        catalog = AgentCatalog.merge([bundled("qa")], [user("tester", file_stem="qa")], [])
        assert catalog.resolve("qa").role == "qa role"
        assert catalog.enabled_names() == ["qa", "tester"]

    def test_new_agents_from_every_layer_are_added(self) -> None:
        catalog = AgentCatalog.merge([bundled("qa")], [user("mine")], [project("ours")])
        assert catalog.enabled_names() == ["mine", "ours", "qa"]

    def test_enabled_names_are_sorted_whatever_the_input_order(self) -> None:
        catalog = AgentCatalog.merge([bundled("z"), bundled("a"), bundled("m")], [], [])
        assert catalog.enabled_names() == ["a", "m", "z"]
        assert [entry.name for entry in catalog.entries] == ["a", "m", "z"]

    def test_a_definition_in_the_wrong_layer_is_refused(self) -> None:
        with pytest.raises(ValueError, match="passed as a user one"):
            AgentCatalog.merge([], [project("qa")], [])

    def test_duplicate_names_within_a_layer_keep_the_first_and_report_the_rest(self) -> None:
        first = user("qa", file_stem="a", role="first")
        second = user("qa", file_stem="b", role="second")
        catalog = AgentCatalog.merge([], [first, second], [])
        assert catalog.resolve("qa").role == "first"
        (problem,) = catalog.problems
        assert problem.origin == second.origin
        assert first.origin in problem.reason
        assert problem.source is AgentSource.USER

    def test_loader_problems_are_kept_before_merge_problems(self) -> None:
        earlier = AgentFileProblem(origin="/x.json", reason="not valid JSON")
        catalog = AgentCatalog.merge(
            [], [user("qa", file_stem="a"), user("qa", file_stem="b")], [], problems=[earlier]
        )
        assert catalog.problems[0] == earlier
        assert len(catalog.problems) == 2

    def test_merging_is_deterministic(self) -> None:
        layers = ([bundled("qa"), bundled("docs")], [user("qa")], [project("docs")])
        assert AgentCatalog.merge(*layers) == AgentCatalog.merge(*layers)


class TestDisabled:
    def test_disabled_bundled_agent_is_hidden(self) -> None:
        catalog = AgentCatalog.merge([bundled("qa", disabled=True), bundled("docs")], [], [])
        assert catalog.enabled_names() == ["docs"]
        found = catalog.get("qa")
        assert found == UnavailableAgent(
            name="qa",
            reason=UnavailableReason.DISABLED,
            source=AgentSource.BUNDLED,
            origin="/bundled/qa.json",
        )

    def test_project_disabling_a_bundled_agent_hides_it(self) -> None:
        catalog = AgentCatalog.merge([bundled("qa")], [], [project("qa", disabled=True)])
        assert "qa" not in catalog.enabled_names()
        with pytest.raises(AgentUnavailable) as caught:
            catalog.resolve("qa")
        assert caught.value.reason is UnavailableReason.DISABLED
        assert caught.value.unavailable.source is AgentSource.PROJECT
        assert caught.value.unavailable.origin == "/repo/.pi/squad/agents/qa.json"
        assert "disabled" in str(caught.value)
        assert "/repo/.pi/squad/agents/qa.json" in str(caught.value)

    def test_disabling_does_not_fall_back_to_a_lower_layer(self) -> None:
        catalog = AgentCatalog.merge([bundled("qa")], [user("qa", disabled=True)], [])
        found = catalog.get("qa")
        assert isinstance(found, UnavailableAgent)
        assert found.reason is UnavailableReason.DISABLED

    def test_project_can_re_enable_what_the_user_disabled(self) -> None:
        catalog = AgentCatalog.merge(
            [bundled("qa")], [user("qa", disabled=True)], [project("qa", role="back")]
        )
        assert catalog.resolve("qa").role == "back"
        assert catalog.enabled_names() == ["qa"]

    def test_enabled_lists_loaded_agents_without_disabled_ones(self) -> None:
        catalog = AgentCatalog.merge([bundled("a"), bundled("b", disabled=True)], [], [])
        assert [entry.name for entry in catalog.enabled()] == ["a"]
        assert [entry.name for entry in catalog.entries] == ["a", "b"]


class TestResolve:
    def test_missing_agent_raises_with_reason_missing(self) -> None:
        catalog = AgentCatalog.merge([bundled("qa")], [], [])
        with pytest.raises(AgentUnavailable) as caught:
            catalog.resolve("ghost")
        assert caught.value.name == "ghost"
        assert caught.value.reason is UnavailableReason.MISSING
        assert caught.value.unavailable.source is None
        assert "missing" in str(caught.value)

    def test_unavailable_is_a_lookup_error(self) -> None:
        with pytest.raises(LookupError):
            AgentCatalog().resolve("qa")

    def test_a_name_that_is_not_shown_verbatim_in_the_message(self) -> None:
        with pytest.raises(AgentUnavailable) as caught:
            AgentCatalog().resolve("bad\nname")
        assert "\n" not in str(caught.value)
        assert "(a name not shown)" in str(caught.value)

    def test_a_valid_name_is_quoted_in_the_message(self) -> None:
        with pytest.raises(AgentUnavailable, match="agent 'ghost' is missing"):
            AgentCatalog().resolve("ghost")

    def test_resolve_returns_the_definition(self) -> None:
        qa = bundled("qa", tools=("read", "bash"), tags=("qa",))
        assert AgentCatalog.merge([qa], [], []).resolve("qa") == qa.definition

    def test_a_catalog_cannot_hold_two_entries_with_one_name(self) -> None:
        with pytest.raises(ValueError, match="one definition per agent name"):
            AgentCatalog(entries=(bundled("qa"), user("qa")))
