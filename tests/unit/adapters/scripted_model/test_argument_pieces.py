"""A tool call's arguments stream in pieces as providers send them, bounded in number so that
Pi's re-parse at every piece stays linear in practice."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from adapters.scripted_model.sse import ARGUMENT_PIECE, MAX_ARGUMENT_PIECES, argument_pieces


def test_an_ordinary_argument_streams_in_sixteen_character_pieces() -> None:
    arguments = '{"query": "' + "a" * 100 + '"}'
    pieces = argument_pieces(arguments)
    assert all(len(piece) == ARGUMENT_PIECE for piece in pieces[:-1])
    assert "".join(pieces) == arguments


def test_a_200_kb_argument_streams_in_at_most_the_bounded_number_of_pieces() -> None:
    arguments = '{"query": "' + "y" * 200_000 + '"}'
    pieces = argument_pieces(arguments)
    assert len(pieces) <= MAX_ARGUMENT_PIECES
    assert max(len(piece) for piece in pieces) < 1024  # still measured as it grows
    assert "".join(pieces) == arguments


@given(st.text(max_size=20_000))
def test_the_pieces_rebuild_the_arguments(arguments: str) -> None:
    pieces = argument_pieces(arguments)
    assert "".join(pieces) == arguments
    assert len(pieces) <= MAX_ARGUMENT_PIECES
