"""Import rules of the tree: test modules share code through tests/helpers/, never by importing
one another or conftest.py, and the installed packages never import the tests."""
from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from tests.helpers.paths import PROJECT_ROOT

SKIP_DIRS = {".venv", "node_modules", "target", "logs", "warehouse"}


def python_files(root: Path = PROJECT_ROOT) -> list[Path]:
    return sorted(p for p in root.rglob("*.py")
                  if not any(part in SKIP_DIRS or part.startswith(".") for part in p.relative_to(root).parts))


def imported_modules(path: Path, root: Path = PROJECT_ROOT) -> list[str]:
    """Absolute names of every module the file imports (relative imports resolved against its package)."""
    package = list(path.relative_to(root).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.append(module)
            names += [f"{module}.{alias.name}" for alias in node.names]  # `from tests import test_x`
    return names


def is_test_module(name: str) -> bool:
    parts = name.split(".")
    return (parts[0] == "tests" and len(parts) > 1 and (parts[1] == "conftest" or parts[1].startswith("test_"))) \
        or parts[0] == "conftest" or parts[0].startswith("test_")


def test_no_module_imports_a_test_module_or_conftest():
    offenders = [f"{p.relative_to(PROJECT_ROOT)} imports {name}"
                 for p in python_files() for name in imported_modules(p) if is_test_module(name)]
    assert offenders == [], "move what they share into tests/helpers/:\n" + "\n".join(offenders)


def test_installed_packages_never_import_the_tests():
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    prefixes = [p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]]
    packages = [p for p in PROJECT_ROOT.iterdir() if p.is_dir() and any(p.name.startswith(x) for x in prefixes)]
    assert packages, prefixes
    offenders = [f"{p.relative_to(PROJECT_ROOT)} imports {name}"
                 for pkg in packages for p in sorted(pkg.rglob("*.py"))
                 for name in imported_modules(p) if name.split(".")[0] == "tests"]
    assert offenders == []


def test_the_rule_catches_each_way_of_importing_a_test_module(tmp_path):
    (tmp_path / "tests").mkdir()
    for n, line in enumerate(["from tests.test_a import x", "import tests.test_a", "from tests import test_a",
                              "from tests.conftest import SHARED_DATA", "from .test_a import x", "from . import conftest"]):
        (tmp_path / "tests" / f"helper_{n}.py").write_text(line + "\n")
    (tmp_path / "tests" / "fine.py").write_text("from tests.helpers.loopback import Reply\nimport testing\n")
    flagged = {p.name for p in python_files(tmp_path) for name in imported_modules(p, tmp_path) if is_test_module(name)}
    assert flagged == {f"helper_{n}.py" for n in range(6)}


def test_imports_go_one_way_between_the_layers():
    """docs/architecture.md: `cli` -> `orchestration` -> `publish` -> `ingest`; never back."""
    lower_than = {"ingest": {"publish", "orchestration", "cli", "site_builder"},
                  "publish": {"orchestration", "cli", "site_builder"},
                  "orchestration": {"cli"}}
    offenders = [f"{p.relative_to(PROJECT_ROOT)} imports {name}"
                 for layer, above in lower_than.items() for p in python_files(PROJECT_ROOT / layer)
                 for name in imported_modules(p) if name.split(".")[0] in above]
    assert offenders == []


def import_cycles(root: Path = PROJECT_ROOT, packages=("cli", "ingest", "orchestration", "publish", "site_builder")) \
        -> list[list[str]]:
    """The import circles among the packages' modules (imports inside functions count too)."""
    modules = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
               for pkg in packages for p in python_files(root / pkg)}

    def module_of(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {name: {m for m in map(module_of, imported_modules(path, root)) if m and m != name}
             for name, path in modules.items()}
    cycles, seen = [], set()
    for start in sorted(graph):  # a depth-first walk from each module back to itself
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph[node]):
                if nxt == start:
                    cycle = frozenset(path)
                    if cycle not in seen:
                        seen.add(cycle)
                        cycles.append(path)
                elif nxt not in path and nxt > start:
                    stack.append((nxt, path + [nxt]))
    return cycles


def test_no_import_cycles():
    assert import_cycles() == []


def test_the_cycle_rule_finds_a_planted_circle(tmp_path):
    (tmp_path / "publish").mkdir()
    (tmp_path / "publish" / "__init__.py").write_text("")
    (tmp_path / "publish" / "a.py").write_text("def f():\n    from publish.b import g\n")
    (tmp_path / "publish" / "b.py").write_text("from publish import a\n")
    assert import_cycles(tmp_path, ("publish",)) == [["publish.a", "publish.b"]]
