"""The bridge's memo of escaped result texts (``adapters.bridge.protocol._EncodedTexts``): a hit
is exactly what a fresh escape writes, texts never share an entry, and the budget holds."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.bridge import protocol
from adapters.bridge.protocol import _EncodedTexts, _json_string


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.text(max_size=300), min_size=1, max_size=12))
def test_every_answer_is_the_fresh_escape_of_its_own_text(texts: list[str]) -> None:
    memo = _EncodedTexts(budget=4096)
    for _ in range(2):  # the second pass answers from the memo where it kept the text
        for text in texts:
            assert memo.of(text) == _json_string(text)


def test_equal_lengths_and_a_changed_byte_never_share_an_entry() -> None:
    memo = _EncodedTexts(budget=1 << 20)
    chunk = "aé€🙂 " * 2000
    changed = chunk[:-2] + "X "
    assert memo.of(chunk) == _json_string(chunk)
    assert memo.of(changed) == _json_string(changed)
    assert json.loads(memo.of(changed)) == changed
    assert json.loads(memo.of(chunk)) == chunk


def test_the_budget_holds_and_the_oldest_text_goes_first() -> None:
    budget = 10_000
    memo = _EncodedTexts(budget=budget)
    texts = [f"{index:04d}" + "x" * 200 for index in range(40)]
    for text in texts:
        memo.of(text)
        assert memo._used <= budget
        assert memo._used == sum(
            len(encoded) + 4 * len(kept) for kept, encoded in memo._entries.items()
        )
    kept = list(memo._entries)
    assert kept == texts[-len(kept) :]  # the newest are kept, in order
    memo.of(texts[-len(kept)])  # a hit becomes the newest
    assert list(memo._entries)[-1] == texts[-len(kept)]


def test_a_text_larger_than_an_eighth_of_the_budget_is_answered_but_not_kept() -> None:
    memo = _EncodedTexts(budget=8000)
    large = "y" * 300  # 302 encoded + 1200 > 1000
    assert memo.of(large) == _json_string(large)
    assert large not in memo._entries
    assert memo._used == 0


def test_the_bridge_answers_through_one_bounded_memo() -> None:
    assert isinstance(protocol._ENCODED_TEXTS, _EncodedTexts)
    # Two blocks of every chunk of a 1 MiB spec (33 chunks of <= 32 KiB) fit.
    assert protocol._ENCODED_TEXTS._budget // 8 >= 33 * 1024 * 5
