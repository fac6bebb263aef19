"""pi-flows' agent files: Markdown with front matter, read as the agent definition document
every other agent file is (``agent-definition.schema.json``), so one validation path judges
both kinds.

Front matter keys (docs/flows.md, "Agent files"): ``name`` and ``description`` (required),
``tools`` (comma-separated; ``none`` for no tools; omitted for Pi's defaults), ``tier``,
``thinking``, ``model``, ``disabled`` (``true``/``false``). The body is the agent's prompt.
"""

from __future__ import annotations

from typing import Any

from domain.front_matter import FrontMatterInvalid, split_front_matter

MARKDOWN_AGENT_KEYS = frozenset(
    {"name", "description", "tools", "tier", "thinking", "model", "disabled"}
)
REQUIRED_KEYS = ("name", "description")
NO_TOOLS = "none"
BOOLEANS = {"true": True, "false": False}


class MarkdownAgentInvalid(ValueError):
    """Why a Markdown agent file is not a definition. Never quotes the file's values."""


def tool_list(value: str) -> list[str]:
    """``read,grep`` → ``["read", "grep"]``; ``none`` → ``[]``; blank items are kept for the
    schema's own check to name."""
    if value.strip().lower() == NO_TOOLS:
        return []
    return [item.strip() for item in value.split(",")]


def agent_document(text: str) -> dict[str, Any]:
    """The agent definition document ``text`` states; :class:`MarkdownAgentInvalid` when its
    front matter cannot be read or lacks a required key."""
    try:
        front = split_front_matter(text, MARKDOWN_AGENT_KEYS)
    except FrontMatterInvalid as invalid:
        raise MarkdownAgentInvalid(str(invalid)) from None
    fields = front.fields
    missing = [key for key in REQUIRED_KEYS if key not in fields]
    if missing:
        raise MarkdownAgentInvalid(f"the front matter has no {' or '.join(missing)}")
    document: dict[str, Any] = {
        "name": fields["name"],
        # pi-flows agents have no role line of their own: the name is the role.
        "role": fields["name"],
        "description": fields["description"],
        "prompt": front.body.strip(),
    }
    if "tools" in fields:
        document["tools"] = tool_list(fields["tools"])
    for key in ("tier", "thinking", "model"):
        if key in fields:
            document[key] = fields[key]
    if "disabled" in fields:
        flag = BOOLEANS.get(fields["disabled"].lower())
        if flag is None:
            raise MarkdownAgentInvalid("disabled: must be true or false")
        document["disabled"] = flag
    return document
