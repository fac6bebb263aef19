"""The long reference tables (every error code, every input's fields, the spec's byte limits) are
generated from the code by ``scripts/gen_docs.py`` into marked regions of the documents: a hand
edit inside a region, or a code change nobody regenerated, fails here."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

from domain.errors import ErrorCode

REPO = Path(__file__).resolve().parents[3]
FIX = "regenerate with: uv run python scripts/gen_docs.py"


def script(name: str) -> ModuleType:
    # The generator's modules are siblings in scripts/, as when it runs as a script.
    if str(REPO / "scripts") not in sys.path:
        sys.path.insert(0, str(REPO / "scripts"))
    return importlib.import_module(name)


GEN = script("gen_docs")


@pytest.mark.parametrize("page", sorted(GEN.PAGES))
def test_a_generated_region_holds_what_the_script_writes(page: str) -> None:
    text = (REPO / page).read_text(encoding="utf-8")
    assert text == GEN.updated(text, GEN.PAGES[page]), f"{page}: {FIX}"


def test_a_hand_edit_inside_a_region_is_put_back() -> None:
    page = "docs/reference/errors.md"
    text = (REPO / page).read_text(encoding="utf-8")
    edited = text.replace("| `SQUAD_BUSY` | 1 |", "| `SQUAD_BUSY` | 3 |")
    assert edited != text
    assert GEN.updated(edited, GEN.PAGES[page]) == text


def test_a_page_that_lost_its_region_is_refused() -> None:
    with pytest.raises(SystemExit, match="no generated region"):
        GEN.updated("# a page without its region\n", GEN.PAGES["docs/reference/errors.md"])


def test_every_error_code_has_its_row_in_the_catalogue() -> None:
    page = (REPO / "docs/reference/errors.md").read_text(encoding="utf-8")
    assert [code for code in ErrorCode if f"| `{code}` |" not in page] == []


def test_a_code_without_words_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    words = script("docgen_squad_codes")
    monkeypatch.delitem(words.SQUAD, "SQUAD_BUSY")
    with pytest.raises(SystemExit, match="SQUAD_BUSY"):
        script("docgen_errors").render()


def test_every_schema_file_has_its_section_in_the_fields_page() -> None:
    page = (REPO / "docs/reference/fields.md").read_text(encoding="utf-8")
    schemas = sorted((REPO / "domain/spec/schemas").glob("*.schema.json"))
    names = [path.name.removesuffix(".schema.json") for path in schemas]
    assert len(names) > 30
    assert [name for name in names if f"### `{name}`" not in page] == []


def test_a_schema_file_in_no_group_stops_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    fields = script("docgen_fields")
    monkeypatch.setattr(fields, "schema_names", lambda: ["spec-v1", "a-new-input"])
    with pytest.raises(SystemExit, match="a-new-input"):
        fields.render()
