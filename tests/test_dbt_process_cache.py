"""benchwh-dbt keeps what every dbt process works out the same (cli/dbt_guard.py): the Python code
Jinja compiles dbt's templates to and the JSON schemas dbt validates its configuration against.
With dbt's real Jinja environments and classes; the last test runs the real benchwh-dbt twice.
"""
from __future__ import annotations

import importlib.metadata
import json
import marshal

import jinja2
import pytest
from dbt.adapters.duckdb.credentials import DuckDBCredentials
from dbt.contracts.project import ProfileConfig, Project
from dbt_common.clients import jinja as dbt_jinja
from dbt_common.dataclass_schema import ValidationError, dbtClassMixin
from dbt_common.exceptions import CompilationError

from cli.dbt_guard import cache_compiled_templates, cache_validation_schemas, installed_versions
from tests.helpers.dbt_build import dbt_build, query

MACRO = "{% do items.append(1) %}{% for i in items %}hello {{ name | upper }} {% endfor %}{{ items | length }}"


@pytest.fixture
def compiled(monkeypatch, tmp_path) -> list[str]:
    """The sources Jinja really compiled while the cache in tmp_path/cache was installed."""
    sources: list[str] = []
    real = jinja2.Environment.compile

    def counted(self, source, *args, **kwargs):
        sources.append(source)
        return real(self, source, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counted)  # the real one is back after the test
    assert cache_compiled_templates(tmp_path / "cache")
    return sources


def kept_code(tmp_path) -> list:
    return sorted((tmp_path / "cache" / "templates").glob("*.code"))


def test_a_template_is_compiled_once_and_renders_the_same_from_the_kept_code(compiled, tmp_path):
    first = dbt_jinja.get_template(MACRO, {}).render({"name": "ada", "items": []})
    assert compiled == [MACRO] and len(kept_code(tmp_path)) == 1
    again = dbt_jinja.get_template(MACRO, {}).render({"name": "ada", "items": []})  # a new environment, as dbt makes
    assert compiled == [MACRO], "compiled again: the kept code was not used"
    assert first == again == "hello ADA 1"


def test_the_key_holds_the_environment_that_generated_the_code(compiled, tmp_path):
    """dbt's native environment generates other Python for the same source than its text one."""
    source = "{{ x }}"
    assert dbt_jinja.get_environment().compile(source, raw=True) != \
        dbt_jinja.get_environment(native=True).compile(source, raw=True)  # raw: never kept
    compiled.clear()
    dbt_jinja.get_template(source, {})
    dbt_jinja.get_template(source, {}, native=True)
    dbt_jinja.get_template(source, {}, native=True)
    assert compiled == [source, source] and len(kept_code(tmp_path)) == 2


def test_a_template_that_does_not_compile_is_never_kept(compiled, tmp_path):
    for _ in range(2):
        with pytest.raises(CompilationError, match="Expected an expression"):
            dbt_jinja.get_template("{% if %}never{% endif %}", {})
    assert len(compiled) == 2 and kept_code(tmp_path) == []


def test_a_damaged_entry_is_compiled_again_and_replaced(compiled, tmp_path):
    dbt_jinja.get_template(MACRO, {})
    [entry] = kept_code(tmp_path)
    entry.write_bytes(b"\x00torn")
    assert dbt_jinja.get_template(MACRO, {}).render({"name": "bo", "items": []}) == "hello BO 1"
    assert len(compiled) == 2
    assert isinstance(marshal.loads(entry.read_bytes()), type(compile("", "", "exec")))


def test_macro_debugging_compiles_as_dbt_does(compiled, tmp_path, monkeypatch):
    monkeypatch.setattr(dbt_jinja, "MACRO_DEBUGGING", "1")  # DBT_MACRO_DEBUGGING: source into linecache
    dbt_jinja.get_template(MACRO, {})
    dbt_jinja.get_template(MACRO, {})
    assert len(compiled) == 2 and kept_code(tmp_path) == []


def test_a_folder_that_cannot_be_written_only_costs_the_compile(monkeypatch, tmp_path):
    monkeypatch.setattr(jinja2.Environment, "compile", jinja2.Environment.compile)
    (tmp_path / "cache").write_text("a file where the folder would be")
    assert cache_compiled_templates(tmp_path / "cache")
    assert dbt_jinja.get_template(MACRO, {}).render({"name": "cy", "items": []}) == "hello CY 1"


@pytest.fixture
def built(monkeypatch) -> tuple[list[str], classmethod]:
    """The classes dbt really built a schema for, and dbt's `json_schema` counting them (what a new
    process would install the cache over)."""
    names: list[str] = []
    real = vars(dbtClassMixin)["json_schema"]

    def counted(cls):
        names.append(cls.__name__)
        return real.__func__(cls)

    plain = classmethod(counted)
    monkeypatch.setattr(dbtClassMixin, "json_schema", plain)  # dbt's is back after the test
    return names, plain


CLASSES = (Project, ProfileConfig, DuckDBCredentials)


def test_a_kept_schema_is_the_one_dbt_builds_and_validates_the_same(built, tmp_path, monkeypatch):
    names, plain = built
    assert cache_validation_schemas(tmp_path)
    first = {c.__name__: c.json_schema() for c in CLASSES}
    assert sorted(names) == sorted(c.__name__ for c in CLASSES)
    assert len(list((tmp_path / "schemas").glob("*.json"))) == 3
    monkeypatch.setattr(dbtClassMixin, "json_schema", plain)  # as a new process: nothing kept in memory
    assert cache_validation_schemas(tmp_path)
    again = {c.__name__: c.json_schema() for c in CLASSES}
    assert len(names) == 3, "built again: the kept schemas were not read"
    assert json.dumps(again, sort_keys=True) == json.dumps(first, sort_keys=True)
    assert set(again["Project"]["properties"]) >= {"name", "version", "profile"}
    with pytest.raises(ValidationError, match="'name' is a required property"):
        Project.validate({"version": "1.0"})


def test_another_package_version_builds_its_own_schemas(built, tmp_path, monkeypatch, request):
    names, plain = built
    assert cache_validation_schemas(tmp_path)
    Project.json_schema()
    real_version = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: "0.0.1" if name == "mashumaro" else real_version(name))
    installed_versions.cache_clear()  # as a new process with another mashumaro asks again
    request.addfinalizer(installed_versions.cache_clear)  # no made-up version left for later tests
    monkeypatch.setattr(dbtClassMixin, "json_schema", plain)
    assert cache_validation_schemas(tmp_path)
    Project.json_schema()
    assert names == ["Project", "Project"]
    assert len(list((tmp_path / "schemas").glob("*.json"))) == 2


def test_benchwh_dbt_keeps_its_work_for_the_next_build(tmp_path):
    """Two real builds through benchwh-dbt with their own cache folder: the first keeps the code of
    the templates it compiled and the schemas it built, the second finds every one of them kept
    (it writes nothing new: the keys do not depend on the process)."""
    from orchestration.dbt_cli import guarded_dbt_executable

    home = tmp_path / "home"
    home.mkdir()
    cache = tmp_path / "cache"
    dbt = ["env", f"BENCHWH_DBT_CACHE={cache}", guarded_dbt_executable()]
    kept = []
    for run in ("first", "second"):
        work = tmp_path / run
        build = dbt_build(home, work, ["build_info"], timeout=600, dbt=dbt)
        assert query(build, "select count(*) from audit.build_info") == [(1,)]
        kept.append(sorted(p.relative_to(cache) for p in cache.rglob("*") if p.is_file()))
    templates = [p for p in kept[0] if p.parts[0] == "templates"]
    assert len(templates) > 50 and any(p.parts[0] == "schemas" for p in kept[0])
    assert kept[1] == kept[0]
