"""``redactSecrets``: what is taken out of a flow's returned content, and what is left."""

from __future__ import annotations

import pytest

from domain.flows.redact import redact


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "private-key"),
        ("AKIAIOSFODNN7EXAMPLE", "aws-key"),
        ("ghp_" + "a" * 36, "github-token"),
        ("sk-ant-api03-" + "b" * 30, "api-key"),
        ("xoxb-1234567890-abcdef", "slack-token"),
        ("eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4", "jwt"),
        ("Authorization: Bearer abcdefghijklmnop1234", "bearer"),
        ("write to ada.lovelace@example.org", "email"),
        ("password = hunter2hunter2", "secret"),
    ],
)
def test_secret_shapes_are_replaced_by_their_kind(text: str, kind: str) -> None:
    redacted = redact(text)
    assert f"[REDACTED:{kind}]" in redacted
    assert "hunter2hunter2" not in redacted


def test_the_home_directory_becomes_a_tilde_but_a_longer_name_does_not() -> None:
    assert redact("/home/ada/src and /home/adam", home="/home/ada") == "~/src and /home/adam"


def test_ordinary_text_is_left_alone() -> None:
    text = "The parser is in domain/spec/parse.py:42; tokens: 120 in, 40 out."
    assert redact(text, home="/home/ada") == text
