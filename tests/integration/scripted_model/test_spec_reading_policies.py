"""The scripted model's policies over whole conversations with a guarded child (``FakeChild``):
``diligent`` reads every chunk it is told is missing, ``impatient`` tries tools first, ``lazy``
reads nothing, ``qa-fail`` fails a task's first report."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.scripted_model import ScriptedModelServer
from adapters.scripted_model.conversation import parse_request
from adapters.scripted_model.ledger_saboteur import ledger_saboteur, ledger_trap_script
from adapters.scripted_model.policies import (
    IMPATIENT_AFTER_MARKER,
    IMPATIENT_BASH_MARKER,
    IMPATIENT_PARALLEL_MARKER,
    VERDICT_FAIL,
    VERDICT_PASS,
)
from adapters.scripted_model.spec_reading import MAX_ATTEMPTS_PER_CHUNK, spec_progress
from tests.integration.scripted_model.completions_client import (
    SPEC_TOOLS,
    FakeChild,
    assistant_calls,
    converse,
    read_batches,
    request,
    tool,
)
from tests.integration.scripted_model.wires import SPEC_READ_SCHEMA


def test_diligent_reads_in_reverse_batches_of_three_then_passes(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: diligent\nsquad-spec-chunks: 7", "go", tools=SPEC_TOOLS)
    child = FakeChild(7)
    replies = converse(server, body, child)
    assert read_batches(replies) == [[6, 5, 4], [3, 2, 1], [0]]
    assert child.delivered == set(range(7))
    final = replies[-1]["text"]
    assert "[0, 1, 2, 3, 4, 5, 6] of 7" in final
    assert final.rstrip().endswith(VERDICT_PASS)


@pytest.mark.parametrize(
    "bootstrap",
    [
        'Spec manifest: {"sha256":"ab","bytes":99,"chunkCount":5}',
        "The canonical spec has 5 chunks; read them all.",
        "chunk count: 5",
        "Spec chunks: 5",
    ],
)
def test_diligent_learns_the_count_from_bootstrap_prose(
    server: ScriptedModelServer, bootstrap: str
) -> None:
    body = request("scripted-policy: diligent", bootstrap, tools=SPEC_TOOLS)
    replies = converse(server, body, FakeChild(5))
    assert read_batches(replies) == [[4, 3, 2], [1, 0]]


def test_diligent_follows_the_child_bootstrap_as_the_squad_writes_it(
    server: ScriptedModelServer,
) -> None:
    bootstrap = "\n".join(
        [
            "# pi-squad file-spec task",
            "Squad: sq-1",
            "Task: build",
            "Canonical spec: 99000 bytes, SHA-256 " + "a" * 64,
            "Chunks: 4 (at most 32768 bytes each)",
            "Before any other tool, read every chunk of the canonical spec with "
            'squad_spec_read {"index": N}. Any order works.',
            "Missing chunk indices: [0, 2, 3]",
            "squad-spec-chunks: 4",
            "squad-spec-missing: 0,2,3",
        ]
    )
    body = request(
        f"Agent prompt.\nscripted-policy: diligent\n\n{bootstrap}", "go", tools=SPEC_TOOLS
    )
    assert read_batches(converse(server, body, FakeChild(4))) == [[3, 2, 0]]
    done = bootstrap.replace("squad-spec-missing: 0,2,3", "squad-spec-missing: none")
    body = request(f"scripted-policy: diligent\n{done}", "go", tools=SPEC_TOOLS)
    (only,) = converse(server, body, FakeChild(4))
    assert VERDICT_PASS in only["text"]


def test_diligent_without_a_count_reads_chunk_zero_and_learns_it_from_the_metadata(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: diligent", "Read the spec.", tools=SPEC_TOOLS)
    replies = converse(server, body, FakeChild(4))
    assert read_batches(replies) == [[0], [3, 2, 1]]
    assert VERDICT_PASS in replies[-1]["text"]


def test_diligent_reads_only_the_stated_missing_chunks(server: ScriptedModelServer) -> None:
    system = "scripted-policy: diligent\nsquad-spec-chunks: 6\nsquad-spec-missing: 1, 4"
    replies = converse(server, request(system, "go", tools=SPEC_TOOLS), FakeChild(6))
    assert read_batches(replies) == [[4, 1]]


def test_diligent_retries_a_failed_read_and_gives_up_after_the_limit(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: diligent\nsquad-spec-chunks: 3", "go", tools=SPEC_TOOLS)
    replies = converse(server, body, FakeChild(3, flaky={1: 1}))
    assert read_batches(replies) == [[2, 1, 0], [1]]
    assert VERDICT_PASS in replies[-1]["text"]

    stubborn = converse(server, body, FakeChild(3, flaky={1: 99}))
    assert read_batches(stubborn) == [[2, 1, 0]] + [[1]] * (MAX_ATTEMPTS_PER_CHUNK - 1)
    assert VERDICT_FAIL in stubborn[-1]["text"]
    assert "Could not read spec chunks [1]" in stubborn[-1]["text"]


def test_diligent_without_the_reader_tool_just_reports(server: ScriptedModelServer) -> None:
    replies = converse(server, request("scripted-policy: diligent", "go"), FakeChild(3))
    assert len(replies) == 1
    assert "no spec reader offered" in replies[0]["text"]
    assert VERDICT_PASS in replies[0]["text"]


def test_spec_text_never_steers_the_reading(server: ScriptedModelServer) -> None:
    # FakeChild's chunk text carries "squad-spec-missing: 0"; were it believed, chunk 0 would
    # be read again after the first batch.
    body = request("scripted-policy: diligent\nsquad-spec-chunks: 4", "go", tools=SPEC_TOOLS)
    assert read_batches(converse(server, body, FakeChild(4))) == [[3, 2, 1], [0]]


def test_missing_statement_in_a_block_reason_is_older_than_its_own_rounds_reads() -> None:
    body = request("squad-spec-chunks: 3", "go", tools=SPEC_TOOLS)
    body["messages"] += [
        assistant_calls(
            [("c0", "squad_spec_read", '{"index":0}'), ("c1", "bash", '{"command":"ls"}')]
        ),
        {"role": "tool", "tool_call_id": "c0", "content": '{"index":0,"chunkCount":3}\ntext'},
        {"role": "tool", "tool_call_id": "c1", "content": "Blocked. Missing chunk indices: [0, 2]"},
    ]
    progress = spec_progress(parse_request(body))
    assert progress.chunk_count == 3
    assert progress.delivered == {0}
    assert progress.missing == (2,)


def test_missing_statement_in_a_later_user_message_wins() -> None:
    body = request("squad-spec-chunks: 3", "go", tools=SPEC_TOOLS)
    body["messages"] += [
        assistant_calls([("c0", "squad_spec_read", '{"index":0}')]),
        {"role": "tool", "tool_call_id": "c0", "content": '{"index":0,"chunkCount":3}\ntext'},
        {"role": "user", "content": "Completion rejected.\nsquad-spec-missing: [0]\n"},
    ]
    assert spec_progress(parse_request(body)).missing == (0,)


def test_a_resumed_run_s_system_prompt_lists_deliveries_a_crash_kept_from_counting() -> None:
    # The child's bootstrap is rebuilt for each run: after a restart it lists again the chunks
    # the old process received but died before committing; they are read again.
    body = request("squad-spec-chunks: 3\nsquad-spec-missing: 0, 1, 2", "go", tools=SPEC_TOOLS)
    body["messages"] += [
        assistant_calls([("c0", "squad_spec_read", '{"index":0}')]),
        {"role": "tool", "tool_call_id": "c0", "content": '{"index":0,"chunkCount":3}\ntext'},
        assistant_calls([("c1", "squad_spec_read", '{"index":1}')]),
        {"role": "tool", "tool_call_id": "c1", "content": '{"index":1,"chunkCount":3}\ntext'},
        {"role": "user", "content": "Resume file-spec squad task build."},
    ]
    # The resumed run's system prompt: chunk 1 was delivered but never committed.
    body["messages"][0]["content"] = "squad-spec-chunks: 3\nsquad-spec-missing: 1, 2"
    assert spec_progress(parse_request(body)).missing == (1, 2)
    # Within the run, its own deliveries count as read after the statement.
    body["messages"] += [
        assistant_calls([("c2", "squad_spec_read", '{"index":2}')]),
        {"role": "tool", "tool_call_id": "c2", "content": '{"index":2,"chunkCount":3}\ntext'},
    ]
    assert spec_progress(parse_request(body)).missing == (1,)


def test_impatient_probes_then_reads_all_beside_bash_then_finishes(
    server: ScriptedModelServer,
) -> None:
    body = request("scripted-policy: impatient\nsquad-spec-chunks: 4", "go", tools=SPEC_TOOLS)
    child = FakeChild(4, flaky={2: 1})
    replies = converse(server, body, child)
    names = [[c["name"] for c in r["tool_calls"]] for r in replies]
    assert names == [
        ["bash", "read", "write"],
        ["squad_spec_read"] * 4 + ["bash"],
        ["squad_spec_read"],
        ["bash"],
        [],
    ]
    assert IMPATIENT_BASH_MARKER in replies[0]["tool_calls"][0]["arguments"]["command"]
    assert IMPATIENT_PARALLEL_MARKER in replies[1]["tool_calls"][-1]["arguments"]["command"]
    assert read_batches(replies)[1:3] == [[0, 1, 2, 3], [2]]
    # Only the last bash ran: the guard blocked every earlier normal tool.
    assert child.executed == [("bash", {"command": f"echo attested > {IMPATIENT_AFTER_MARKER}"})]
    assert replies[-1]["text"].rstrip().endswith(VERDICT_PASS)


def test_impatient_offers_only_the_tools_it_has(server: ScriptedModelServer) -> None:
    tools = [tool("bash"), tool("squad_spec_read", SPEC_READ_SCHEMA)]
    body = request("scripted-policy: impatient\nsquad-spec-chunks: 2", "go", tools=tools)
    replies = converse(server, body, FakeChild(2))
    assert [c["name"] for c in replies[0]["tool_calls"]] == ["bash"]
    assert VERDICT_PASS in replies[-1]["text"]


def test_lazy_settles_with_prose_even_with_a_reader_offered(server: ScriptedModelServer) -> None:
    body = request("scripted-policy: lazy\nsquad-spec-chunks: 9", "go", tools=SPEC_TOOLS)
    replies = converse(server, body, FakeChild(9))
    assert len(replies) == 1
    assert replies[0]["tool_calls"] == []


def qa_body(task: str | None) -> dict[str, Any]:
    system = "scripted-policy: qa-fail\nsquad-spec-chunks: 2"
    if task is not None:
        system += f"\nscripted-task: {task}"
    return request(system, "verify", tools=SPEC_TOOLS)


def test_qa_fail_fails_the_first_report_of_a_task_then_passes(
    server: ScriptedModelServer,
) -> None:
    first = converse(server, qa_body("qa"), FakeChild(2))
    assert read_batches(first) == [[1, 0]]
    assert VERDICT_FAIL in first[-1]["text"]
    assert "## Issues\n- " in first[-1]["text"]
    again = converse(server, qa_body("qa"), FakeChild(2))
    assert VERDICT_PASS in again[-1]["text"]
    retest = converse(server, qa_body("qa-retest-1"), FakeChild(2))
    assert VERDICT_PASS in retest[-1]["text"]
    other = converse(server, qa_body("qa-2"), FakeChild(2))
    assert VERDICT_FAIL in other[-1]["text"]


def test_qa_fail_keys_on_the_reader_metadata_task_and_on_history(
    server: ScriptedModelServer,
) -> None:
    assert VERDICT_FAIL in converse(server, qa_body(None), FakeChild(2))[-1]["text"]
    assert VERDICT_PASS in converse(server, qa_body(None), FakeChild(2))[-1]["text"]

    fresh = ScriptedModelServer().start()
    try:
        body = qa_body("t")
        body["messages"].insert(2, {"role": "assistant", "content": f"old\n{VERDICT_FAIL}\n"})
        body["messages"].insert(3, {"role": "user", "content": "fixed; verify again"})
        assert VERDICT_PASS in converse(fresh, body, FakeChild(2))[-1]["text"]
    finally:
        fresh.stop()


def test_ledger_saboteur_reads_everything_then_lays_its_trap_once_then_passes_quoting_it() -> None:
    body = request(
        "scripted-policy: ledger-saboteur\nsquad-spec-chunks: 4\nscripted-lock-trap: symlink",
        "go",
        tools=SPEC_TOOLS,
    )
    child = FakeChild(4)
    with ScriptedModelServer(policies={"ledger-saboteur": ledger_saboteur}) as running:
        replies = converse(running, body, child)
    assert read_batches(replies) == [[3, 2, 1], [0], []]
    assert replies[2]["text"] == "Reading done; tidying my ledger."
    assert child.executed == [("bash", {"command": ledger_trap_script("symlink", None)})]
    final = replies[-1]["text"]
    assert "policy ledger-saboteur): read spec chunks [0, 1, 2, 3] of 4" in final
    assert "\n\n(no output)\n\n" in final
    assert final.endswith(VERDICT_PASS + "\n")
