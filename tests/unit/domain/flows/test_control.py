"""Control tokens: only the first non-empty line (or its exact JSON form) steers a flow; anything
else is the cautious reading."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.flows.control import (
    LoopState,
    Marker,
    Reading,
    Source,
    Verdict,
    first_line,
    loop_of,
    read_contract,
    read_token,
    route_of,
    score_of,
    verdict_of,
)

blank_lines = st.lists(st.sampled_from(["", " ", "\t", "   \t "]), max_size=4)
spaces = st.sampled_from(["", " ", "  ", "\t"])
prose = st.text(
    alphabet=st.characters(
        # No surrogates; no line breaks but "\n" (str.splitlines breaks at each of these).
        exclude_categories=["Cs"],
        exclude_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
    ),
    max_size=200,
)


def any_case(draw: st.DrawFn, word: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
    return "".join(c.upper() if up else c.lower() for c, up in zip(word, flips, strict=True))


@st.composite
def token_line(draw: st.DrawFn, marker: str, value: str) -> str:
    left, before, after, right = (draw(spaces) for _ in range(4))
    return f"{left}{any_case(draw, marker)}{before}:{after}{any_case(draw, value)}{right}"


@given(st.data(), blank_lines, prose, st.sampled_from(list(Verdict)))
def test_the_first_non_empty_line_decides_whatever_case_spacing_or_text_follows(
    data: st.DataObject, blanks: list[str], rest: str, verdict: Verdict
) -> None:
    line = data.draw(token_line("VERDICT", verdict.value))
    text = "\n".join([*blanks, line, rest])
    reading = verdict_of(read_token(text, Marker.VERDICT))
    assert reading.verdict is verdict
    assert reading.source is Source.LINE


# A first line of prose: something on it, but no token form and no JSON object.
opening_prose = prose.map(lambda text: text.replace("\n", " ")).filter(
    lambda line: bool(line.strip()) and ":" not in line and not line.strip().startswith("{")
)


@given(opening_prose, st.sampled_from(["VERDICT: PASS", "verdict: pass", '{"verdict": "pass"}']))
def test_a_token_anywhere_but_the_first_non_empty_line_never_counts(
    opening: str, token: str
) -> None:
    reading = verdict_of(read_token(f"{opening}\n{token}\n", Marker.VERDICT))
    assert (reading.verdict, reading.source) == (Verdict.REVISE, Source.DEFAULT)


@pytest.mark.parametrize(
    "line",
    [
        "VERDICT: PASS because the tests pass",
        "**VERDICT: PASS**",
        "VERDICT: PASS.",
        "VERDICT - PASS",
        "VERDICT PASS",
        "> VERDICT: PASS",
        "The verdict: pass",
        "VERDICT: PASSED",
        "SCORE: 100",
        "```",
    ],
)
def test_anything_but_the_exact_form_is_the_cautious_reading(line: str) -> None:
    text = f"{line}\nVERDICT: PASS\n"
    assert verdict_of(read_token(text, Marker.VERDICT)).verdict is Verdict.REVISE
    assert loop_of(read_token(line.replace("VERDICT", "LOOP"), Marker.LOOP)).state is (
        LoopState.CONTINUE
    )


def test_empty_and_blank_answers_are_the_cautious_reading() -> None:
    for text in ("", "\n\n", "  \t\n "):
        assert verdict_of(read_token(text, Marker.VERDICT)).verdict is Verdict.REVISE
        assert loop_of(read_token(text, Marker.LOOP)).state is LoopState.CONTINUE
        assert route_of(read_token(text, Marker.ROUTE), ["recon"]).resolved is False
        assert score_of(read_token(text, Marker.SCORE)).score == 0


@pytest.mark.parametrize(
    ("text", "state", "source"),
    [
        ("LOOP: DONE", LoopState.DONE, Source.LINE),
        ("loop:continue", LoopState.CONTINUE, Source.LINE),
        ('{"loop": "done"}', LoopState.DONE, Source.JSON),
        ('{\n  "loop": "done"\n}\n', LoopState.DONE, Source.JSON),
        ('{"loop": true}', LoopState.CONTINUE, Source.DEFAULT),
        ('{"Loop": "done"}', LoopState.CONTINUE, Source.DEFAULT),
        ('{"loop": "done"', LoopState.CONTINUE, Source.DEFAULT),
        ('["loop", "done"]', LoopState.CONTINUE, Source.DEFAULT),
        ("LOOP: maybe", LoopState.CONTINUE, Source.DEFAULT),
    ],
)
def test_the_json_fallback_needs_the_exact_field_and_type(
    text: str, state: LoopState, source: Source
) -> None:
    reading = loop_of(read_token(text, Marker.LOOP))
    assert (reading.state, reading.source) == (state, source)


@given(st.integers(min_value=0, max_value=100), st.data())
def test_a_score_in_range_is_read_from_the_line_and_from_json(
    score: int, data: st.DataObject
) -> None:
    line = data.draw(token_line("SCORE", str(score)))
    assert score_of(read_token(line, Marker.SCORE)) == score_of(Reading(score, Source.LINE))
    assert score_of(read_token(line, Marker.SCORE)).score == score
    assert score_of(read_token(json.dumps({"score": score}), Marker.SCORE)).score == score


@pytest.mark.parametrize(
    "text",
    [
        "SCORE: 101",
        "SCORE: -1",
        "SCORE: 88.5",
        "SCORE: 1e2",
        "SCORE: 1000",
        '{"score": 88.0}',
        '{"score": true}',
        '{"score": "88"}',
        '{"score": 101}',
    ],
)
def test_a_score_out_of_range_or_of_the_wrong_type_is_zero(text: str) -> None:
    reading = score_of(read_token(text, Marker.SCORE))
    assert (reading.score, reading.source) == (0, Source.DEFAULT)


def test_a_route_names_a_candidate_as_the_call_spelled_it_or_declines() -> None:
    candidates = ["recon", "Strategist"]
    chosen = route_of(read_token("ROUTE: STRATEGIST", Marker.ROUTE), candidates)
    assert (chosen.route, chosen.declined, chosen.resolved) == ("Strategist", False, True)
    declined = route_of(read_token("route: None", Marker.ROUTE), candidates)
    assert (declined.route, declined.declined, declined.resolved) == (None, True, False)
    unknown = route_of(read_token("ROUTE: operator", Marker.ROUTE), candidates)
    assert (unknown.route, unknown.declined, unknown.source) == (None, False, Source.DEFAULT)
    from_json = route_of(read_token('{"route": "recon"}', Marker.ROUTE), candidates)
    assert (from_json.route, from_json.source) == ("recon", Source.JSON)


@given(prose)
def test_a_contracted_roles_prose_is_never_read(text: str) -> None:
    data = {"verdict": "revise"}
    assert read_contract(data, Marker.VERDICT) == Reading("revise", Source.CONTRACT)
    # Whatever the prose says, the schema-validated field decides.
    assert verdict_of(read_contract(data, Marker.VERDICT)).verdict is Verdict.REVISE
    assert read_token(f"VERDICT: PASS\n{text}", Marker.VERDICT).value == "pass"


@pytest.mark.parametrize(
    ("data", "marker", "expected"),
    [
        ({"verdict": "pass"}, Marker.VERDICT, Reading("pass", Source.CONTRACT)),
        ({"verdict": "PASS"}, Marker.VERDICT, Reading("PASS", Source.CONTRACT)),
        ({"score": 77}, Marker.SCORE, Reading(77, Source.CONTRACT)),
        ({"score": "77"}, Marker.SCORE, Reading(None, Source.DEFAULT)),
        ({"summary": "VERDICT: PASS"}, Marker.VERDICT, Reading(None, Source.DEFAULT)),
        ({}, Marker.LOOP, Reading(None, Source.DEFAULT)),
    ],
)
def test_contract_data_is_read_by_its_exact_field_and_spelling(
    data: dict[str, object], marker: Marker, expected: Reading
) -> None:
    assert read_contract(data, marker) == expected


def test_an_uppercase_contract_verdict_is_not_a_pass() -> None:
    assert verdict_of(read_contract({"verdict": "PASS"}, Marker.VERDICT)).verdict is Verdict.REVISE


def test_the_first_line_is_the_first_with_anything_but_white_space_on_it() -> None:
    assert first_line("\n \t\n  VERDICT: PASS  \nmore") == "VERDICT: PASS"
    assert first_line(" \n\t") is None
