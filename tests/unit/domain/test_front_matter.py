"""Front matter: flat ``key: value`` lines between two ``---`` lines, every key known and once."""

from __future__ import annotations

import pytest

from domain.agent_markdown import MarkdownAgentInvalid, agent_document, tool_list
from domain.front_matter import FrontMatterInvalid, split_front_matter

KEYS = {"name", "description", "tools"}


def test_fields_and_body_are_split_at_the_closing_fence() -> None:
    text = '---\nname: recon\n# a comment\n\ndescription: "Reads: things"\n---\nBody\n\nmore\n'
    front = split_front_matter(text, KEYS)
    assert front.fields == {"name": "recon", "description": "Reads: things"}
    assert front.body == "Body\n\nmore"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("name: recon\n", "does not start with a --- front matter line"),
        ("---\nname: recon\n", "the front matter has no closing --- line"),
        ("---\nname recon\n---\n", "front matter line 2 is not 'key: value'"),
        (
            "---\ncolor: red\n---\n",
            "front matter line 2: unknown key (allowed: description, name, tools)",
        ),
        ("---\nname: a\nname: b\n---\n", "front matter line 3: name is given twice"),
        ("", "does not start with a --- front matter line"),
    ],
)
def test_what_cannot_be_read_is_refused_by_line_without_quoting_values(
    text: str, reason: str
) -> None:
    with pytest.raises(FrontMatterInvalid) as refused:
        split_front_matter(text, KEYS)
    assert str(refused.value) == reason


def test_a_markdown_agent_is_the_definition_document_its_front_matter_states() -> None:
    text = (
        "---\nname: controller\ndescription: Routes.\ntools: none\ntier: fast\n"
        "thinking: low\ndisabled: false\n---\n\nYou route.\n"
    )
    assert agent_document(text) == {
        "name": "controller",
        "role": "controller",
        "description": "Routes.",
        "prompt": "You route.",
        "tools": [],
        "tier": "fast",
        "thinking": "low",
        "disabled": False,
    }


def test_omitted_tools_mean_pis_defaults_and_a_list_is_comma_separated() -> None:
    document = agent_document("---\nname: operator\ndescription: Builds.\n---\nBuild.")
    assert "tools" not in document
    assert tool_list(" read, grep ,find ") == ["read", "grep", "find"]
    assert tool_list("NONE") == []


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\ndescription: x\n---\nbody", "the front matter has no name"),
        ("---\nname: x\n---\nbody", "the front matter has no description"),
        ("---\nname: x\ndescription: y\ndisabled: maybe\n---\n", "disabled: must be true or false"),
        (
            "---\nname: x\ncolour: y\n---\n",
            "front matter line 3: unknown key (allowed: "
            "description, disabled, model, name, thinking, tier, tools)",
        ),
    ],
)
def test_a_markdown_agent_without_what_it_needs_is_refused(text: str, reason: str) -> None:
    with pytest.raises(MarkdownAgentInvalid) as refused:
        agent_document(text)
    assert str(refused.value) == reason
