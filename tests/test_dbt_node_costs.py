"""benchwh-dbt's cuts to what dbt pays per statement (cli/dbt_guard.py), with dbt's real classes:
event messages are built on first use, an empty result table skips agate's type inference, and
mashumaro writes a class's serializers when they are first called.
"""
from __future__ import annotations

import io
import json
import subprocess
import sys
from types import SimpleNamespace

import agate
import pytest
from dbt.adapters.events.types import SQLQuery
from dbt_common.clients import agate_helper
from dbt_common.events import base_types
from dbt_common.events.base_types import BaseEvent, EventLevel
from dbt_common.events.event_manager import EventManager
from dbt_common.events.logger import LineFormat, LoggerConfig

from cli.dbt_guard import build_event_messages_lazily, empty_tables_without_type_inference, skip_unlogged_dbt_events
from tests.helpers.dbt_build import parsed_project
from tests.helpers.paths import PROJECT_ROOT


@pytest.fixture
def parsed(monkeypatch) -> list[str]:
    """The event messages dbt parsed from fields (its ParseDict, counted), as in benchwh-dbt."""
    names: list[str] = []
    real = base_types.ParseDict

    def counted(fields, message):
        if not type(message).__name__.endswith("Msg"):  # not the envelope a logged event is written in
            names.append(type(message).__name__)
        return real(fields, message)

    monkeypatch.setattr(base_types, "ParseDict", counted)
    for name in ("__init__", "__getattr__", "__setattr__"):  # restored after the test
        monkeypatch.setattr(BaseEvent, name, vars(BaseEvent)[name])
    monkeypatch.setattr(EventManager, "fire_event", EventManager.fire_event)
    assert build_event_messages_lazily() and skip_unlogged_dbt_events()
    return names


def fired(level: EventLevel, event) -> list[dict]:
    out = io.StringIO()
    em = EventManager()
    em.add_logger(LoggerConfig(name=f"test_{level.value}", line_format=LineFormat.Json, level=level,
                               output_stream=out))
    em.fire_event(event)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_an_event_no_one_reads_never_parses_its_message(parsed):
    event = SQLQuery(conn_name="c", sql="select 1", node_info={})
    assert parsed == []
    assert fired(EventLevel.INFO, event) == []  # below the logger: skipped (skip_unlogged_dbt_events)
    assert parsed == []


def test_a_logged_event_is_written_with_its_fields(parsed):
    [line] = fired(EventLevel.DEBUG, SQLQuery(conn_name="c", sql="select 1", node_info={}))
    assert parsed == ["SQLQuery"]
    assert line["info"]["name"] == "SQLQuery" and line["data"]["sql"] == "select 1"


def test_fields_read_and_set_before_the_message_exists(parsed):
    event = SQLQuery(conn_name="c", sql="select 1", node_info={})
    assert event.sql == "select 1" and parsed == ["SQLQuery"]
    event.sql = "select 2"
    assert event.to_dict()["sql"] == "select 2"
    assert parsed == ["SQLQuery"]  # once

    later = SQLQuery(conn_name="c", sql="select 3", node_info={})
    later.sql = "select 4"  # the first use may be a write
    assert later.to_dict()["sql"] == "select 4"


def test_a_bad_field_fails_as_dbt_made_it_fail_when_the_message_is_used(parsed):
    event = SQLQuery(conn_name="c", sql="select 1", node_info={}, no_such_field=1)
    with pytest.raises(Exception, match=r"\[SQLQuery\]: Unable to parse logging event dictionary"):
        event.to_dict()  # dbt raises under pytest and warns otherwise


def test_lazy_events_are_installed_once(parsed):
    installed = BaseEvent.__init__
    assert build_event_messages_lazily()
    assert BaseEvent.__init__ is installed


def test_an_empty_result_table_has_no_rows_columns_or_type_tester(monkeypatch):
    monkeypatch.setattr(agate_helper, "empty_table", agate_helper.empty_table)  # restored after
    assert empty_tables_without_type_inference()

    def no_inference(*args, **kwargs):
        raise AssertionError("agate inferred the types of an empty table")

    monkeypatch.setattr(agate.TypeTester, "__init__", no_inference)
    table = agate_helper.empty_table()
    assert isinstance(table, agate.Table)
    assert (len(table.rows), table.column_names, table.column_types) == (0, (), ())
    assert table is not agate_helper.empty_table()  # a new table each time, as dbt made them


SCHEMA_PROBE = """
import json, sys
if sys.argv[1] == "lazy":
    from cli.dbt_guard import compile_serializers_lazily
    assert compile_serializers_lazily()
import dbt.cli.main  # noqa: F401  (what benchwh-dbt imports)
from dbt.adapters.duckdb.credentials import DuckDBCredentials
from dbt.contracts.project import Project, ProfileConfig
from mashumaro.jsonschema.models import JSONSchema
written = sorted(name for name in vars(JSONSchema) if "_dict_json" in name)  # the orjson (de)serializers
schemas = {c.__name__: c.json_schema() for c in (Project, ProfileConfig, DuckDBCredentials)}
print(json.dumps({"written_at_import": written, "schemas": schemas}, sort_keys=True))
"""


def _probe(mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SCHEMA_PROBE, mode], capture_output=True, text=True,
                          timeout=120, cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_mashumaro_writes_serializers_on_first_call_with_the_same_validation_schemas():
    """In a new process each (the setting must precede dbt's import): with it, importing dbt writes
    none of mashumaro's JSONSchema orjson methods; the schemas dbt validates the project, profile
    and DuckDB credentials against are the same as without it."""
    eager, lazy = _probe("eager"), _probe("lazy")
    assert eager["written_at_import"], "mashumaro no longer writes them at import: the setting is moot"
    assert lazy["written_at_import"] == []
    assert lazy["schemas"] == eager["schemas"]
    assert set(lazy["schemas"]["Project"]["properties"]) >= {"name", "version", "profile"}


@pytest.mark.parametrize("switch, command, writes", [("0", "build", False), ("0", "parse", True),
                                                     ("1", "build", True), (None, "build", True)])
def test_a_build_switched_off_writes_no_manifest_json_and_leaves_the_manifest_as_writing_it(
        monkeypatch, tmp_path, switch, command, writes):
    import dbt.flags
    import dbt.parser.manifest as parser_manifest
    import dbt.task.runnable as runnable

    from cli.dbt_guard import MANIFEST_JSON_SWITCH, build_without_manifest_json

    written = parser_manifest.write_manifest
    for module in (parser_manifest, runnable):  # put back after the test
        monkeypatch.setattr(module, "write_manifest", written)
    assert build_without_manifest_json() and not build_without_manifest_json()  # once
    assert runnable.write_manifest is parser_manifest.write_manifest is not written
    monkeypatch.setattr(dbt.flags, "GLOBAL_FLAGS", SimpleNamespace(WHICH=command, SEND_ANONYMOUS_USAGE_STATS=False))
    if switch is None:
        monkeypatch.delenv(MANIFEST_JSON_SWITCH, raising=False)
    else:
        monkeypatch.setenv(MANIFEST_JSON_SWITCH, switch)

    switched, reference = parsed_project(), parsed_project()
    runnable.write_manifest(switched, str(tmp_path / "switched"))
    written(reference, str(tmp_path / "reference"))
    assert (tmp_path / "switched" / "manifest.json").exists() == writes
    assert (tmp_path / "switched" / "semantic_manifest.json").exists() == writes
    on_disk = json.loads((tmp_path / "reference" / "manifest.json").read_text())
    assert switched.parent_map == reference.parent_map == on_disk["parent_map"] and switched.parent_map
    assert switched.child_map == reference.child_map == on_disk["child_map"]
    assert switched.group_map == reference.group_map is not None
    assert switched.metadata.send_anonymous_usage_stats is reference.metadata.send_anonymous_usage_stats is False
