"""Issue 28, break 3: no write grant reaches pi-squad's, Python's or Pi's own code.

``adapters.isolation.protected_code`` gathers what must stay out of reach (resolved), a confined
spawn
whose grants reach it is refused before anything starts, and ``pi-squad run`` refuses such a
project before anything is published: a project holding a ``.venv`` with pi-squad, a project
that is a pi-squad checkout with its ``.runtime``, a project holding the Pi runtime. A normal
project is accepted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import domain
from adapters.isolation.confinement import ConfinementRefused, refuse_project_holding_root
from adapters.isolation.landlock import probe_landlock
from adapters.isolation.protected_code import protected_code
from adapters.pi_rpc import PiRpcRuntime
from application.ports import Confinement, NewSession, SpawnRequest
from domain.errors import ErrorCode, SquadOperationError
from entrypoints.children import child_runtime
from entrypoints.concerns.settings import Settings
from tests.builders import spec_document
from tests.fakes import fake_pi_executable as fake
from tests.fakes.isolation import FakeIsolation
from tests.integration.cli_support import CliRun, Sandbox, create_arguments, run_command

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("domain", "application", "adapters", "entrypoints")


def paths_of(
    *,
    prefix: tuple[str, ...] = (),
    environ: dict[str, str] | None = None,
    runtime_override: str | None = None,
) -> set[str]:
    found = protected_code(
        pi_prefix=prefix,
        extension=None,
        environ=environ or {},
        runtime_override=runtime_override,
    )
    return {code.path for code in found}


# -- what is gathered --------------------------------------------------------------------------


def test_this_python_its_environment_and_pi_squad_itself_are_protected() -> None:
    found = paths_of()
    assert os.path.realpath(sys.executable) in found
    if sys.prefix != sys.base_prefix:
        assert os.path.realpath(sys.prefix) in found
    assert os.path.realpath(sysconfig.get_paths()["stdlib"]) in found
    assert os.path.realpath(domain.__path__[0]) in found
    assert all(os.path.isabs(path) and path == os.path.realpath(path) for path in found)


def test_the_pi_prefix_its_node_modules_and_the_runtime_directory_are_protected_resolved(
    tmp_path: Path,
) -> None:
    runtime = tmp_path / "runtime"
    cli = runtime / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "cli.js"
    cli.parent.mkdir(parents=True)
    cli.write_text("// pi\n")
    node = tmp_path / "node-install" / "bin" / "node"
    node.parent.mkdir(parents=True)
    node.write_text("")
    node.chmod(0o755)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "node").symlink_to(node)  # found on PATH, through a link
    (tmp_path / "runtime-link").symlink_to(runtime)
    found = paths_of(
        prefix=("node", str(cli), "--some-option"),
        environ={"PATH": str(tmp_path / "bin")},
        runtime_override=str(tmp_path / "runtime-link"),
    )
    assert {str(node), str(cli), str(runtime / "node_modules"), str(runtime)} <= found
    assert str(tmp_path / "bin" / "node") not in found, "the link's target, not the link"


def test_the_bridge_and_the_virtual_environment_it_belongs_to_are_protected(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    script = venv / "bin" / "pi-squad"
    script.write_text("#!/bin/sh\n")
    found = paths_of(environ={"PI_SQUAD_BRIDGE": json.dumps([str(script), "bridge"])})
    assert {str(script), str(venv)} <= found
    for unusable in ("not json", "[]", '[""]', '{"a": 1}', '["no-such-bridge-anywhere"]'):
        assert paths_of(environ={"PI_SQUAD_BRIDGE": unusable, "PATH": ""}) == paths_of()


# -- the refusal, with symbolic links resolved -------------------------------------------------


def pi_squad_like(tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    """A Pi runtime inside ``<tmp>/code`` (as a checkout's ``.runtime`` is): the directory, and
    the prefix that starts it (the fake Pi, copied there)."""
    code = tmp_path / "code"
    cli = code / ".runtime" / "node_modules" / "pi" / "cli.js"
    cli.parent.mkdir(parents=True)
    shutil.copyfile(fake.__file__, cli)
    return code, (sys.executable, str(cli))


def test_a_project_reaching_protected_code_is_refused_naming_it_and_the_way_out(
    tmp_path: Path,
) -> None:
    code, prefix = pi_squad_like(tmp_path)
    protected = protected_code(pi_prefix=prefix, extension=None, environ={}, runtime_override=None)
    root = "/nonexistent/squads"  # not inside any project tried here
    (tmp_path / "link-to-code").symlink_to(code)
    for project in (code, code / ".runtime", tmp_path, tmp_path / "link-to-code"):
        with pytest.raises(ConfinementRefused) as refused:
            refuse_project_holding_root(str(project), root, protected=protected)
        assert refused.value.code is ErrorCode.ISOLATION_UNSAFE
        message = refused.value.message
        assert message.startswith(f"nothing was published: the write grant {project.resolve()} ")
        assert f"({code}/.runtime/" in message, "names the code, resolved"
        assert "PI_SQUAD_RUNTIME_DIR" in message, "says the way out"


def test_a_normal_project_and_one_linking_to_code_elsewhere_are_accepted(tmp_path: Path) -> None:
    code, prefix = pi_squad_like(tmp_path)
    protected = protected_code(pi_prefix=prefix, extension=None, environ={}, runtime_override=None)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".runtime").symlink_to(code / ".runtime")  # the kernel grants the link only
    refuse_project_holding_root(str(project), str(tmp_path / "squads"), protected=protected)


def test_a_confined_spawn_whose_project_holds_the_pi_runtime_is_refused_before_start(
    tmp_path: Path,
) -> None:
    code, prefix = pi_squad_like(tmp_path)
    ledger = tmp_path / "squads" / "s1" / "t1"
    ledger.mkdir(parents=True)
    temp = tmp_path / "temp"
    temp.mkdir()
    record = tmp_path / "started.json"
    isolation = FakeIsolation()
    runtime = PiRpcRuntime(
        prefix, {"FAKE_PI_RECORD": str(record)}, None, temp_dir=str(temp), isolation=isolation
    )
    request = SpawnRequest(
        squad_id="s1",
        task_id="t1",
        cwd=str(code),
        session=NewSession(str(ledger / "session")),
        system_prompt="",
        first_prompt="go",
        environment={},
        confinement=Confinement(str(tmp_path / "squads"), str(ledger), project_dir=str(code)),
    )
    with pytest.raises(ConfinementRefused) as refused:
        runtime.spawn(request, lambda event: None)
    assert refused.value.code is ErrorCode.ISOLATION_UNSAFE
    cli = code / ".runtime" / "node_modules" / "pi" / "cli.js"
    assert f"contains a file every child's Pi starts from ({cli})" in refused.value.message
    assert isolation.calls == []
    assert not record.exists(), "nothing was started"
    assert list(temp.iterdir()) == [], "no prompt file or scratch directory left"


# -- pi-squad run, before anything is published (real Landlock) --------------------------------


def landlock_or_skip() -> None:
    support = probe_landlock()
    if support.mode != "landlock":
        pytest.skip(f"no Landlock here: {support.reason}")


def run_from(
    python: str,
    sandbox: Sandbox,
    project: Path,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> CliRun:
    """``pi-squad run`` of a one-task spec in ``project``, by ``python`` (``-m``, so from
    ``cwd``'s packages first); nothing may start."""
    spec = sandbox.write_spec(spec_document())
    arguments = ["run", *create_arguments(spec)[1:], "--cwd", str(project)]
    return run_command(
        [python, "-m", "entrypoints.cli", *arguments],
        cwd=cwd or sandbox.cwd,
        env={**sandbox.environment(), **(env or {})},
        timeout=120,
    )


def refusal(run: CliRun) -> str:
    assert run.returncode == 1, (run.stdout, run.stderr[-2000:])
    assert run.error_code() == "ISOLATION_UNSAFE", run.stdout
    message: str = run.json()["error"]["message"]
    assert message.startswith("nothing was published: the write grant ")
    return message


def nothing_published(sandbox: Sandbox) -> bool:
    return not sandbox.root.exists() or not any(
        p for p in sandbox.root.iterdir() if not p.name.startswith(".")
    )


def test_run_from_a_project_whose_venv_holds_pi_squad_is_refused(tmp_path: Path) -> None:
    """The project's own ``.venv`` runs pi-squad (here as an editable install: a ``.pth`` file
    naming this checkout and its dependencies)."""
    landlock_or_skip()
    sandbox = Sandbox.create(tmp_path)
    venv = sandbox.cwd / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    dependencies = sysconfig.get_paths()["purelib"]
    (site / "pi_squad.pth").write_text(f"{REPO}\n{dependencies}\n")
    message = refusal(run_from(str(venv / "bin" / "python"), sandbox, sandbox.cwd))
    assert f"contains the virtual environment pi-squad runs in ({venv})" in message
    assert "uv tool install" in message
    assert "move the project's virtual environment" in message
    assert nothing_published(sandbox)


def checkout_copy(sandbox: Sandbox) -> Path:
    """A pi-squad checkout inside the project (the project is the checkout): its packages,
    ``pyproject.toml`` and a ``.runtime`` of hard links to this one's (the same files, reached
    through the project)."""
    checkout = sandbox.cwd
    for name in PACKAGES:
        shutil.copytree(REPO / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(REPO / "pyproject.toml", checkout / "pyproject.toml")
    runtime = REPO / ".runtime"
    if not runtime.is_dir():
        pytest.skip("no .runtime in this checkout (make runtime)")
    try:
        shutil.copytree(runtime, checkout / ".runtime", copy_function=os.link, symlinks=True)
    except OSError as error:
        pytest.skip(f"cannot hard-link the runtime here: {error}")
    return checkout


def test_run_from_a_project_that_is_a_pi_squad_checkout_with_its_runtime_is_refused(
    tmp_path: Path,
) -> None:
    landlock_or_skip()
    sandbox = Sandbox.create(tmp_path)
    checkout = checkout_copy(sandbox)
    env = {"PYTHONPATH": str(checkout), "PI_SQUAD_RUNTIME_DIR": ""}
    message = refusal(run_from(sys.executable, sandbox, checkout, env=env))
    assert f"contains pi-squad's own code (domain) ({checkout / 'domain'})" in message
    assert nothing_published(sandbox)
    # Its runtime alone, with pi-squad itself installed elsewhere (this checkout), is refused
    # too.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PI_SQUAD_RUNTIME_DIR": str(checkout / ".runtime")}
    message = refusal(run_from(sys.executable, sandbox, checkout, cwd=elsewhere, env=env))
    assert f"({checkout / '.runtime'}/" in message, "names a file of the runtime"
    assert "keep the Pi runtime outside the project" in message
    assert nothing_published(sandbox)


def test_a_normal_project_is_accepted_against_what_pi_squad_run_protects(
    tmp_path: Path,
) -> None:
    """What ``pi-squad run`` gathers here (this Python, this checkout, its Pi runtime, its
    bridge) is nowhere in an ordinary project. (Every real-Pi squad test runs such a project
    under Landlock to the end.)"""
    try:
        settings = Settings()
        runtime = child_runtime(
            os.environ,
            agent_dir=None,
            provider=None,
            isolation=settings.isolation(),
            runtime_override=settings.runtime_dir(),
        )
    except SquadOperationError as error:
        pytest.skip(str(error))
    protected = runtime.protected_code
    assert {os.path.realpath(sys.executable), str(REPO / "domain")} <= {c.path for c in protected}
    project = tmp_path / "project"
    project.mkdir()
    refuse_project_holding_root(str(project), str(tmp_path / "squads"), protected=protected)
