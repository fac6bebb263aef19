"""A squad id may be shortened to a prefix only one squad starts with."""

from __future__ import annotations

import pytest

from domain.errors import ErrorCode, NotFoundError
from domain.squad.references import expand_squad_prefix

IDS = ["build-api-1a2b", "build-api-9f00", "docs-77aa"]


def test_an_exact_id_is_itself_even_when_it_prefixes_another() -> None:
    assert expand_squad_prefix("docs", ["docs", "docs-2"]) == "docs"


def test_a_unique_prefix_is_the_squad_it_starts() -> None:
    assert expand_squad_prefix("do", IDS) == "docs-77aa"
    assert expand_squad_prefix("build-api-9", IDS) == "build-api-9f00"


def test_a_prefix_of_several_squads_is_ambiguous_and_lists_them_newest_first() -> None:
    with pytest.raises(NotFoundError) as raised:
        expand_squad_prefix("build", IDS)
    assert raised.value.code is ErrorCode.SQUAD_AMBIGUOUS
    assert "'build' matches 2 squads (build-api-9f00, build-api-1a2b)" in raised.value.message


def test_a_long_list_of_candidates_is_cut_and_counted() -> None:
    ids = [f"s-{n:02d}" for n in range(8)]
    with pytest.raises(NotFoundError) as raised:
        expand_squad_prefix("s-", ids)
    assert "s-07, s-06, s-05, s-04, s-03 and 3 more" in raised.value.message


@pytest.mark.parametrize("reference", ["nothing-like-it", ""])
def test_no_match_leaves_the_reference_for_the_store_to_refuse(reference: str) -> None:
    assert expand_squad_prefix(reference, IDS) == reference
