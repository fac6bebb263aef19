"""Loading agent definitions from real directories: bundled, user and project, read-only."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.catalogue.agent_files import (
    AGENT_KEYS,
    BUNDLED_AGENTS_DIR,
    MAX_AGENT_FILE_BYTES,
    AgentFileRejected,
    load_agent_catalog,
    load_agent_directory,
    parse_agent_definition,
    project_agents_dir,
    user_agents_dir,
)
from adapters.store.squad_root import squad_root
from domain.agents import (
    AgentCatalog,
    AgentDefinition,
    AgentFileProblem,
    AgentSource,
    AgentUnavailable,
    LoadedAgent,
    UnavailableReason,
)

BUNDLED_NAMES = [
    "architect",
    "backend",
    "debugger",
    "devops",
    "docs",
    "frontend",
    "fullstack",
    "planner",
    "qa",
    "researcher",
    "reviewer",
    "security",
]
VERDICT_LINES = ("## Verdict: PASS", "## Verdict: PASS WITH ISSUES", "## Verdict: FAIL")


def agent_json(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "role": f"{name} role", "description": "d", "prompt": "p", **fields}


def write_agent(directory: Path, file_name: str, document: dict[str, Any] | bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name
    path.write_bytes(document if isinstance(document, bytes) else json.dumps(document).encode())
    return path


def snapshot(*roots: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under the roots with its mode, size and mtime: any write shows up."""
    state: dict[str, tuple[int, int, int]] = {}
    for root in roots:
        if not root.exists():
            state[str(root)] = (0, 0, 0)
            continue
        for path in [root, *root.rglob("*")]:
            info = path.lstat()
            state[str(path)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return state


def problem_for(problems: tuple[AgentFileProblem, ...], path: Path) -> AgentFileProblem:
    matching = [problem for problem in problems if problem.origin == str(path)]
    assert len(matching) == 1, problems
    return matching[0]


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    return Path(user_agents_dir(str(tmp_path / "root")))


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    return Path(project_agents_dir(str(tmp_path / "repo")))


def catalog_for(tmp_path: Path) -> AgentCatalog:
    return load_agent_catalog(squad_root=str(tmp_path / "root"), cwd=str(tmp_path / "repo"))


class TestBundledDefaults:
    def test_all_twelve_load_without_problems(self) -> None:
        loaded = load_agent_directory(BUNDLED_AGENTS_DIR, AgentSource.BUNDLED)
        assert loaded.problems == ()
        assert [agent.name for agent in loaded.agents] == BUNDLED_NAMES

    @pytest.mark.parametrize("name", BUNDLED_NAMES)
    def test_each_is_complete_and_leaves_model_choice_open(self, name: str) -> None:
        path = Path(BUNDLED_AGENTS_DIR) / f"{name}.json"
        document = json.loads(path.read_bytes())
        assert set(document) == set(AGENT_KEYS) - {"disabled"}
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
                "are name, role, description, prompt, model, thinking, tools, tags, disabled",
            ),
            (
                agent_json("x", enabled=True),
                "not a valid agent definition: $: unknown key 'enabled'; the allowed keys are "
                "name, role, description, prompt, model, thinking, tools, tags, disabled "
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
        root = squad_root({}, str(home))
        load_agent_catalog(squad_root=root, cwd=str(tmp_path / "repo"))
        assert list(home.iterdir()) == []
        assert not (tmp_path / "repo").exists()


class TestSquadRoot:
    def test_environment_variable_wins_when_set(self, tmp_path: Path) -> None:
        assert squad_root({"PI_SQUAD_ROOT": str(tmp_path)}, "/home/u") == str(tmp_path)

    @pytest.mark.parametrize("environ", [{}, {"PI_SQUAD_ROOT": ""}, {"OTHER": "/x"}])
    def test_default_is_dot_pi_squad_under_home(self, environ: dict[str, str]) -> None:
        assert squad_root(environ, "/home/u") == os.path.join("/home/u", ".pi", "squad")

    def test_user_agents_come_from_the_root_in_the_environment(self, tmp_path: Path) -> None:
        root = tmp_path / "custom-root"
        write_agent(root / "agents", "mine.json", agent_json("mine"))
        resolved = squad_root({"PI_SQUAD_ROOT": str(root)}, str(tmp_path / "home"))
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
