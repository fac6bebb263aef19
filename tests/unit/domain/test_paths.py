"""Native absolute-path rules (contract §3 artifact paths, §5 source and destination paths)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.errors import ArtifactError, ErrorCode, SpecError
from domain.paths import (
    PathFlavour,
    PathRuleError,
    absolute_path_problem,
    check_artifact_path,
    is_beneath,
    is_immediate_child,
    is_native_absolute,
    join_path,
    normalise_for_access,
    resolve_against,
)

# ---- which strings are native absolute ----------------------------------------------------

POSIX_ABSOLUTE = ["/", "/x", "/a/b/c.json", "//x", "/a/../b", "/a/./b/", "/ünï/código.json"]
POSIX_REFUSED = ["", "x", "./x", "../x", "a/b", "\\x", "C:\\x", "C:/x", "/a\x00b", "~/x"]

WINDOWS_ABSOLUTE = [
    "C:\\x",
    "c:\\x",
    "C:/x",
    "C:\\",
    "C:/",
    "Z:\\a\\b\\c.json",
    "C:\\a/b\\c",
    "\\\\server\\share\\x",
    "\\\\server\\share",
    "\\\\server\\share\\",
    "//server/share/x",
    "\\/server/share\\x",
    "\\\\?\\C:\\x",
    "\\\\?\\C:\\",
    "\\\\?\\c:\\long\\path.json",
    "\\\\?\\UNC\\server\\share\\x",
    "\\\\?\\unc\\server\\share",
]
WINDOWS_REFUSED = {
    "": "empty",
    "x": "relative",
    ".\\x": "relative",
    "..\\x": "relative",
    "a/b": "relative",
    "C:": "drive-relative",
    "C:foo": "drive-relative",
    "C:..\\foo": "drive-relative",
    "\\foo": "rooted without a drive",
    "/foo": "rooted without a drive",
    "\\": "rooted without a drive",
    "\\\\server": "UNC",
    "\\\\server\\": "UNC",
    "\\\\\\share\\x": "UNC",
    "\\\\.\\C:\\x": "device-namespace",
    "\\\\.\\pipe\\name": "device-namespace",
    "//?/C:/x": "device-namespace",
    "\\\\?\\C:": "verbatim",
    "\\\\?\\Volume{01234567-89ab-cdef-0123-456789abcdef}\\x": "verbatim",
    "\\\\?\\GLOBALROOT\\Device\\x": "verbatim",
    "\\\\?\\UNC\\server": "verbatim UNC",
    "\\\\?\\C:\\a/b": "'/'",
    "\\\\?\\C:\\a\\..\\b": "'..'",
    "\\\\?\\C:\\a\\.\\b": "'.'",
    "\\\\?\\C:\\a\\\\b": "empty",
    "C:\\file.txt:stream": "alternate data stream",
    "\\\\server\\share\\f:stream": "alternate data stream",
    "C:\\a\x00b": "NUL",
    "C:\\a\ud800": "surrogate",
}


@pytest.mark.parametrize("path", POSIX_ABSOLUTE)
def test_posix_path_with_leading_slash_is_absolute(path: str) -> None:
    assert is_native_absolute(path, "posix")


@pytest.mark.parametrize("path", POSIX_REFUSED)
def test_posix_path_without_leading_slash_or_with_nul_is_refused(path: str) -> None:
    assert not is_native_absolute(path, "posix")


@pytest.mark.parametrize("path", WINDOWS_ABSOLUTE)
def test_windows_drive_rooted_unc_and_verbatim_paths_are_absolute(path: str) -> None:
    assert absolute_path_problem(path, "windows") is None


@pytest.mark.parametrize(("path", "reason"), WINDOWS_REFUSED.items())
def test_windows_path_is_refused_with_a_reason_naming_the_rule(path: str, reason: str) -> None:
    problem = absolute_path_problem(path, "windows")
    assert problem is not None
    assert reason in problem


@pytest.mark.parametrize("flavour", ["posix", "windows"])
def test_nul_and_empty_are_refused_in_both_flavours(flavour: PathFlavour) -> None:
    assert absolute_path_problem("", flavour) == "it is empty"
    problem = absolute_path_problem("/a\x00" if flavour == "posix" else "C:\\a\x00", flavour)
    assert problem is not None
    assert "NUL" in problem


def test_posix_rules_do_not_accept_windows_forms_and_vice_versa() -> None:
    assert not is_native_absolute("C:\\x", "posix")
    assert not is_native_absolute("\\\\server\\share\\x", "posix")
    assert not is_native_absolute("/x", "windows")


# ---- the artifact-path error ----------------------------------------------------------------


def test_drive_relative_artifact_path_raises_artifact_path_invalid() -> None:
    with pytest.raises(ArtifactError) as caught:
        check_artifact_path("C:secret-name.bin", "windows", artifact_id="log-1")
    assert caught.value.code is ErrorCode.ARTIFACT_PATH_INVALID
    assert 'artifact "log-1" path' in caught.value.message
    assert "17 UTF-8 bytes" in caught.value.message
    assert "drive-relative" in caught.value.message


@pytest.mark.parametrize(
    ("path", "flavour"),
    [("relative/secret", "posix"), ("secret\x00", "posix"), ("\\secret", "windows")],
)
def test_artifact_path_error_never_echoes_the_path(path: str, flavour: PathFlavour) -> None:
    with pytest.raises(ArtifactError) as caught:
        check_artifact_path(path, flavour, artifact_id="a")
    assert "secret" not in str(caught.value)


def test_artifact_id_outside_its_pattern_is_not_echoed() -> None:
    with pytest.raises(ArtifactError) as caught:
        check_artifact_path("x", "posix", artifact_id="bad id <script>")
    assert "<script>" not in caught.value.message
    assert caught.value.message.startswith("artifact path (")


def test_artifact_path_length_counts_utf8_bytes() -> None:
    with pytest.raises(ArtifactError) as caught:
        check_artifact_path("ü", "posix")
    assert "(2 UTF-8 bytes)" in caught.value.message


@pytest.mark.parametrize(
    ("path", "flavour"),
    [("/x", "posix"), ("/a/b", "posix"), *((path, "windows") for path in WINDOWS_ABSOLUTE)],
)
def test_a_native_absolute_artifact_path_passes(path: str, flavour: PathFlavour) -> None:
    check_artifact_path(path, flavour, artifact_id="a")


# ---- normalisation for access --------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "flavour", "expected"),
    [
        ("/", "posix", "/"),
        ("/a/b", "posix", "/a/b"),
        ("/a/b/", "posix", "/a/b"),
        ("//a//b", "posix", "/a/b"),
        ("/a/./b", "posix", "/a/b"),
        ("/a/../b", "posix", "/b"),
        ("/../../a", "posix", "/a"),
        ("/a/b/..", "posix", "/a"),
        ("C:/a/b", "windows", "C:\\a\\b"),
        ("c:\\a\\b\\", "windows", "c:\\a\\b"),
        ("C:\\a\\.\\b", "windows", "C:\\a\\b"),
        ("C:\\a\\..\\..\\b", "windows", "C:\\b"),
        ("C:\\", "windows", "C:\\"),
        ("C:/", "windows", "C:\\"),
        ("//server/share/a/./b/", "windows", "\\\\server\\share\\a\\b"),
        ("\\\\server\\share\\..\\x", "windows", "\\\\server\\share\\x"),
        ("\\\\server\\share", "windows", "\\\\server\\share\\"),
        ("\\\\?\\C:\\Long\\Path", "windows", "\\\\?\\C:\\Long\\Path"),
        ("\\\\?\\C:\\Long\\", "windows", "\\\\?\\C:\\Long"),
        ("\\\\?\\UNC\\s\\sh\\x", "windows", "\\\\?\\UNC\\s\\sh\\x"),
    ],
)
def test_normalisation_folds_dots_lexically_and_uses_the_flavour_separator(
    path: str, flavour: PathFlavour, expected: str
) -> None:
    assert normalise_for_access(path, flavour) == expected


def test_normalising_a_relative_path_is_a_rule_error() -> None:
    with pytest.raises(PathRuleError, match="relative"):
        normalise_for_access("a/b", "posix")


# ---- resolving the specFile against ctx.cwd --------------------------------------------------


@pytest.mark.parametrize(
    ("cwd", "path", "flavour", "expected"),
    [
        ("/work", "spec.json", "posix", "/work/spec.json"),
        ("/work", "./spec.json", "posix", "/work/spec.json"),
        ("/work/sub", "../spec.json", "posix", "/work/spec.json"),
        ("/work", "a//b/", "posix", "/work/a/b"),
        ("/work", "/abs/spec.json", "posix", "/abs/spec.json"),
        ("/", "../../x", "posix", "/x"),
        ("C:\\work", "spec.json", "windows", "C:\\work\\spec.json"),
        ("C:\\work", "sub/spec.json", "windows", "C:\\work\\sub\\spec.json"),
        ("C:\\work\\sub", "..\\spec.json", "windows", "C:\\work\\spec.json"),
        ("C:\\work", "D:\\abs\\spec.json", "windows", "D:\\abs\\spec.json"),
        ("C:\\work", "\\spec.json", "windows", "C:\\spec.json"),
        ("\\\\srv\\sh\\work", "\\spec.json", "windows", "\\\\srv\\sh\\spec.json"),
        ("c:\\work", "C:spec.json", "windows", "c:\\work\\spec.json"),
        ("\\\\?\\C:\\work", "sub\\..\\spec.json", "windows", "\\\\?\\C:\\work\\spec.json"),
    ],
)
def test_relative_spec_file_resolves_against_cwd(
    cwd: str, path: str, flavour: PathFlavour, expected: str
) -> None:
    assert resolve_against(cwd, path, flavour) == expected


@pytest.mark.parametrize(
    ("cwd", "path", "flavour", "reason"),
    [
        ("/work", "a\x00b", "posix", "NUL"),
        ("/work", "", "posix", "empty"),
        ("work", "spec.json", "posix", "working directory"),
        ("C:\\work", "D:spec.json", "windows", "drive-relative"),
        ("\\\\srv\\sh", "C:spec.json", "windows", "drive-relative"),
        ("C:\\work", "\\\\.\\pipe\\x", "windows", "device-namespace"),
        ("C:\\work", "a:stream", "windows", "drive-relative"),
        ("C:\\work", "sub\\f:stream", "windows", "alternate data stream"),
        ("C:work", "spec.json", "windows", "working directory"),
    ],
)
def test_unresolvable_spec_file_is_spec_malformed_naming_the_rule(
    cwd: str, path: str, flavour: PathFlavour, reason: str
) -> None:
    with pytest.raises(SpecError, match=reason) as caught:
        resolve_against(cwd, path, flavour)
    assert caught.value.code is ErrorCode.SPEC_MALFORMED
    assert "specFile (" in caught.value.message


def test_unresolvable_spec_file_message_never_echoes_the_path() -> None:
    with pytest.raises(SpecError) as caught:
        resolve_against("C:\\work", "D:secret-plan.json", "windows")
    assert "secret" not in str(caught.value)


# ---- destination assertions (§5) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("root", "candidate", "flavour", "expected"),
    [
        ("/squads", "/squads/abc", "posix", True),
        ("/squads/", "/squads/abc/", "posix", True),
        ("/squads", "/squads/x/../abc", "posix", True),
        ("/squads", "/squads/abc/def", "posix", False),
        ("/squads", "/squads", "posix", False),
        ("/squads", "/squads/.", "posix", False),
        ("/squads", "/squads/abc/..", "posix", False),
        ("/squads", "/squads/../abc", "posix", False),
        ("/squads", "/squadsabc", "posix", False),
        ("/squads", "/Squads/abc", "posix", False),
        ("/squads", "squads/abc", "posix", False),
        ("squads", "squads/abc", "posix", False),
        ("C:\\squads", "C:\\squads\\abc", "windows", True),
        ("C:\\squads", "c:/SQUADS/abc/", "windows", True),
        ("C:\\squads\\", "C:\\squads\\abc", "windows", True),
        ("\\\\?\\C:\\squads", "C:\\squads\\abc", "windows", True),
        ("\\\\srv\\sh\\squads", "\\\\?\\UNC\\SRV\\sh\\squads\\abc", "windows", True),
        ("C:\\squads", "C:\\squads\\abc\\def", "windows", False),
        ("C:\\squads", "C:\\squads\\..\\abc", "windows", False),
        ("C:\\squads", "D:\\squads\\abc", "windows", False),
        ("C:\\squads", "\\\\srv\\sh\\squads\\abc", "windows", False),
        ("C:\\squads", "C:abc", "windows", False),
        ("C:\\squads", "\\squads\\abc", "windows", False),
    ],
)
def test_immediate_child_is_exactly_one_name_inside_after_normalisation(
    root: str, candidate: str, flavour: PathFlavour, expected: bool
) -> None:
    assert is_immediate_child(root, candidate, flavour) is expected


def test_windows_case_folding_is_per_character_like_ntfs() -> None:
    # Full Unicode upper-casing turns ß into SS; NTFS maps one character to one character.
    assert is_immediate_child("C:\\straße", "C:\\STRAßE\\x", "windows")
    assert not is_immediate_child("C:\\straße", "C:\\STRASSE\\x", "windows")


@pytest.mark.parametrize(
    ("directory", "candidate", "flavour", "expected"),
    [
        ("/r/sq", "/r/sq/spec/spec.v1.json", "posix", True),
        ("/r/sq", "/r/sq/spec/../../sq2/spec.v1.json", "posix", False),
        ("/r/sq", "/r/sq", "posix", False),
        ("/r/sq", "/r/sq2/x", "posix", False),
        ("/", "/x", "posix", True),
        ("C:\\r\\sq", "C:\\R\\SQ\\spec\\spec.v1.json", "windows", True),
        ("C:\\r\\sq", "C:\\r\\sq\\..\\sq2\\x", "windows", False),
        ("C:\\", "C:\\x", "windows", True),
        ("C:\\r", "D:\\r\\x", "windows", False),
    ],
)
def test_is_beneath_means_a_proper_descendant_after_normalisation(
    directory: str, candidate: str, flavour: PathFlavour, expected: bool
) -> None:
    assert is_beneath(directory, candidate, flavour) is expected


# ---- joining validated names ---------------------------------------------------------------


def test_join_path_uses_the_flavour_separator_and_keeps_the_base_spelling() -> None:
    assert join_path("/r/", "sq", "spec", flavour="posix") == "/r/sq/spec"
    assert join_path("C:/r", "sq", flavour="windows") == "C:/r\\sq"
    assert join_path("C:\\", "sq", flavour="windows") == "C:\\sq"


@pytest.mark.parametrize(
    ("name", "flavour"),
    [
        ("..", "posix"),
        (".", "posix"),
        ("", "posix"),
        ("a/b", "posix"),
        ("a\x00", "posix"),
        ("a\\b", "windows"),
        ("a/b", "windows"),
        ("a:b", "windows"),
    ],
)
def test_join_path_refuses_names_that_could_leave_the_base(name: str, flavour: PathFlavour) -> None:
    base = "/r" if flavour == "posix" else "C:\\r"
    with pytest.raises(PathRuleError, match="name to join"):
        join_path(base, name, flavour=flavour)


# ---- properties ------------------------------------------------------------------------------

_NAME = st.text(alphabet="abcXYZ.-_é ", min_size=1, max_size=6).filter(
    lambda n: n not in {".", ".."}
)
_SEGMENT = st.one_of(_NAME, st.sampled_from([".", "..", ""]))


@given(st.lists(_SEGMENT, max_size=8))
def test_posix_normalisation_is_idempotent_and_stays_absolute(segments: list[str]) -> None:
    path = "/" + "/".join(segments)
    once = normalise_for_access(path, "posix")
    assert normalise_for_access(once, "posix") == once
    assert once.startswith("/")
    assert "/../" not in once + "/"
    assert "//" not in once


@given(st.lists(_SEGMENT, max_size=8), st.sampled_from(["C:\\", "c:/", "\\\\srv\\sh\\"]))
def test_windows_normalisation_is_idempotent(segments: list[str], anchor: str) -> None:
    path = anchor + "\\".join(segments)
    once = normalise_for_access(path, "windows")
    assert normalise_for_access(once, "windows") == once
    assert "/" not in once


@given(st.lists(_NAME, max_size=4), _NAME, st.sampled_from(["posix", "windows"]))
def test_joined_name_is_always_an_immediate_child(
    parents: list[str], name: str, flavour: PathFlavour
) -> None:
    root = join_path("/" if flavour == "posix" else "C:\\", *parents, flavour=flavour)
    child = join_path(root, name, flavour=flavour)
    assert is_immediate_child(root, child, flavour)
    assert is_beneath(root, join_path(child, "spec", flavour=flavour), flavour)
    assert not is_immediate_child(child, root, flavour)


@given(st.lists(_SEGMENT, max_size=8))
def test_a_path_climbing_with_dotdot_is_never_beneath_a_sibling(segments: list[str]) -> None:
    candidate = "/r/sq/" + "/".join(segments)
    normalised = normalise_for_access(candidate, "posix")
    expected = normalised.startswith("/r/sq/")
    assert is_beneath("/r/sq", candidate, "posix") is expected
