"""``LockFactory.is_held`` asks whether a lock is held without taking it: on Linux through the
kernel (``F_GETLK``), across processes, and without dropping this process's own hold."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adapters.store.lock import FastenersLockFactory
from tests.fakes.locks import FakeLockFactory

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the kernel query is Linux's"
)

HOLDER = textwrap.dedent(
    """
    import sys
    from adapters.store.lock import FastenersLockFactory
    with FastenersLockFactory().try_lock(sys.argv[1]) as taken:
        print("held" if taken else "busy", flush=True)
        sys.stdin.readline()
    """
)
ASK = "import sys; from adapters.store.lock import FastenersLockFactory as F; "
ASK += "print(F().is_held(sys.argv[1]))"


def ask_from_another_process(path: Path) -> str:
    asked = subprocess.run(
        [sys.executable, "-c", ASK, str(path)], capture_output=True, text=True, check=True
    )
    return asked.stdout.strip()


def test_a_lock_held_by_another_process_is_seen_and_left_held(tmp_path: Path) -> None:
    path = tmp_path / "squad" / ".driver.lock"
    locks = FastenersLockFactory()
    assert locks.is_held(str(path)) is False, "no lock file: nobody holds it"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        assert locks.is_held(str(path)) is True
        with locks.try_lock(str(path)) as taken:
            assert not taken, "asking did not take it"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert locks.is_held(str(path)) is False
    assert path.exists(), "asking never removes the lock file"


def test_asking_in_the_holding_process_keeps_its_hold(tmp_path: Path) -> None:
    path = tmp_path / ".driver.lock"
    locks = FastenersLockFactory()
    with locks.try_lock(str(path)) as taken:
        assert taken
        assert locks.is_held(str(path)) is True
        # POSIX would drop this process's lock if the query closed a descriptor of the file.
        assert ask_from_another_process(path) == "True"
    assert ask_from_another_process(path) == "False"


def test_the_fake_answers_from_what_it_holds() -> None:
    locks = FakeLockFactory(held_elsewhere={"/other"})
    assert locks.is_held("/other") is True
    assert locks.is_held("/free") is False
    with locks.try_lock("/mine") as taken:
        assert taken
        assert locks.is_held("/mine") is True
    assert locks.queried == ["/other", "/free", "/mine"]
