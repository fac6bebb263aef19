"""What the file-system contract rows read back: a file's bytes, and the refusal a stable read
or digest raises."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from application.ports import StableReadError
from tests.contract._fs_worlds import InterleavingMixin, World

LIMIT = 1 << 20


def refusal(world: World, path: str, *, max_bytes: int = LIMIT) -> StableReadError:
    with pytest.raises(StableReadError) as caught:
        world.adapter().read_stable(path, max_bytes=max_bytes)
    return caught.value


def refused_unread(
    world: World,
    read: Callable[[InterleavingMixin], object],
    *,
    before_open: Callable[[str], None] | None = None,
) -> StableReadError:
    """What ``read`` through an interleaving adapter is refused with; not a byte may be read."""
    adapter = world.interleaving()
    adapter.before_open = before_open
    with pytest.raises(StableReadError) as caught:
        read(adapter)
    assert adapter.reads == 0
    return caught.value


def digest_refusal(world: World, path: str) -> StableReadError:
    with pytest.raises(StableReadError) as caught:
        world.adapter().digest_stable(path)
    return caught.value


def contents(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()
