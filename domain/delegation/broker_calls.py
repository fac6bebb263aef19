"""A delegated worker's broker calls as values (``read_source``, ``search_source``,
``cite_receipt``): structured from arguments already checked against their schema files
(``delegate-broker-*-v1``), the one validation path every external input takes. The worker is an
adversary, so nothing it sends is read before that check."""

from __future__ import annotations

import attrs

from domain.input_errors import InvalidField

READ_SCHEMA = "delegate-broker-read-v1"
SEARCH_SCHEMA = "delegate-broker-search-v1"
CITE_SCHEMA = "delegate-broker-cite-v1"


@attrs.frozen
class ReadSourceCall:
    """One source, whole or by a one-based inclusive line range or a zero-based half-open byte
    range (never both: a range is one unit)."""

    source_id: str
    line_start: int | None = None
    line_end: int | None = None
    byte_start: int | None = None
    byte_end: int | None = None

    def __attrs_post_init__(self) -> None:
        if self.by_lines and self.by_bytes:
            raise InvalidField("byteStart", "give lineStart/lineEnd or byteStart/byteEnd, not both")

    @property
    def by_lines(self) -> bool:
        return self.line_start is not None or self.line_end is not None

    @property
    def by_bytes(self) -> bool:
        return self.byte_start is not None or self.byte_end is not None


@attrs.frozen
class SearchSourceCall:
    """An exact string searched for in the named sources (all of the job's when none named)."""

    query: str
    source_ids: tuple[str, ...] | None = None


@attrs.frozen
class CiteReceiptCall:
    """One source's or one granted receipt's host record (the schema allows exactly one)."""

    source_id: str | None = None
    receipt_id: str | None = None

    def __attrs_post_init__(self) -> None:
        if (self.source_id is None) == (self.receipt_id is None):
            raise InvalidField("receiptId", "give exactly one of sourceId or receiptId")
