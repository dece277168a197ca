"""Only public APIs of other packages (DESIGN §1): no import of another package's underscore
modules or names, no reading of its underscore attributes, no assignment to attributes of its
modules or classes, no override of its underscore methods. An AST check over every Python file of
the project; the first tests show it finds each kind of breach in planted code."""
from __future__ import annotations

import ast
import importlib
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OWN = {"cli", "ingest", "orchestration", "publish", "site_builder", "benchmarks", "scripts", "tests", "dbt_project",
       "sqlfluff_context"}
SKIP_PARTS = {".venv", "node_modules", "target", "__pycache__", ".git", "warehouse"}
# documented public names that start with an underscore
DOCUMENTED = {"_exit", "_getframe", "_replace", "_asdict", "_fields", "_make"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and name not in DOCUMENTED


def _is_foreign(module: str | None) -> bool:
    return bool(module) and module.split(".")[0] not in OWN and module != "__future__"


class Checker(ast.NodeVisitor):
    """Collects breaches as 'line: what' strings."""

    def __init__(self) -> None:
        self.foreign: dict[str, str] = {}  # local name -> the other package's module or object it names
        self.found: list[str] = []

    def _add(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{node.lineno}: {what}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _is_foreign(alias.name):
                if any(_private(part) for part in alias.name.split(".")[1:]):
                    self._add(node, f"import of private module {alias.name}")
                local = alias.asname or alias.name.split(".")[0]
                self.foreign[local] = alias.name if alias.asname else local

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not _is_foreign(node.module):
            return
        if any(_private(part) for part in node.module.split(".")[1:]):
            self._add(node, f"import from private module {node.module}")
        for alias in node.names:
            if _private(alias.name):
                self._add(node, f"import of private name {node.module}.{alias.name}")
            self.foreign[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def _root(self, node: ast.AST) -> str | None:
        while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return node.id if isinstance(node, ast.Name) else None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _private(node.attr) and self._root(node.value) in self.foreign:
            self._add(node, f"private attribute {node.attr} of {self._root(node.value)}")
        self.generic_visit(node)

    def _check_target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, ast.Attribute) and self._root(target.value) in self.foreign:
            self._add(node, f"assignment to {self._root(target.value)}...{target.attr}")
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._check_target(element, node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target, node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name in ("setattr", "getattr", "delattr") and node.args and self._root(node.args[0]) in self.foreign:
            attr = node.args[1] if len(node.args) > 1 else None
            if name != "getattr" or (isinstance(attr, ast.Constant) and isinstance(attr.value, str)
                                     and _private(attr.value)):
                self._add(node, f"{name} on {self._root(node.args[0])}")
        self.generic_visit(node)

    def _resolve(self, base: ast.AST) -> object | None:
        """The other package's class a base names (imported here), or None."""
        dotted = []
        while isinstance(base, ast.Attribute):
            dotted.insert(0, base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in self.foreign:
            return None
        path = self.foreign[base.id].split(".") + dotted
        for split in range(len(path), 0, -1):
            try:
                obj = importlib.import_module(".".join(path[:split]))
            except ImportError:
                continue
            try:
                for attr in path[split:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                return None
            return obj
        return None

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        bases = [b for b in map(self._resolve, node.bases) if b is not None]
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(item.name) \
                    and any(hasattr(base, item.name) for base in bases):
                self._add(item, f"{node.name} overrides private method {item.name} of another package's class")
        self.generic_visit(node)


def breaches(source: str) -> list[str]:
    checker = Checker()
    checker.visit(ast.parse(source))
    return checker.found


def project_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if not SKIP_PARTS & set(p.relative_to(ROOT).parts))


@pytest.mark.parametrize("planted, expected", [
    ("from dagster._core.storage.sqlite_storage import SqliteStorage", "private module dagster._core"),
    ("import dagster._utils as u", "private module dagster._utils"),
    ("from dagster_dbt.core.resource import _helper", "private name"),
    ("from dbt.contracts.graph.nodes import ModelNode\nModelNode.compile = lambda self: None", "assignment to ModelNode"),
    ("import dbt.task.runnable\ndbt.task.runnable.GraphRunnableTask.execute_nodes = None", "assignment to dbt"),
    ("import jinja2\nsetattr(jinja2.Environment, 'compile', None)", "setattr on jinja2"),
    ("import multiprocessing.forkserver\nmultiprocessing.forkserver._forkserver._stop()", "private attribute"),
    ("from dagster_dbt import DbtCliResource\nclass R(DbtCliResource):\n    def _cli_version(self): ...",
     "overrides private method"),
    ("import gc\ngc.freeze = None", "assignment to gc"),
])
def test_the_check_finds_a_planted_breach(planted, expected):
    found = breaches(textwrap.dedent(planted))
    assert any(expected in line for line in found), found


def test_the_check_passes_public_use():
    assert breaches(textwrap.dedent("""
        import dagster as dg
        from dagster_dbt import DbtCliResource, DbtProject
        from orchestration import _local_helper  # the project's own names may be private
        x = dg.AssetKey(["a"])
        class Translator(DbtCliResource):
            def cli(self, args): return super().cli(args)
            def __repr__(self): return "t"
        obj = {}
        obj["k"] = dg.asset
    """)) == []


def test_the_project_uses_only_public_apis_of_other_packages():
    found = []
    for path in project_files():
        for line in breaches(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(ROOT)}:{line}")
    assert len(project_files()) > 100
    assert not found, "\n".join(found)
