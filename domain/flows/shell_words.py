"""A bash command line cut into simple commands and their words, for the ``bash-ro`` screen.

Deliberately narrower than bash: anything whose meaning depends on an expansion the screen
cannot see is refused, never interpreted (pi-flows' list, flows-brief §6): ``$`` and backticks
outside single quotes (parameter, arithmetic and command substitution), ``<(``/``>(``,
backslashes, ``{``/``}``, glob characters ``* ? [``, parentheses, here-documents, ``<>``, and an
unterminated quote. A ``>`` redirection is kept only as ``N>&M`` or into ``/dev/null``.
Commands are separated by ``&& || ; | &`` and newlines; an empty command is refused.
"""

from __future__ import annotations

import attrs

# Outside quotes, these are refused wherever they appear.
_REFUSED = {
    "$": "`$` (a parameter, arithmetic or command substitution)",
    "`": "a backtick command substitution",
    "\\": "a backslash",
    "{": "`{` (a brace expansion or group)",
    "}": "`}` (a brace expansion or group)",
    "*": "a glob `*`",
    "?": "a glob `?`",
    "[": "a glob `[`",
    "(": "`(` (a subshell or process substitution)",
    ")": "`)` (a subshell or process substitution)",
}
_SEPARATORS = ";|&\n"
_SPACE = " \t"
DEV_NULL = "/dev/null"


class ShellRefusal(Exception):
    """The command line uses a construct the screen does not admit."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@attrs.frozen
class Word:
    """One word with its quotes removed; ``quoted`` when any part of it was quoted."""

    text: str
    quoted: bool


def simple_commands(line: str) -> tuple[tuple[Word, ...], ...]:
    """The simple commands of ``line`` (redirections that passed are dropped), or
    ``ShellRefusal``."""
    return _Scanner(line).commands()


class _Scanner:
    def __init__(self, line: str) -> None:
        self._line = line
        self._at = 0
        self._commands: list[tuple[Word, ...]] = []
        self._words: list[Word] = []
        self._word: list[str] | None = None
        self._quoted = False

    def commands(self) -> tuple[tuple[Word, ...], ...]:
        line = self._line
        while self._at < len(line):
            char = line[self._at]
            if char == "'":
                self._single_quoted()
            elif char == '"':
                self._double_quoted()
            elif char in _REFUSED:
                raise ShellRefusal(f"{_REFUSED[char]} is not admitted")
            elif char in _SPACE:
                self._end_word()
                self._at += 1
            elif char == ">" or (char == "&" and line.startswith("&>", self._at)):
                self._output_redirection()
            elif char == "<":
                self._input_redirection()
            elif char in _SEPARATORS:
                self._separator()
            else:
                self._append(char)
                self._at += 1
        self._end_command()
        return tuple(self._commands)

    # -- words ------------------------------------------------------------------------------

    def _append(self, text: str, *, quoted: bool = False) -> None:
        if self._word is None:
            self._word = []
            self._quoted = False
        self._word.append(text)
        self._quoted = self._quoted or quoted

    def _end_word(self) -> None:
        if self._word is not None:
            self._words.append(Word("".join(self._word), self._quoted))
            self._word = None

    def _end_command(self) -> None:
        self._end_word()
        if not self._words:
            raise ShellRefusal("an empty command (a separator with nothing on one side)")
        self._commands.append(tuple(self._words))
        self._words = []

    def _single_quoted(self) -> None:
        end = self._line.find("'", self._at + 1)
        if end < 0:
            raise ShellRefusal("an unterminated single quote")
        self._append(self._line[self._at + 1 : end], quoted=True)
        self._at = end + 1

    def _double_quoted(self) -> None:
        end = self._line.find('"', self._at + 1)
        if end < 0:
            raise ShellRefusal("an unterminated double quote")
        inside = self._line[self._at + 1 : end]
        for char in "$`\\":
            if char in inside:
                raise ShellRefusal(f"`{char}` inside double quotes is not admitted")
        self._append(inside, quoted=True)
        self._at = end + 1

    def _separator(self) -> None:
        line = self._line
        two = line[self._at : self._at + 2]
        self._end_command()
        self._at += 2 if two in ("&&", "||") else 1

    # -- redirections -------------------------------------------------------------------------

    def _output_redirection(self) -> None:
        line = self._line
        # ``2>``: the digits just before belong to the operator, not to a word.
        if self._word is not None and "".join(self._word).isdigit() and not self._quoted:
            self._word = None
        start = self._at
        if line.startswith("&>", start):
            self._at += 3 if line.startswith("&>>", start) else 2
        else:
            self._at += 2 if line.startswith(">>", start) else 1
        following = line[self._at : self._at + 1]
        if following == "(":
            raise ShellRefusal("a process substitution `>(` is not admitted")
        if following == "|":
            raise ShellRefusal("a `>|` redirection (a write) is not admitted")
        if following == "&" and line[start] == ">":
            digits = self._digits(self._at + 1)
            if not digits:
                raise ShellRefusal("a `>&` redirection that is not `N>&M` is not admitted")
            self._at += 1 + len(digits)
            return
        target = self._target()
        if target != DEV_NULL:
            raise ShellRefusal(f"an output redirection to a file (only `>{DEV_NULL}` is admitted)")

    def _input_redirection(self) -> None:
        line = self._line
        following = line[self._at + 1 : self._at + 2]
        if following in ("(", "<", ">"):
            raise ShellRefusal(f"`<{following}` is not admitted")
        if self._word is not None and "".join(self._word).isdigit() and not self._quoted:
            self._word = None
        self._at += 1
        if following == "&":
            digits = self._digits(self._at + 1)
            if not digits:
                raise ShellRefusal("a `<&` redirection that is not `N<&M` is not admitted")
            self._at += 1 + len(digits)
            return
        self._target()  # a file read: its name is not an argument

    def _digits(self, at: int) -> str:
        end = at
        while end < len(self._line) and self._line[end].isdigit():
            end += 1
        return self._line[at:end]

    def _target(self) -> str:
        """The redirection's file name: one plain word (a quoted or expanded one is refused)."""
        self._end_word()
        line = self._line
        while self._at < len(line) and line[self._at] in _SPACE:
            self._at += 1
        start = self._at
        stops = _SPACE + _SEPARATORS + "<>'\"" + "".join(_REFUSED)
        while self._at < len(line) and line[self._at] not in stops:
            self._at += 1
        if self._at < len(line) and line[self._at] in "'\"" + "".join(_REFUSED):
            raise ShellRefusal("a redirection target must be a plain file name")
        if self._at == start:
            raise ShellRefusal("a redirection without a target")
        return line[start : self._at]
