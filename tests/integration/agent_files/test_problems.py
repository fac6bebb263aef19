"""Agent files that cannot be loaded are reported as problems, never quoted, never blocking:
undecodable and invalid files, huge files, FIFOs, directories, dangling links, and names given
twice."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from adapters.catalogue.agent_files import MAX_AGENT_FILE_BYTES
from domain.agents import AgentCatalog, AgentSource, LoadedAgent
from tests.integration.agent_files.support import (
    BUNDLED_NAMES,
    agent_json,
    catalog_for,
    problem_for,
    write_agent,
)


class TestProblems:
    """Each bad file is reported with a precise reason and never stops the others."""

    @pytest.mark.parametrize(
        ("content", "reason"),
        [
            (b'{"name": "x",', "not valid JSON: Expecting property name enclosed in double quotes"),
            (b"[]", "not valid JSON: top level is a JSON array, not an object"),
            (b"\xef\xbb\xbf{}", "not valid JSON: starts with a UTF-8 byte-order mark"),
            (b'{"name": "x", "name": "y"}', "not valid JSON: duplicate object key 'name'"),
            (b'{"zz": 1, "zz": 2}', "not valid JSON: duplicate object key (a key not shown)"),
            (b'{"a": NaN}', "not valid JSON: non-finite number NaN is not JSON"),
            (b"\xff", "not valid JSON: invalid UTF-8 at byte offset 0"),
        ],
    )
    def test_undecodable_files(
        self, tmp_path: Path, user_dir: Path, content: bytes, reason: str
    ) -> None:
        bad = write_agent(user_dir, "bad.json", content)
        write_agent(user_dir, "good.json", agent_json("good"))
        catalog = catalog_for(tmp_path)
        problem = problem_for(catalog.problems, bad)
        assert problem.reason.startswith(reason)
        assert problem.source is AgentSource.USER
        assert "good" in catalog.enabled_names()

    @pytest.mark.parametrize(
        ("document", "reason"),
        [
            (
                agent_json("x", colour="red"),
                "not a valid agent definition: $: unknown key (a key not shown); the allowed keys "
                "are name, role, description, prompt, model, thinking, tools, tier, tags, disabled",
            ),
            (
                agent_json("x", enabled=True),
                "not a valid agent definition: $: unknown key 'enabled'; the allowed keys are "
                "name, role, description, prompt, model, thinking, tools, tier, tags, disabled "
                "(agents have no 'enabled' key: write \"disabled\": true to hide one)",
            ),
            (
                agent_json("x", role=5),
                "not a valid agent definition: $.role: expected a string, found number",
            ),
            (
                agent_json("x", disabled="true"),
                "not a valid agent definition: $.disabled: expected a boolean, found string",
            ),
            (
                agent_json("x", tools="read"),
                "not a valid agent definition: $.tools: expected an array of strings or null, "
                "found string",
            ),
            (
                agent_json("x", tags=["ok", 3]),
                "not a valid agent definition: $.tags[1]: expected a string, found number",
            ),
            (
                agent_json("x", model=["a"]),
                "not a valid agent definition: $.model: expected a string or null, found array",
            ),
            (
                {"name": "x", "role": "r", "prompt": "p"},
                "not a valid agent definition: $.description: required key is missing",
            ),
            (
                agent_json("x", thinking="ultra"),
                "not a valid agent definition: $.thinking: must be null or one of off, minimal, "
                "low, medium, high, xhigh, max",
            ),
            (
                agent_json("no spaces"),
                "not a valid agent definition: $.name: must be 1 to 64 characters from "
                "A-Z a-z 0-9 . _ - starting with a letter or digit (found a string of 9 "
                "characters)",
            ),
            (
                agent_json("x", role=None, tags={}),
                "not a valid agent definition: $.role: expected a string, found null; "
                "$.tags: expected an array of strings, found object",
            ),
        ],
    )
    def test_invalid_definitions(
        self, tmp_path: Path, user_dir: Path, document: dict[str, Any], reason: str
    ) -> None:
        bad = write_agent(user_dir, "bad.json", document)
        write_agent(user_dir, "good.json", agent_json("good"))
        catalog = catalog_for(tmp_path)
        assert problem_for(catalog.problems, bad).reason == reason
        assert "good" in catalog.enabled_names()

    def test_reasons_never_quote_file_content(self, tmp_path: Path, user_dir: Path) -> None:
        document = agent_json("x", thinking="token-123", **{"secret-456": 1, "other-789": 2})
        bad = write_agent(user_dir, "bad.json", document)
        reason = problem_for(catalog_for(tmp_path).problems, bad).reason
        assert reason.startswith("not a valid agent definition: $: unknown keys (a key not shown)")
        for content in ("token-123", "secret-456", "other-789"):
            assert content not in reason

    def test_an_invalid_override_leaves_the_bundled_agent_in_place(
        self, tmp_path: Path, project_dir: Path
    ) -> None:
        bad = write_agent(project_dir, "qa.json", agent_json("qa", tools="all"))
        catalog = catalog_for(tmp_path)
        assert problem_for(catalog.problems, bad).source is AgentSource.PROJECT
        found = catalog.get("qa")
        assert isinstance(found, LoadedAgent)
        assert found.source is AgentSource.BUNDLED

    def test_huge_file_is_refused_without_being_read(self, tmp_path: Path, user_dir: Path) -> None:
        # Sparse, so it costs no disk; reading 8 GiB into memory would be the failure.
        huge = write_agent(user_dir, "huge.json", b"")
        os.truncate(huge, 8 * 1024**3)
        write_agent(user_dir, "good.json", agent_json("good"))
        catalog = catalog_for(tmp_path)
        assert problem_for(catalog.problems, huge).reason == (
            f"{8 * 1024**3} bytes is larger than the {MAX_AGENT_FILE_BYTES}-byte limit for an "
            "agent file; it was not read"
        )
        assert "good" in catalog.enabled_names()

    def test_a_file_of_exactly_the_limit_is_read(self, tmp_path: Path, user_dir: Path) -> None:
        document = json.dumps(agent_json("big")).encode()
        padded = document[:-1] + b" " * (MAX_AGENT_FILE_BYTES - len(document)) + b"}"
        write_agent(user_dir, "big.json", padded)
        assert catalog_for(tmp_path).resolve("big").name == "big"

    @pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
    @pytest.mark.parametrize("through_symlink", [False, True])
    def test_fifo_is_refused_without_blocking(
        self, tmp_path: Path, user_dir: Path, through_symlink: bool
    ) -> None:
        user_dir.mkdir(parents=True)
        fifo = user_dir / "fifo.json"
        if through_symlink:
            real_fifo = tmp_path / "real-fifo"
            os.mkfifo(real_fifo)
            fifo.symlink_to(real_fifo)
        else:
            os.mkfifo(fifo)
        write_agent(user_dir, "good.json", agent_json("good"))
        results: list[AgentCatalog] = []
        # A blocking open would hang the test run; a daemon thread lets the assert report it.
        worker = threading.Thread(target=lambda: results.append(catalog_for(tmp_path)), daemon=True)
        worker.start()
        worker.join(timeout=10)
        assert not worker.is_alive(), "loading blocked on a FIFO"
        (catalog,) = results
        assert problem_for(catalog.problems, fifo).reason == "not a regular file: it is a FIFO"
        assert "good" in catalog.enabled_names()

    def test_directory_named_like_an_agent_file(self, tmp_path: Path, user_dir: Path) -> None:
        (user_dir / "qa.json").mkdir(parents=True)
        catalog = catalog_for(tmp_path)
        assert problem_for(catalog.problems, user_dir / "qa.json").reason == (
            "not a regular file: it is a directory"
        )

    def test_dangling_symlink(self, tmp_path: Path, user_dir: Path) -> None:
        user_dir.mkdir(parents=True)
        (user_dir / "gone.json").symlink_to(tmp_path / "nowhere.json")
        catalog = catalog_for(tmp_path)
        assert problem_for(catalog.problems, user_dir / "gone.json").reason == (
            "vanished, or is a symlink whose target does not exist"
        )

    def test_agents_path_that_is_a_file_is_one_problem(
        self, tmp_path: Path, user_dir: Path
    ) -> None:
        user_dir.parent.mkdir(parents=True)
        user_dir.write_bytes(b"")
        catalog = catalog_for(tmp_path)
        assert problem_for(catalog.problems, user_dir).reason.startswith(
            "agent directory cannot be listed: "
        )
        assert catalog.enabled_names() == BUNDLED_NAMES

    def test_same_name_twice_in_one_directory_keeps_the_first_file(
        self, tmp_path: Path, user_dir: Path
    ) -> None:
        write_agent(user_dir, "a.json", agent_json("twin", role="first"))
        second = write_agent(user_dir, "b.json", agent_json("twin", role="second"))
        catalog = catalog_for(tmp_path)
        assert catalog.resolve("twin").role == "first"
        assert "already defined by" in problem_for(catalog.problems, second).reason

    def test_problems_come_in_sorted_file_order(self, tmp_path: Path, user_dir: Path) -> None:
        for stem in ["c", "a", "b"]:
            write_agent(user_dir, f"{stem}.json", b"{")
        origins = [problem.origin for problem in catalog_for(tmp_path).problems]
        assert origins == [str(user_dir / f"{stem}.json") for stem in "abc"]
