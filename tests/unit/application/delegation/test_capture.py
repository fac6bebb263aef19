"""Source capture (seed §2, §4): only under granted roots, through real directories, stable
text reads; opaque IDs bound to hash, media type and provenance; immutable snapshots."""

from __future__ import annotations

from typing import Any

import pytest

from domain.delegation.errors import DelegationError
from tests.fakes.delegation import PROJECT
from tests.unit.application.delegation.support import world


def capture(host: Any, *paths: str, **extra: Any) -> dict[str, Any]:
    answer: dict[str, Any] = host.handle(
        {"version": 1, "op": "capture", "paths": list(paths), **extra}
    )
    return answer


def refused(host: Any, path: str) -> str:
    with pytest.raises(DelegationError) as error:
        capture(host, path)
    assert error.value.code == "DELEGATE_SOURCE_REFUSED"
    return error.value.message


def test_refused_paths() -> None:
    w = world()
    w.fs.add_file("/elsewhere/secret.txt", b"s\n")
    w.fs.add_file(f"{PROJECT}/.env", b"TOKEN=1\n")
    w.fs.add_file(f"{PROJECT}/keys/deploy.pem", b"k\n")
    w.fs.add_file(f"{PROJECT}/bin.dat", b"a\0b")
    w.fs.add_file(f"{PROJECT}/latin1.txt", "é".encode("latin-1"))
    w.fs.add_file("/outside/real.txt", b"r\n")
    w.fs.add_symlink(f"{PROJECT}/linked", "/outside")
    w.fs.add_symlink(f"{PROJECT}/link.txt", "/outside/real.txt")
    host = w.host()
    assert "granted source root" in refused(host, "/elsewhere/secret.txt")
    assert "granted source root" in refused(host, "../elsewhere/secret.txt")
    assert "private" in refused(host, ".env")
    assert "private" in refused(host, "keys/deploy.pem")
    assert "binary" in refused(host, "bin.dat")
    assert "UTF-8" in refused(host, "latin1.txt")
    assert "real directory" in refused(host, "linked/real.txt")
    assert "symlink" in refused(host, "link.txt")
    assert "missing" in refused(host, "nope.txt")
    state = w.store.snapshot("s1")
    assert state is None or state.sources == {}


def test_no_root_is_granted_by_default() -> None:
    w = world(source_roots=())
    w.fs.add_file(f"{PROJECT}/a.py", b"a\n")
    assert "granted source root" in refused(w.host(), "a.py")


def test_ids_are_opaque_bound_and_stable_for_the_same_bytes() -> None:
    w = world()
    w.fs.add_file(f"{PROJECT}/a.py", b"one\ntwo\n")
    host = w.host()
    [first] = capture(host, "a.py")["sources"]
    [again] = capture(host, f"{PROJECT}/a.py")["sources"]
    assert again == first
    assert first["sha256"] not in first["sourceId"]
    assert first["mediaType"].startswith("text/plain")
    w.fs.add_file(f"{PROJECT}/a.py", b"one\ntwo\nthree\n")
    [changed] = capture(host, "a.py")["sources"]
    assert changed["sourceId"] != first["sourceId"]
    assert changed["lines"] == 3


def test_excerpts_carry_parent_provenance() -> None:
    host = world().host()
    [excerpt] = capture(host, excerpts=[{"label": "stack trace", "text": "boom\n"}])["sources"]
    assert excerpt["provenance"] == "parent_excerpt"
    assert excerpt["location"] == "stack trace"


def test_snapshots_are_read_only_and_checked_on_every_read() -> None:
    w = world()
    w.fs.add_file(f"{PROJECT}/a.py", b"a\n")
    [source] = capture(w.host(), "a.py")["sources"]
    path = f"/squad-root/delegation/sessions/s1/sources/{source['sha256']}"
    assert w.fs.mode(path) == 0o400
    assert w.store.read_source("s1", source["sha256"]) == b"a\n"
    w.fs.add_file(path, b"forged\n")
    with pytest.raises(ValueError, match="no longer has its captured bytes"):
        w.store.read_source("s1", source["sha256"])


def test_the_source_count_is_bounded() -> None:
    w = world(max_sources=1)
    w.fs.add_file(f"{PROJECT}/a.py", b"a\n")
    w.fs.add_file(f"{PROJECT}/b.py", b"b\n")
    with pytest.raises(DelegationError) as error:
        capture(w.host(), "a.py", "b.py")
    assert error.value.code == "DELEGATE_CAPACITY_EXHAUSTED"
