"""``ShellCheck``: a mode's check command run for real, its exit status, its output capped at
16 KiB, its working directory, and its whole process group stopped at the bound."""

from __future__ import annotations

import time
from pathlib import Path

from adapters.system.check_command import CHECK_OUTPUT_CAP_BYTES, ShellCheck


def test_the_exit_status_and_merged_output_are_reported(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("here")
    found = ShellCheck()("cat marker.txt; echo oops >&2; exit 3", str(tmp_path), 10_000)
    assert found.exit_code == 3
    assert not found.passed
    assert found.output == "hereoops\n"
    assert (found.cut, found.timed_out, found.start_error) == (False, False, None)
    assert ShellCheck()("true", str(tmp_path), 10_000).passed


def test_output_past_the_cap_is_cut_and_drained(tmp_path: Path) -> None:
    found = ShellCheck()("head -c 1000000 /dev/zero | tr '\\0' x", str(tmp_path), 30_000)
    assert found.exit_code == 0
    assert len(found.output) == CHECK_OUTPUT_CAP_BYTES
    assert found.cut


def test_a_command_past_its_bound_is_stopped_with_what_it_left_behind(tmp_path: Path) -> None:
    started = time.monotonic()
    found = ShellCheck()("sleep 60 & echo started; sleep 60", str(tmp_path), 300)
    assert time.monotonic() - started < 10, "the background sleep held nothing open"
    assert (found.exit_code, found.timed_out) == (None, True)
    assert found.output == "started\n"


def test_a_missing_working_directory_is_a_start_error(tmp_path: Path) -> None:
    found = ShellCheck()("true", str(tmp_path / "missing"), 1000)
    assert found.exit_code is None
    assert found.start_error
