"""What the handoff guard (``domain.flows.handoff``) sees in a payload: invisible and bidi code
points stripped, the text normalised for matching, and the high-signal markers found.

Three steps, each pure:

* :func:`strip_invisible` removes every code point a reader cannot see: C0/C1 controls other
  than tab, line feed and carriage return; every format character (general category ``Cf``:
  zero-width spaces and joiners, bidi embeddings, overrides and isolates, the BOM, tag
  characters); lone surrogates; and Unicode's other default-ignorable code points (variation
  selectors, Hangul fillers, the combining grapheme joiner). They are a classic carrier for
  hidden instructions and cost a reader nothing, so they never cross. A test checks every code
  point of this Python's Unicode database, not a sample.
* :func:`smuggling_markers` looks at the raw text for the invisible carriers that have no
  benign use in an agent's answer: bidi controls, tag characters, and runs of variation
  selectors or zero-width characters (a lone joiner inside an emoji is not flagged).
* :func:`text_markers` matches instruction-override and exfiltration patterns on the
  normalised text (:func:`normalise`: NFKC, case-folded, Cyrillic and Greek look-alikes folded
  to Latin, runs of spaces collapsed), so full-width letters, homoglyphs and odd spacing do not
  hide a phrase.

Best effort by shape, like ``redactSecrets``: the measured block and false-positive rates over
a fixed corpus are in docs/flows.md. Every pattern has a bounded width (at most
:data:`MAX_MARKER_WIDTH` characters, checked by a test), which is what lets the guard keep
only a bounded window of each earlier handoff and still see every match that joins them.
"""

from __future__ import annotations

import re
import unicodedata

# Controls other than tab, LF, CR; every Cf of Unicode 14 (Python 3.11); lone surrogates; and
# the default-ignorable code points that are not Cf (DerivedCoreProperties.txt).
_INVISIBLE = re.compile(
    "["
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ud800-\udfff\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
    "]"
)

_SMUGGLING: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Trojan-source reordering: embeddings, overrides and isolates.
    ("bidi_control", re.compile("[\u202a-\u202e\u2066-\u2069]")),
    # ASCII spelled in invisible tag characters.
    ("tag_characters", re.compile("[\U000e0000-\U000e007f]")),
    # Bytes hidden as variation selectors: one after a base character is ordinary (an emoji's
    # presentation), two in a row never are.
    ("variation_selector_run", re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2,}")),
    # Binary hidden as zero-width characters: one joiner inside an emoji is ordinary.
    ("zero_width_run", re.compile("[\u200b-\u200d\u2060\ufeff]{4,}")),
)

# Look-alikes a phrase can be spelled with so that a Latin pattern misses it (scan only: the
# payload that crosses keeps its own letters).
_CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁԍһԛѵԝкмтвнɡαεικνορτυχ",
    "aeopcyxijsdghqvwkmtbhgaeikvoptux",
)
_SPACES = re.compile(r"[^\S\n]+")
_LINES = re.compile(r" ?\n[\s]*")

# A gap between two words of one phrase: the same sentence and line, a bounded distance. A
# full stop followed by a non-space (a path, a file or host name) does not end the sentence.
_G = r"(?:[^.!?\n]|[.!?](?=\S)){0,%d}?"


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_OVERRIDE_VERBS = r"(?:ignore|disregard|forget|override|bypass|discard|abandon)"
_QUALIFIERS = (
    r"(?:previous|prior|earlier|above|preceding|foregoing|original|initial|all|your|system"
    r"|safety|developer)"
)
_RULES = (
    r"(?:instructions?|prompts?|rules|directives?|guidelines|guardrails|constraints"
    r"|system message|programming|orders)"
)
_EXFIL_VERBS = (
    r"(?:reveal|print|output|repeat|dump|leak|exfiltrate|send|post|upload|e-?mail|forward"
    r"|transmit|share|paste|disclose|expose|echo)"
)
_SENSITIVE = (
    r"(?:system prompt|secrets?|credentials?|api[ _-]?keys?|(?:access|auth|bearer|session"
    r"|refresh|github|npm|aws) tokens?|passwords?|passphrases?|environment variables|env vars?"
    r"|\.env\b|ssh keys?|private keys?|id_rsa|id_ed25519|aws_secret_access_key|cookies"
    r"|\.netrc|\.npmrc|\.pypirc|/etc/shadow|/etc/passwd|keychain)"
)
_SECRET_REFERENCE = (
    r"(?:\$\{?[a-z_]{0,40}(?:key|token|secret|pass(?:word)?|pwd|cred)|~/\.ssh|id_rsa|/etc/passwd"
    r"|/etc/shadow|\.aws/credentials|\.netrc|\.env\b|printenv|\$\(env\)|`env`)"
)
_AUDIENCE = r"(?:the )?(?:user|human|operator|parent|orchestrator|caller)\b"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "instruction_override",
        _p(rf"\b{_OVERRIDE_VERBS}\b{_G % 25}\b{_QUALIFIERS}\b{_G % 25}\b{_RULES}\b"),
    ),
    (
        "instruction_override",
        _p(
            r"\b(?:do not|don't|stop|no longer)\s{1,8}(?:follow(?:ing)?|obey(?:ing)?|adhere to"
            r"|comply with)\b"
            rf"{_G % 20}\b(?:previous|prior|original|system|your|above)\b{_G % 15}\b{_RULES}\b"
        ),
    ),
    (
        "role_reassignment",
        _p(
            r"\byou are now (?:a|an|the|my|no longer|free|unrestricted|jailbroken|dan|operating"
            r"|acting)\b"
        ),
    ),
    (
        "role_reassignment",
        _p(
            rf"\bfrom now on,? (?:you|your)\b{_G % 20}\b(?:are|will|must|shall|should|act"
            r"|respond|answer|reply|ignore|only)\b"
        ),
    ),
    (
        "role_reassignment",
        _p(
            r"\b(?:your new (?:instructions?|role|persona|directives?|system prompt)"
            r"|new system (?:prompt|instructions?))\b"
        ),
    ),
    (
        "role_reassignment",
        _p(
            rf"\b(?:enter|enable|switch to|activate)\b{_G % 10}\b(?:developer|god|dan|jailbreak"
            r"|unrestricted) mode\b"
        ),
    ),
    (
        "role_reassignment",
        _p(
            rf"\b(?:act as|pretend to be|pretend you are)\b{_G % 40}\b(?:without|with no"
            rf"|free of)\b{_G % 15}\b(?:restrictions|limits|rules|filters|guardrails)\b"
        ),
    ),
    (
        "system_prompt_assertion",
        _p(
            r"\b(?:system|developer|admin(?:istrator)?)\s{0,8}(?:prompt|message|override|instruction)"
            r"s?\s{0,8}[\])>]?\s{0,8}:"
        ),
    ),
    (
        "system_prompt_assertion",
        _p(
            r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>"
            r"|\[/?inst\]|<</?sys>>|</?(?:system|assistant|tool_call|function_call)>"
        ),
    ),
    ("exfiltration_request", _p(rf"\b{_EXFIL_VERBS}\b{_G % 40}{_SENSITIVE}")),
    (
        "exfiltration_channel",
        _p(
            r"\b(?:curl|wget|nc|ncat|netcat|invoke-webrequest|iwr|scp|rsync)\b[^\n]{0,120}?"
            + _SECRET_REFERENCE
        ),
    ),
    (
        "exfiltration_channel",
        _p(r"\b(?:cat|printenv|env|base64)\b[^\n|]{0,80}\|\s{0,8}(?:curl|wget|nc|ncat|netcat)\b"),
    ),
    (
        "exfiltration_channel",
        _p(
            r"!\[[^\]\n]{0,100}\]\(\s{0,8}https?://[^)\s]{0,200}[?&](?:data|secret|token|key"
            r"|payload|leak|exfil|prompt|env|creds?|password|pw|history|conversation|chat)="
            r"[^)\s]{0,200}\)"
        ),
    ),
    # A comment first (bounded, one lazy scan per opening), then the words inside it
    # (``_CONFIRM``): one pattern doing both backtracks quadratically on many openings.
    ("hidden_comment_instruction", _p(r"<!--[^>]{0,800}?-->")),
    (
        "concealment",
        _p(
            r"\b(?:do not|don't|never|without)\s{1,8}(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?"
            rf"|notify(?:ing)?|alert(?:ing)?)\b{_G % 15}\b{_AUDIENCE}"
        ),
    ),
    ("concealment", _p(r"\b(?:keep|hide) (?:this|these instructions|it) (?:secret|hidden) from\b")),
)
_CONFIRM: dict[str, re.Pattern[str]] = {
    "hidden_comment_instruction": _p(
        r"\b(?:instructions?|system prompt|assistant|ai agent|llm|language model|you must"
        r"|you should|secretly|ignore (?:all|previous|the above|your))\b"
    )
}
# A request that says what not to do ("never print secrets to the log") is advice, not an
# attack: an exfiltration request preceded closely by a negation is not a marker.
_NEGATION = re.compile(r"\b(?:never|not|n't|avoid|without|no longer|must not)\b[^.!?\n]{0,25}$")
_NEGATABLE = frozenset({"exfiltration_request"})

# The widest match any pattern can make, in characters: the guard's window per fragment.
MAX_MARKER_WIDTH = 1024
# Every label a scan can report, in a fixed order: what a notice, a marker or a record names.
MARKERS: tuple[str, ...] = tuple(
    dict.fromkeys([label for label, _ in _SMUGGLING] + [label for label, _ in _PATTERNS])
)


def patterns() -> tuple[re.Pattern[str], ...]:
    """Every text pattern (for the test that bounds their width)."""
    return tuple(pattern for _, pattern in _PATTERNS)


def is_invisible(char: str) -> bool:
    return _INVISIBLE.fullmatch(char) is not None


def strip_invisible(text: str) -> tuple[str, int]:
    """``text`` without any invisible code point, and how many were removed."""
    cleaned, removed = _INVISIBLE.subn("", text)
    return cleaned, removed


def smuggling_markers(raw: str) -> frozenset[str]:
    """The invisible carriers found in the text as the child wrote it (before stripping)."""
    return frozenset(label for label, pattern in _SMUGGLING if pattern.search(raw))


def normalise(cleaned: str) -> str:
    """The form patterns are matched against (never the form that crosses)."""
    folded = unicodedata.normalize("NFKC", cleaned).casefold().translate(_CONFUSABLES)
    return _LINES.sub("\n", _SPACES.sub(" ", folded))


def text_markers(normal: str) -> frozenset[str]:
    """The labels of the patterns found in normalised text."""
    found: set[str] = set()
    for label, pattern in _PATTERNS:
        if label in found:
            continue
        for match in pattern.finditer(normal):
            before = max(0, match.start() - 40)
            if label in _NEGATABLE and _NEGATION.search(normal, before, match.start()):
                continue
            if label in _CONFIRM and not _CONFIRM[label].search(match.group()):
                continue
            found.add(label)
            break
    return frozenset(found)


def ordered(labels: frozenset[str] | set[str]) -> tuple[str, ...]:
    """Labels in the fixed order of :data:`MARKERS` (a record reads the same every run)."""
    return tuple(label for label in MARKERS if label in labels)
