"""Mailbox (upstream §2, §4 and behaviours 17-18): idempotent queueing, live steering with
acknowledgement, and delivery through the scheduler's reconcile, reopening finished work; on the
in-memory store and on a real squad root (tests/integration/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from application.ports import NewSession
from application.squads.mailbox import Delivery, Mailbox
from domain.errors import ErrorCode, PiSquadError
from domain.squad.model import ReviewStatus, SquadStatus, TaskStatus
from tests.fakes.child_runtime import FakeChild
from tests.integration.ops_support import (
    finish,
    operations,
    run_to_review,
    squad_files,
    squad_status,
)
from tests.integration.scheduler_steps import (
    bound_child,
    failed_squad,
    resumed_session_file,
    started,
)
from tests.runtime_world import RuntimeWorld


def assert_delivered_in_first_prompt(world: RuntimeWorld, child: FakeChild, text: str) -> None:
    """The queued message reached ``child`` in its first prompt, and the task's mailbox entry is
    marked delivered."""
    assert text in child.request.first_prompt
    assert world.store.mailbox(world.squad_id, child.task_id)[0].delivered_at is not None


def test_queueing_is_idempotent_by_message_id(world: RuntimeWorld, mail: Mailbox) -> None:
    first = mail.queue_message(world.squad_id, "build", "Use the new parser.", message_id="m-1")
    assert first.created
    before = squad_files(world)
    again = mail.queue_message(world.squad_id, "build", "Something else", message_id="m-1")
    assert again.created is False
    assert again.entry == first.entry
    assert squad_files(world) == before
    entries = world.store.mailbox(world.squad_id, "build")
    assert [e.id for e in entries] == ["m-1"]
    assert entries[0].pending
    assert entries[0].message.sender == "orchestrator"
    assert entries[0].message.expects_reply is True
    lines = world.history_lines("build")
    assert len(lines) == 1
    assert '"id":"m-1"' in lines[0]
    assert [m.id for m in world.store.messages(world.squad_id, "build")] == ["m-1"]


def test_a_message_without_an_id_gets_a_fresh_one(world: RuntimeWorld, mail: Mailbox) -> None:
    one = mail.queue_message(world.squad_id, "build", "first", expects_reply=False)
    two = mail.queue_message(world.squad_id, "build", "second", expects_reply=False)
    assert one.entry.id != two.entry.id
    assert [e.message.text for e in world.store.mailbox(world.squad_id, "build")] == [
        "first",
        "second",
    ]


def test_queueing_refuses_unknown_tasks_and_empty_or_malformed_input(
    world: RuntimeWorld, mail: Mailbox
) -> None:
    before = squad_files(world)
    cases: list[tuple[Callable[[], object], ErrorCode]] = [
        (lambda: mail.queue_message(world.squad_id, "ghost", "hi"), ErrorCode.TASK_NOT_FOUND),
        (lambda: mail.queue_message(world.squad_id, "build", "  \n"), ErrorCode.MESSAGE_INVALID),
        (
            lambda: mail.queue_message(world.squad_id, "build", "hi", message_id="../x"),
            ErrorCode.MESSAGE_INVALID,
        ),
        (lambda: mail.queue_message("no-such-squad", "build", "hi"), ErrorCode.SQUAD_NOT_FOUND),
    ]
    for call, code in cases:
        with pytest.raises(PiSquadError) as caught:
            call()
        assert caught.value.code is code
    assert squad_files(world) == before
    assert not world.exists(f"{world.root}/no-such-squad")


def test_a_long_message_is_stored_verbatim(world: RuntimeWorld, mail: Mailbox) -> None:
    text = "é🙂 " * 10_000
    mail.queue_message(world.squad_id, "build", text, message_id="long")
    assert world.store.mailbox(world.squad_id, "build")[0].message.text == text


def test_a_live_steer_is_acknowledged(world: RuntimeWorld, mail: Mailbox) -> None:
    scheduler = started(world)
    child = world.runtime.latest("design")
    outcome = mail.send(world.squad_id, "design", "Status?", live=scheduler.live["design"].handle)
    assert outcome.delivery is Delivery.DELIVERED
    assert child.steers == [
        "[squad] Main orchestrator requests a direct response:\nStatus?\n\nReply directly in "
        "your next message; it is forwarded to the main orchestrator and recorded in the task's "
        "history."
    ]
    entry = world.store.mailbox(world.squad_id, "design")[0]
    assert entry.delivered_at is not None
    mail.send(
        world.squad_id,
        "design",
        "FYI only",
        live=scheduler.live["design"].handle,
        expects_reply=False,
    )
    assert child.steers[-1] == "[squad] Main orchestrator message:\nFYI only"
    scheduler.reconcile()
    assert len(world.runtime.for_task("design")) == 1, "delivered mail reopens nothing"


def test_a_rejected_steer_keeps_the_mail_pending_and_settlement_reopens_the_same_session(
    world: RuntimeWorld, mail: Mailbox
) -> None:
    scheduler = started(world)
    child = bound_child(world, scheduler, "design")
    child.accept_steer = False
    outcome = mail.send(
        world.squad_id, "design", "Check the edge case.", live=scheduler.live["design"].handle
    )
    assert outcome.delivery is Delivery.QUEUED
    assert world.store.mailbox(world.squad_id, "design")[0].pending
    assert world.task("design").status is TaskStatus.IN_PROGRESS
    finish(world, scheduler, "design")
    assert world.task("design").status is not TaskStatus.DONE
    second = world.runtime.latest("design")
    assert second is not child
    assert resumed_session_file(second) == world.session_of("design")
    assert "[Direct response required by main orchestrator]" in second.request.first_prompt
    assert_delivered_in_first_prompt(world, second, "Check the edge case.")


def test_a_message_to_a_done_task_resumes_its_session_and_reblocks_its_descendants(
    world: RuntimeWorld, mail: Mailbox
) -> None:
    scheduler = started(world)
    bound_child(world, scheduler, "design")
    finish(world, scheduler, "design")
    live_dependents = [world.runtime.latest("build"), world.runtime.latest("docs")]
    outcome = mail.send(world.squad_id, "design", "Reconsider the schema.")
    assert outcome.delivery is Delivery.QUEUED
    scheduler.reconcile()
    # The pass that re-blocks build and docs stops their children only on the next pass, which
    # is when their slots free up for design (see the operations report).
    scheduler.reconcile()
    design = world.task("design")
    assert design.status is TaskStatus.IN_PROGRESS
    reopened = world.runtime.latest("design")
    assert resumed_session_file(reopened) == world.session_of("design")
    assert_delivered_in_first_prompt(world, reopened, "Reconsider the schema.")
    for task_id in ("build", "docs"):
        assert world.task(task_id).status is TaskStatus.BLOCKED
    assert all(child.killed for child in live_dependents)
    finish(world, scheduler, "design")
    assert sorted(world.runtime.live_task_ids()) == ["build", "docs"]


def test_a_message_to_a_never_started_task_is_in_its_first_prompt_on_a_new_session(
    world: RuntimeWorld, mail: Mailbox
) -> None:
    mail.send(world.squad_id, "design", "Prefer SQLite.")
    world.scheduler().reconcile()
    child = world.runtime.latest("design")
    assert isinstance(child.request.session, NewSession)
    assert_delivered_in_first_prompt(world, child, "Prefer SQLite.")


def test_a_message_to_a_done_task_of_a_review_squad_is_rework(
    world: RuntimeWorld, mail: Mailbox
) -> None:
    scheduler = run_to_review(world)
    mail.send(world.squad_id, "qa", "Run the slow tests too.")
    scheduler.reconcile()
    squad = world.store.snapshot(world.squad_id).squad
    assert squad.status is SquadStatus.RUNNING
    assert [r.status for r in squad.review_history] == [ReviewStatus.PENDING]
    assert world.task("qa").status is TaskStatus.IN_PROGRESS
    finish(world, scheduler, "qa")
    assert squad_status(world) is SquadStatus.REVIEW


def test_a_message_to_a_failed_task_reopens_it_and_heals_the_squad(
    world: RuntimeWorld, mail: Mailbox
) -> None:
    scheduler = failed_squad(world)
    mail.send(world.squad_id, "design", "Try again with more memory.")
    scheduler.reconcile()
    assert squad_status(world) is SquadStatus.RUNNING
    assert world.task("design").status is TaskStatus.IN_PROGRESS
    assert "more memory" in world.runtime.latest("design").request.first_prompt


def test_mail_to_a_suspended_task_is_held_until_it_is_resumed(
    world: RuntimeWorld, mail: Mailbox
) -> None:
    scheduler = started(world)
    operations(world).pause_task(world.squad_id, "design")
    scheduler.reconcile()
    outcome = mail.send(world.squad_id, "design", "When you are back: use v2.")
    assert outcome.delivery is Delivery.HELD
    scheduler.reconcile()
    assert world.task("design").status is TaskStatus.SUSPENDED
    assert len(world.runtime.for_task("design")) == 1
    assert world.store.mailbox(world.squad_id, "design")[0].pending
    operations(world).resume_task(world.squad_id, "design")
    scheduler.reconcile()
    assert_delivered_in_first_prompt(world, world.runtime.latest("design"), "use v2")


def test_mail_to_a_cancelled_task_stays_queued_and_never_reopens_it(
    world: RuntimeWorld, mail: Mailbox
) -> None:
    operations(world).cancel_task(world.squad_id, "qa")
    outcome = mail.send(world.squad_id, "qa", "Are you there?")
    assert outcome.delivery is Delivery.HELD
    started(world)
    assert world.task("qa").status is TaskStatus.CANCELLED
    assert world.store.mailbox(world.squad_id, "qa")[0].pending


def test_the_reply_to_a_message_that_asked_for_one_is_forwarded_once(
    world: RuntimeWorld, mail: Mailbox
) -> None:
    scheduler = started(world)
    child = world.runtime.latest("design")
    child.say("before any question")
    scheduler.pump()
    assert [n.kind for n in world.notices] == []
    mail.send(world.squad_id, "design", "Status?", live=scheduler.live["design"].handle)
    child.say("Half done; the parser is next.")
    child.say("Now on the parser.")
    scheduler.pump()
    (reply,) = [n for n in world.notices if n.kind == "agent_reply"]
    assert reply.task_id == "design"
    assert reply.text == (
        "Reply from task 'design' (architect) to your message:\nHalf done; the parser is next."
    )
    assert world.store.mailbox(world.squad_id, "design")[0].replied_at is not None
    mail.send(
        world.squad_id, "design", "FYI", live=scheduler.live["design"].handle, expects_reply=False
    )
    child.say("Noted.")
    scheduler.pump()
    assert len([n for n in world.notices if n.kind == "agent_reply"]) == 1, "FYI asks for none"
