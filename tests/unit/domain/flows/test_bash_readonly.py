"""The ``bash-ro`` read-only screen: a corpus of inspection commands is admitted, and no command
line with a write operator, a write-capable command or an unscreenable expansion ever is."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.flows.bash_readonly import INSPECTORS, screen

READ_ONLY = [
    "ls",
    "ls -la src",
    "cat README.md | head -20",
    "grep -rn 'def main' . 2>/dev/null",
    "rg --line-number TODO src",
    "find . -type f -name '*.py'",
    "find src -maxdepth 2 -print",
    "git status --short",
    "git log --oneline -20",
    "git diff HEAD~1 -- docs",
    "git show HEAD:README.md",
    "git --no-pager log -3",
    "git branch -a",
    "git branch --list 'feat*'",
    "git tag -l",
    "git remote -v",
    "git reflog",
    "git blame -L 10,20 domain/errors.py",
    "sed -n '10,20p' file.txt",
    "sed -n 5q notes",
    "wc -l a b c && head -3 a",
    "cd src && ls",
    "tail -n 50 log.txt",
    "sort -n numbers | uniq -c",
    "du -sh . ; df -h",
    "echo \"a > b\" 'and $HOME' ok",
    "stat -c %s file >/dev/null 2>&1",
    "date -u +%Y",
    "date -d yesterday",
    "env",
    "npm test",
    "npm run lint",
    "node --test",
    "node --test tests/a.test.mjs",
    "cat < input.txt",
    "ls &>/dev/null || echo missing",
    "diff -u a b",
]

BLOCKED = [
    "echo x > file",
    "echo x >> file",
    "ls >| f",
    "ls 2> err.txt",
    "ls &> out",
    "ls | tee out",
    "ls; rm -rf build",
    "ls && touch x",
    "ls || mv a b",
    "ls & cp a b",
    "cat $(touch x)",
    "cat `touch x`",
    'echo "$(touch x)"',
    "echo ${HOME}",
    "X=1 ls",
    "PATH=/tmp ls",
    "cat <(touch x)",
    "diff >(cat) a",
    "cat <<EOF",
    "cat <> f",
    "ls *.py",
    "ls a?",
    "ls [ab]",
    "ls {a,b}",
    "(touch x)",
    "ls \\; touch x",
    "echo 'unterminated",
    'echo "unterminated',
    "sed -i s/a/b/ f",
    "sed --in-place=.bak s/a/b/ f",
    "sed 's/a/b/w out' f",
    "sed -n '1e touch x' f",
    "find . -delete",
    "find . -exec rm {} +",
    "find . -execdir rm x ;",
    "find . -fprint out",
    "find . -fprintf out %p",
    "find . -fls out",
    "find . -ok rm x ;",
    "git commit -m x",
    "git checkout main",
    "git branch new-branch",
    "git branch -D old",
    "git tag v1",
    "git remote add x y",
    "git reflog expire --all",
    "git diff --output=x",
    "git diff --outp=x",
    "git log -c",
    "git -c core.pager=sh log",
    "git grep -Ovim x",
    "git diff --ext-diff",
    "git format-patch -1",
    "sort -o out in",
    "sort -rno out in",
    "sort --out=x in",
    "uniq in out",
    "date -s 2020-01-01",
    "date 010100002020",
    "file -C -m magic",
    "rg --pre sh x",
    "env rm x",
    "npm install",
    "node -e 'require(1)'",
    "node --test -e 'require(1)'",
    "node --test --test-reporter-destination=out",
    "npm run --prefix x",
    "npm test -- --watch",
    "tail -f log",
    "rm x",
    "touch x",
    "/bin/rm x",
    "./script.sh",
    "python -c 'open(1)'",
    "bash -c ls",
    "",
    "   ",
    "ls ;",
    "; ls",
    "ls\nrm x",
]


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only_commands_are_admitted(command: str) -> None:
    verdict = screen(command)
    assert verdict.admitted, verdict.reason


@pytest.mark.parametrize("command", BLOCKED)
def test_write_capable_or_unscreenable_commands_are_blocked_with_a_reason(command: str) -> None:
    verdict = screen(command)
    assert not verdict.admitted
    assert verdict.reason.startswith("bash-ro: blocked, not a read-only command: ")


@pytest.mark.parametrize("command", [None, 3, ["ls"], {"command": "ls"}])
def test_a_command_that_is_not_a_string_is_blocked(command: object) -> None:
    assert not screen(command).admitted


# -- properties ------------------------------------------------------------------------------

_NAMES = st.from_regex(r"[a-z][a-z0-9_.-]{0,8}", fullmatch=True)
# Quoted words never start with ``-``: a quoted ``'-o'`` is still an option to the command.
_QUOTED = st.text(alphabet=st.characters(exclude_characters="'"), max_size=12).map(
    lambda text: f"'x{text}'"
)
_ARGS = st.lists(st.one_of(_NAMES, _QUOTED, st.sampled_from(["-l", "-n", "-rn", "--"])), max_size=4)
_READERS = st.sampled_from(
    ["ls", "cat", "head", "tail", "wc", "grep", "rg", "stat", "du", "cut", "echo", "diff"]
)
_GIT = st.sampled_from(["git log", "git diff", "git show", "git status", "git ls-files"])
_REDIRECTS = st.sampled_from(["", " 2>/dev/null", " >/dev/null", " 2>&1", " >>/dev/null"])
_SEGMENT = st.builds(
    lambda name, args, redirect: " ".join([name, *args]) + redirect,
    st.one_of(_READERS, _GIT),
    _ARGS,
    _REDIRECTS,
)
_JOINERS = st.sampled_from([" && ", " || ", "; ", " | ", "\n"])


@st.composite
def read_only_lines(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    segments = draw(st.lists(_SEGMENT, min_size=1, max_size=4))
    joiners = [draw(_JOINERS) for _ in segments[1:]]
    return segments, joiners


def _join(segments: list[str], joiners: list[str]) -> str:
    line = segments[0]
    for joiner, segment in zip(joiners, segments[1:], strict=True):
        line += joiner + segment
    return line


WRITES = [
    " > out.txt",
    " >> out.txt",
    " >out",
    " 1> out",
    " &> out",
    " >| out",
    " | tee out",
    "; rm -rf x",
    " && touch x",
    " || mv a b",
    " & cp a b",
    " $(touch x)",
    " `touch x`",
    ' "$(touch x)"',
    " >(cat)",
    "; sed -i s/a/b/ f",
    "; find . -delete",
    "; git branch new",
    "; sort -o x y",
    "\nX=1 ls",
    "; dd of=x",
]


@settings(max_examples=300, deadline=None)
@given(line=read_only_lines())
def test_a_fuzzed_corpus_of_read_only_lines_is_admitted(
    line: tuple[list[str], list[str]],
) -> None:
    command = _join(*line)
    verdict = screen(command)
    assert verdict.admitted, (command, verdict.reason)


@settings(max_examples=300, deadline=None)
@given(
    line=read_only_lines(),
    write=st.sampled_from(WRITES),
    where=st.integers(min_value=0, max_value=8),
)
def test_no_line_with_a_write_operator_is_ever_admitted(
    line: tuple[list[str], list[str]], write: str, where: int
) -> None:
    segments, joiners = line
    at = where % len(segments)
    segments = [*segments[:at], segments[at] + write, *segments[at + 1 :]]
    command = _join(segments, joiners)
    assert not screen(command).admitted, command


_ALPHABET = "lscatgrpe -'\">|&;$`()<2/dvnul\n\\*x="
# What may stay once quoted text and the admitted redirections are taken out.
_QUOTED_TEXT = re.compile(r"'[^']*'|\"[^\"]*\"")
_HARMLESS_REDIRECTS = re.compile(r"[0-9]*>&[0-9]+|[0-9]*<&[0-9]+|&?>>?\s*/dev/null")
# An input redirection and the file it reads (``rg<2`` runs rg on the file 2); a ``<>`` keeps
# its ``>``, which the oracle then refuses.
_INPUT_REDIRECTS = re.compile(r"[0-9]*<(?![<>&])\s*[^\s<>;|&()]*")


@settings(max_examples=500, deadline=None)
@given(command=st.text(alphabet=_ALPHABET, max_size=30))
def test_whatever_is_admitted_holds_no_unquoted_write_or_expansion(command: str) -> None:
    """Random text over the shell's special characters: an admitted line never keeps, outside
    quotes, a ``>`` other than into /dev/null or between descriptors, a ``$``, a backtick, a
    backslash or a parenthesis; and every command it runs is an admitted one."""
    if not screen(command).admitted:
        return
    bare = _HARMLESS_REDIRECTS.sub(" ", _QUOTED_TEXT.sub("q", command))
    assert not set(bare) & set(">$`\\()"), command
    for segment in re.split(r"&&|\|\||[;|&\n]", _INPUT_REDIRECTS.sub(" ", bare)):
        words = segment.split()
        assert words, command
        assert words[0] in INSPECTORS | {"git", "find", "sed", "env", "npm", "node", "q"}, command
