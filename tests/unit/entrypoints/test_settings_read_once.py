"""No use case and no adapter reads a ``PI_SQUAD_*`` or ``PI_FLOWS_*`` setting from an
environment: ``Settings`` reads each (``entrypoints/concerns/setting_reads.py``) and they are
given the value. A source scan: every module of ``application/`` and ``adapters/`` is parsed,
and a lookup in a mapping (``.get``, ``[...]``, ``in``, ``os.getenv``) whose key names a
setting, literally or through a module constant, is a read; so is a call of a ``domain/``
function that makes one (``policy_from_environment``: ``Settings`` calls those)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from domain import child_environment

REPO = Path(__file__).resolve().parents[3]
SETTING_NAME = re.compile(r"^PI_(SQUAD|FLOWS)_[A-Z0-9_]+$")
# The child contract: what a parent writes into a child's environment and the child reads
# back (``domain.child_environment``), and the bridge command every child's shim starts,
# which the parent sets (``entrypoints/children.py``) and the confinement protects.
CHILD_CONTRACT = frozenset(
    {
        value
        for value in vars(child_environment).values()
        if isinstance(value, str) and SETTING_NAME.match(value)
    }
    | {"PI_SQUAD_BRIDGE"}
)
SCANNED = ("application", "adapters")


def _named_settings(value: ast.expr | None) -> set[str]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return {value.value} if SETTING_NAME.match(value.value) else set()
    if isinstance(value, ast.Dict):
        items = [*value.keys, *value.values]
        return set().union(*(_named_settings(item) for item in items))
    if isinstance(value, ast.Tuple | ast.List):
        return set().union(*(_named_settings(item) for item in value.elts))
    return set()


def module_constants() -> dict[str, set[str]]:
    """Each module-level name (of every layer) bound to a setting's name, or to a dict (by key
    or value), tuple or list of them, and the names it stands for."""
    constants: dict[str, set[str]] = {}
    for layer in ("domain", "application", "adapters", "entrypoints"):
        for path in (REPO / layer).rglob("*.py"):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                targets = (
                    node.targets
                    if isinstance(node, ast.Assign)
                    else [node.target]
                    if isinstance(node, ast.AnnAssign)
                    else []
                )
                value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
                for target in targets:
                    named = _named_settings(value)
                    if isinstance(target, ast.Name) and named:
                        constants.setdefault(target.id, set()).update(named)
    return constants


def _is_environment(value: ast.expr) -> bool:
    name = value.attr if isinstance(value, ast.Attribute) else getattr(value, "id", "")
    return name.strip("_") in {"environ", "environment", "env"}


def settings_read(source: str, constants: dict[str, set[str]]) -> Iterator[tuple[int, str]]:
    """``(line, setting)`` for each lookup of a setting in a mapping in ``source``, and each
    call given an environment and a setting's name; a loop's variable over constants
    (``for name in VARIABLES``) stands for each of them."""
    tree = ast.parse(source)
    bound = dict(constants)
    for loop in ast.walk(tree):
        if isinstance(loop, ast.For | ast.comprehension):
            over = loop.iter
            if isinstance(over, ast.Call) and isinstance(over.func, ast.Attribute):
                over = over.func.value  # ``VARIABLES.items()``
            target = loop.target
            if isinstance(target, ast.Tuple) and target.elts:
                target = target.elts[0]
            if isinstance(over, ast.Name) and isinstance(target, ast.Name):
                bound[target.id] = bound.get(target.id, set()) | constants.get(over.id, set())

    def named(key: ast.expr) -> set[str]:
        if isinstance(key, ast.Name):
            return bound.get(key.id, set())
        if isinstance(key, ast.Attribute):
            return constants.get(key.attr, set())
        if isinstance(key, ast.Subscript):  # ``OVERRIDES["fast"]``
            return named(key.value)
        return _named_settings(key)

    for node in ast.walk(tree):
        keys: list[ast.expr] = []
        if isinstance(node, ast.Call) and node.args:
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else None
            if isinstance(function, ast.Name):
                name = function.id
            if name in {"get", "getenv"}:
                keys.append(node.args[0])
            elif any(_is_environment(argument) for argument in node.args):
                keys.extend(node.args)  # ``text(environ, ISOLATION_VARIABLE)``
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            keys.append(node.slice)
        elif isinstance(node, ast.Compare) and any(
            isinstance(op, ast.In | ast.NotIn) for op in node.ops
        ):
            keys.append(node.left)
        for key in keys:
            for setting in sorted(named(key) - CHILD_CONTRACT):
                yield key.lineno, setting


def domain_readers(constants: dict[str, set[str]]) -> set[str]:
    """The ``domain/`` functions that read a setting from the mapping they are given."""
    readers: set[str] = set()
    for path in (REPO / "domain").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                settings_read(ast.unparse(node), constants)
            ):
                readers.add(node.name)
    return readers


def calls_of(source: str, functions: set[str]) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else None
            if isinstance(function, ast.Name):
                name = function.id
            if name in functions:
                yield node.lineno, f"{name}()"


def test_no_use_case_or_adapter_reads_a_setting_from_an_environment() -> None:
    constants = module_constants()
    through_domain = domain_readers(constants)
    readers = []
    for layer in SCANNED:
        for path in sorted((REPO / layer).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            for line, read in [
                *settings_read(source, constants),
                *calls_of(source, through_domain),
            ]:
                readers.append(f"{path.relative_to(REPO)}:{line}: {read}")
    assert readers == []


def test_the_scan_finds_the_reads_settings_makes() -> None:
    """Not vacuous: run over ``Settings`` it finds every setting read there, and every form a
    use case or adapter once read one in is seen."""
    constants = module_constants()
    concerns = REPO / "entrypoints" / "concerns"
    found = {
        setting
        for module in ("settings.py", "setting_reads.py")
        for _, setting in settings_read((concerns / module).read_text(encoding="utf-8"), constants)
    }
    assert found >= {
        "PI_SQUAD_ROOT",
        "PI_SQUAD_PROVIDER",
        "PI_SQUAD_MODEL",
        "PI_SQUAD_REQUIRE_ISOLATION",
        "PI_SQUAD_ISOLATION",
        "PI_SQUAD_TEST_LANDLOCK_ABI",
        "PI_SQUAD_RUNTIME_DIR",
        "PI_FLOWS_TRACE_FILE",
        "PI_FLOWS_TRACE_STRICT",
        "PI_FLOWS_FAST_MODEL",
        "PI_FLOWS_DEEP_MODEL",
        "PI_FLOWS_ERROR_GRACE_MS",
        "PI_FLOWS_BASH_RO_NO_SANDBOX",
        "PI_FLOWS_BASH_RO_REQUIRE_SANDBOX",
    }
    forms = {
        'environ.get("PI_SQUAD_ISOLATION", "")': "PI_SQUAD_ISOLATION",
        "environ.get(RUNTIME_DIR_VARIABLE)": "PI_SQUAD_RUNTIME_DIR",
        "self._environ.get(ENV_OVERRIDES['fast'])": "PI_FLOWS_FAST_MODEL",
        "environ[ERROR_GRACE_VARIABLE]": "PI_FLOWS_ERROR_GRACE_MS",
        "read.TRACE_FILE_VARIABLE in environ": "PI_FLOWS_TRACE_FILE",
        "os.getenv('PI_FLOWS_BASH_RO_NO_SANDBOX')": "PI_FLOWS_BASH_RO_NO_SANDBOX",
    }
    for source, setting in forms.items():
        assert setting in {name for _, name in settings_read(source, constants)}, source
    # The monitor's and the advisor's settings are parsed in ``domain/``, from a mapping.
    through_domain = domain_readers(constants)
    assert {"policy_from_environment", "advisor_from_environment"} <= through_domain
    call = "policy = policy_from_environment(self._environ)"
    assert list(calls_of(call, through_domain)) == [(1, "policy_from_environment()")]


def test_the_child_contract_is_not_a_setting() -> None:
    constants = module_constants()
    assert list(settings_read("environ.get(CHILD_FLAG) == '1'", constants)) == []
    assert list(settings_read("environ['PI_SQUAD_BRIDGE']", constants)) == []
    # Writing a child's environment is not reading a setting.
    assert list(settings_read("env['PI_SQUAD_ROOT'] = root", constants)) == []
