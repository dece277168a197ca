"""benchwh-dbt gives each dbt context its macros as they are first looked up (cli/dbt_guard.py,
`make_macros_on_first_use`), with dbt's real classes: every name leads to the macro dbt's own
namespace gives it, only the names looked up get a generator, anything reading the whole context
sees dbt's dict, rendering keeps them pending, and where dbt's search order differs dbt's way stays.
"""
from __future__ import annotations

import copy
from types import SimpleNamespace

import jinja2.environment
import pytest
from dbt.clients import jinja as dbt_jinja
from dbt.clients.jinja import MacroGenerator, MacroStack
from dbt.context.macros import MacroNamespace, MacroNamespaceBuilder
from dbt.context.manifest import ManifestContext
from dbt.clients.jinja import get_rendered

from cli.dbt_guard import MacroPlan, MacrosOnFirstUse, make_macros_on_first_use
from tests.helpers.dbt_build import parsed_project

INTERNAL = ["dbt_duckdb", "dbt"]
BUILTINS = {"shared": "a builtin", "kept": 1, "pkg": "a builtin named like a package"}


def _macro(package: str, name: str, sql: str | None = None) -> SimpleNamespace:
    sql = sql or f"{{% macro {name}() %}}{package}.{name}{{% endmacro %}}"
    return SimpleNamespace(package_name=package, name=name, unique_id=f"macro.{package}.{name}", macro_sql=sql)


@pytest.fixture
def macros() -> dict:
    """Macros whose names collide across every level of dbt's search order: the node's package
    (`pkg`), the root project (`bench`), another package, dbt's adapter, dbt itself; a macro named
    like a package (`bench` in `other`, `pkg` in `bench`)."""
    return {
        "bench": {m.name: m for m in (_macro("bench", "shared"), _macro("bench", "root_only"),
                                      _macro("bench", "pkg"),
                                      _macro("bench", "greet", "{% macro greet(x) %}hi {{ x }}{% endmacro %}"))},
        "pkg": {m.name: m for m in (_macro("pkg", "shared"), _macro("pkg", "local_only"))},
        "other": {m.name: m for m in (_macro("other", "shared"), _macro("other", "bench"))},
        "dbt_duckdb": {m.name: m for m in (_macro("dbt_duckdb", "shared"), _macro("dbt_duckdb", "adapter"))},
        "dbt": {m.name: m for m in (_macro("dbt", "shared"), _macro("dbt", "adapter"), _macro("dbt", "core"),
                                    _macro("dbt", "other"))},
    }


@pytest.fixture
def patched(monkeypatch):
    """make_macros_on_first_use() applied for this test only; the generators made, counted."""
    monkeypatch.setattr(ManifestContext, "_build_namespace", ManifestContext._build_namespace)
    monkeypatch.setattr(ManifestContext, "to_dict", ManifestContext.to_dict)
    monkeypatch.setattr(jinja2.environment, "new_context", jinja2.environment.new_context)
    made: list[str] = []

    class Counted(MacroGenerator):
        def __init__(self, macro, *args):
            made.append(macro.unique_id)
            super().__init__(macro, *args)

    monkeypatch.setattr(dbt_jinja, "MacroGenerator", Counted)
    assert make_macros_on_first_use()
    return made


def _context(macros: dict, search: str = "pkg") -> ManifestContext:
    """A ManifestContext of a node in `search`, over `macros`, with BUILTINS, as dbt builds it."""
    context = ManifestContext.__new__(ManifestContext)
    context._ctx = {}
    context.manifest = SimpleNamespace(get_macros_by_package=lambda: macros)
    context.search_package = search
    context.macro_stack = MacroStack()
    context._get_namespace_builder = lambda: MacroNamespaceBuilder("bench", search, context.macro_stack, INTERNAL)
    context.generate_builtins = lambda: dict(BUILTINS)
    context.namespace = context._build_namespace()
    return context


def _dbts(macros: dict, search: str = "pkg") -> tuple[MacroNamespace, dict]:
    """dbt's own namespace and the context dict its to_dict makes of it (BUILTINS updated with it)."""
    namespace = MacroNamespaceBuilder("bench", search, MacroStack(), INTERNAL).build_namespace(macros, {})
    return namespace, {**BUILTINS, **dict(namespace)}


def _named(value):
    """What a context entry leads to: a macro's id, a package namespace's {name: id}, or itself."""
    if isinstance(value, MacroGenerator):
        return value.macro.unique_id
    if isinstance(value, dict) and value and all(isinstance(v, MacroGenerator) for v in value.values()):
        return {k: v.macro.unique_id for k, v in value.items()}
    return value


@pytest.mark.parametrize("search", ["pkg", "bench", "other"])
def test_every_name_leads_to_the_macro_dbt_gives_it_and_only_looked_up_names_are_made(macros, patched, search):
    context = _context(macros, search)
    ctx = context.to_dict()
    assert type(ctx) is MacrosOnFirstUse and ctx["context"] is ctx
    assert patched == []  # nothing made yet
    _, expected = _dbts(macros, search)
    assert ctx["shared"].macro.unique_id == expected["shared"].macro.unique_id
    assert patched == [expected["shared"].macro.unique_id]  # one looked up, one made
    assert "root_only" in ctx and "missing" not in ctx and ctx.get("missing", 7) == 7
    assert len(patched) == 1  # `in` makes nothing
    named = {k: _named(v) for k, v in ctx.items() if k not in ("context", "builtins")}
    assert named == {k: _named(v) for k, v in expected.items()}


def test_dispatch_finds_each_packages_macros_in_the_namespace(macros, patched):
    namespace = _context(macros).namespace
    dbt_namespace, _ = _dbts(macros)
    for package in ("dbt", "bench", "pkg", "other", None):
        for name in ("shared", "adapter", "core", "root_only", "local_only", "bench", "nothing"):
            if package not in (None, "dbt") and package not in dbt_namespace.packages:
                continue
            found, expected = namespace.get_from_package(package, name), dbt_namespace.get_from_package(package, name)
            assert _named(found) == _named(expected), (package, name)


def test_a_generator_is_made_once_per_macro_in_a_context(macros, patched):
    context = _context(macros)
    ctx = context.to_dict()
    assert ctx["adapter"] is context.namespace.global_project_namespace["adapter"] is ctx["dbt"]["adapter"]
    assert patched.count("macro.dbt_duckdb.adapter") == 1
    assert _context(macros).to_dict()["adapter"] is not ctx["adapter"]  # each context its own, bound to it
    assert ctx["adapter"].context is ctx


def test_reading_the_whole_context_makes_every_macro_first(macros, patched):
    _, expected = _dbts(macros)
    for read in (lambda c: dict(c), lambda c: c.copy(), lambda c: {**c}, lambda c: copy.copy(c),
                 lambda c: dict(c.items())):
        ctx = _context(macros).to_dict()
        whole = read(ctx)
        assert type(whole) is dict
        whole = {k: _named(v) for k, v in whole.items() if k not in ("context", "builtins")}
        assert whole == {k: _named(v) for k, v in expected.items()}
    ctx = _context(macros).to_dict()
    assert len(ctx) == len(expected) + 2  # with context and builtins
    ctx = _context(macros).to_dict()
    assert _named(ctx.pop("local_only")) == "macro.pkg.local_only" and "local_only" not in ctx
    ctx["shared"] = "set later"  # a later update wins, as over dbt's dict
    assert ctx["shared"] == "set later"


def test_rendering_keeps_the_macros_pending_and_sees_the_environments_globals(macros, patched):
    ctx = _context(macros).to_dict()
    made_all = []
    real = MacrosOnFirstUse.make_all
    MacrosOnFirstUse.make_all = lambda self: made_all.append(1) or real(self)
    try:
        assert get_rendered("{{ greet('you') }} {{ range(2) | list }}", ctx) == "hi you [0, 1]"
        assert get_rendered("{{ greet('x') }}", ctx, native=True) == "hi x"  # the path dbt renders configs by
    finally:
        MacrosOnFirstUse.make_all = real
    assert made_all == [] and sorted(set(patched)) == ["macro.bench.greet"]


def test_a_changed_search_order_keeps_dbts_namespace(macros, patched, monkeypatch):
    real_order = MacroNamespace._search_order

    def root_first(self):
        yield self.global_namespace
        yield from (d for d in real_order(self) if d is not self.global_namespace)

    monkeypatch.setattr(MacroNamespace, "_search_order", root_first)
    context = _context(macros)
    assert not hasattr(context.namespace, "macro_plan")  # dbt's own, every generator made
    ctx = context.to_dict()
    assert type(ctx) is dict and _named(ctx["shared"]) == "macro.bench.shared"


def test_the_projects_macros_are_planned_as_dbt_finds_them():
    """The parsed project (dbt, dbt-duckdb and the project's ~600 macros): for a node of each
    package, the plan gives every name dbt's namespace and context give it."""
    by_package = parsed_project().get_macros_by_package()
    assert set(by_package) == {"benchwh", "dbt", "dbt_duckdb"}
    for search in by_package:
        dbt_namespace = MacroNamespaceBuilder("benchwh", search, MacroStack(), INTERNAL).build_namespace(by_package, {})
        plan = MacroPlan(by_package, "benchwh", search, INTERNAL)
        assert plan.matches(dbt_namespace, dict(dbt_namespace)), search
        assert len(plan.flat) > 500
