"""``Settings``: every ``PI_SQUAD_*`` and ``PI_FLOWS_*`` setting the composition roots use is
read there, from the environment it is given, when first asked for."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from dependency_injector import providers

from adapters.isolation.landlock import PROBED, IsolationSetting
from application.flows.trace_setup import TraceDefaults
from domain.errors import PiSquadError
from domain.flows.errors import FlowError
from domain.flows.flow_settings import FlowSettings
from entrypoints.concerns.settings import Settings

ENTRYPOINTS = Path(__file__).resolve().parents[3] / "entrypoints"


def settings_over(environ: dict[str, str]) -> Settings:
    settings = Settings()
    settings.environ.override(providers.Object(environ))
    return settings


def test_each_setting_is_read_from_the_environment_given(tmp_path: Path) -> None:
    settings = settings_over(
        {
            "PI_SQUAD_ROOT": str(tmp_path / "root"),
            "PI_SQUAD_PROVIDER": "anthropic",
            "PI_SQUAD_MODEL": "sonnet",
            "PI_SQUAD_REQUIRE_ISOLATION": "yes",
            "PI_SQUAD_CEILING_MS": "60000",
            "PI_SQUAD_ADVISOR_MODEL": "openai/gpt",
            "PI_FLOWS_TRACE_FILE": "/tmp/t.jsonl",
            "PI_FLOWS_TRACE_STRICT": "1",
            "PI_SQUAD_DELEGATION_WORKER": "1",
            "PI_SQUAD_ISOLATION": "landlock",
            "PI_SQUAD_TEST_LANDLOCK_ABI": "5",
            "PI_SQUAD_RUNTIME_DIR": "/opt/pi-runtime",
            "PI_FLOWS_FAST_MODEL": "anthropic/haiku",
            "PI_FLOWS_DEEP_MODEL": "openai/o3",
            "PI_FLOWS_ERROR_GRACE_MS": "5000",
            "PI_FLOWS_BASH_RO_NO_SANDBOX": "1",
            "PI_FLOWS_BASH_RO_REQUIRE_SANDBOX": "0",
        }
    )
    assert settings.squad_root() == str(tmp_path / "root")
    assert (settings.default_provider(), settings.default_model()) == ("anthropic", "sonnet")
    assert settings.require_isolation() is True
    assert settings.monitor_policy().ceiling == 60.0
    advisor = settings.advisor()
    assert advisor is not None
    assert (advisor.provider, advisor.model) == ("openai", "gpt")
    assert settings.trace_defaults() == TraceDefaults("/tmp/t.jsonl", strict=True)
    assert settings.worker_context() is True
    assert settings.isolation() == IsolationSetting(mode="landlock", abi_cap="5")
    assert settings.runtime_dir() == "/opt/pi-runtime"
    assert settings.tier_models() == ("anthropic/haiku", "openai/o3")
    assert settings.flow_settings() == FlowSettings("5000", "1", "0")


def test_unset_or_empty_settings_keep_their_defaults() -> None:
    settings = settings_over(
        {"PI_SQUAD_ROOT": "", "PI_SQUAD_PROVIDER": "", "PI_SQUAD_RUNTIME_DIR": ""}
    )
    # No ``HOME`` given: this user's own (the password database's).
    assert settings.squad_root() == os.path.expanduser(os.path.join("~", ".pi", "squad"))
    assert (settings.default_provider(), settings.default_model()) == (None, None)
    assert settings.require_isolation() is False
    assert settings.advisor() is None
    assert settings.trace_defaults() == TraceDefaults()
    assert settings.worker_context() is False
    assert settings.isolation() == PROBED
    assert settings.runtime_dir() is None
    assert settings.tier_models() == (None, None)
    assert settings.flow_settings() == FlowSettings()
    assert settings.flow_settings().error_grace() == 30_000


def test_the_default_squad_root_is_in_the_home_of_the_environment_given(tmp_path: Path) -> None:
    settings = settings_over({"HOME": str(tmp_path)})
    assert settings.squad_root() == str(tmp_path / ".pi" / "squad")
    settings = settings_over({"HOME": str(tmp_path), "PI_SQUAD_ROOT": "relative/root"})
    assert settings.squad_root() == os.path.abspath("relative/root")


@pytest.mark.parametrize(
    ("variable", "value", "required"),
    [
        ("PI_SQUAD_REQUIRE_ISOLATION", "1", True),
        ("PI_SQUAD_REQUIRE_ISOLATION", " true ", True),
        ("PI_SQUAD_REQUIRE_ISOLATION", "0", False),
        ("PI_SQUAD_CHILD", "1", None),
        ("PI_SQUAD_CHILD", "0", None),
    ],
)
def test_the_switches_take_only_their_on_values(
    variable: str, value: str, required: bool | None
) -> None:
    settings = settings_over({variable: value})
    if required is not None:
        assert settings.require_isolation() is required
    else:
        assert settings.worker_context() is (value == "1")


def test_a_malformed_setting_fails_only_what_reads_it(tmp_path: Path) -> None:
    settings = settings_over({"PI_SQUAD_ROOT": str(tmp_path), "PI_SQUAD_CEILING_MS": "soon"})
    assert settings.squad_root() == str(tmp_path)
    with pytest.raises(PiSquadError, match="PI_SQUAD_CEILING_MS"):
        settings.monitor_policy()


def test_a_malformed_flow_setting_is_kept_as_given_and_refused_when_a_flow_parses_it() -> None:
    """Reading it never fails: a flow call refuses it (``FLOW_INVALID``), as it refuses a
    malformed field of its own, and a listing never parses it."""
    flows = settings_over({"PI_FLOWS_ERROR_GRACE_MS": " soon "}).flow_settings()
    assert flows == FlowSettings(error_grace_ms="soon")
    with pytest.raises(FlowError, match="PI_FLOWS_ERROR_GRACE_MS") as refused:
        flows.error_grace()
    assert refused.value.document()["measured"] == "soon"
    switches = settings_over({"PI_FLOWS_BASH_RO_REQUIRE_SANDBOX": "on"}).flow_settings()
    with pytest.raises(FlowError, match="PI_FLOWS_BASH_RO_REQUIRE_SANDBOX"):
        switches.bash_ro_switches()


def test_settings_are_read_again_from_a_new_environment(tmp_path: Path) -> None:
    settings = settings_over({"PI_SQUAD_ROOT": str(tmp_path / "a")})
    assert settings.squad_root() == str(tmp_path / "a")
    settings.environ.override(providers.Object({"PI_SQUAD_ROOT": str(tmp_path / "b")}))
    assert settings.squad_root() == str(tmp_path / "b")


# The process environment is taken whole by ``RootSettings`` (the default of ``environ``, which
# ``Settings`` extends) and by the bridge's process, which classifies itself from it before any
# container exists (its fast path).
_ENVIRONMENT_READERS = {"concerns/reading.py", "bridge.py"}
# Where each setting is read, by name (``Settings`` calls these).
_SETTING_READERS = {"concerns/settings.py", "concerns/setting_reads.py"}
_PROCESS_ENVIRONMENT = re.compile(r"os\.environ|os\.getenv|getenv\(")
_SETTING_READ = re.compile(r"""environ(\(\))?(\.get\(|\[)\s*["'](PI_SQUAD_|PI_FLOWS_)""")


def test_no_other_entrypoint_reads_the_environment_or_a_setting() -> None:
    readers = []
    for path in sorted(ENTRYPOINTS.rglob("*.py")):
        name = path.relative_to(ENTRYPOINTS).as_posix()
        text = path.read_text(encoding="utf-8")
        if name not in _ENVIRONMENT_READERS and _PROCESS_ENVIRONMENT.search(text):
            readers.append(name)
        if name not in _SETTING_READERS and _SETTING_READ.search(text):
            readers.append(name)
    assert readers == []


def test_the_rule_above_sees_a_setting_read() -> None:
    assert _SETTING_READ.search('container.environ().get("PI_SQUAD_MODEL")')
    assert _SETTING_READ.search("environ['PI_FLOWS_TRACE_FILE']")
    assert _PROCESS_ENVIRONMENT.search("os.environ.get('HOME')")
