"""benchwh-dbt skips the dbt events no logger writes (cli/dbt_guard.py), and only those.

dbt's own event manager and loggers (JSON lines, as dagster-dbt reads them) with dbt's real
events: a debug event below every logger is never built into a message, an info event is written
as before, and a debug event reaches a logger or a callback that asks for it.
"""
from __future__ import annotations

import io
import json

import pytest
from dbt.adapters.events.types import SQLQuery
from dbt_common.events import event_manager as dbt_event_manager
from dbt_common.events.base_types import EventLevel
from dbt_common.events.event_manager import EventManager
from dbt_common.events.logger import LineFormat, LoggerConfig
from dbt_common.events.types import Note

from cli.dbt_guard import skip_unlogged_dbt_events


@pytest.fixture
def built(monkeypatch) -> list[str]:
    """The names of the events dbt built into messages (its msg_from_base_event, counted)."""
    names: list[str] = []
    real = dbt_event_manager.msg_from_base_event

    def counted(event, level=None):
        names.append(type(event).__name__)
        return real(event, level=level)

    monkeypatch.setattr(dbt_event_manager, "msg_from_base_event", counted)
    monkeypatch.setattr(EventManager, "fire_event", EventManager.fire_event)  # restored after the test
    assert skip_unlogged_dbt_events()
    return names


def manager(level: EventLevel) -> tuple[EventManager, io.StringIO]:
    out = io.StringIO()
    em = EventManager()
    em.add_logger(LoggerConfig(name=f"test_{level.value}", line_format=LineFormat.Json, level=level,
                               output_stream=out))
    return em, out


def lines(out: io.StringIO) -> list[str]:
    return [json.loads(line)["info"]["name"] for line in out.getvalue().splitlines()]


def test_a_debug_event_below_every_logger_is_not_built(built):
    em, out = manager(EventLevel.INFO)
    em.fire_event(SQLQuery(conn_name="c", sql="select 1", node_info={}))
    em.fire_event(Note(msg="built"))
    assert built == ["Note"]
    assert lines(out) == ["Note"]


def test_a_debug_logger_still_gets_debug_events(built):
    em, out = manager(EventLevel.DEBUG)
    info_em, info_out = manager(EventLevel.INFO)
    em.loggers += info_em.loggers  # stdout at info, a file at debug: as `--log-level-file debug`
    em.fire_event(SQLQuery(conn_name="c", sql="select 1", node_info={}))
    assert built == ["SQLQuery"]
    assert lines(out) == ["SQLQuery"] and lines(info_out) == []


def test_a_callback_still_gets_debug_events_and_a_forced_level_counts(built):
    em, _ = manager(EventLevel.INFO)
    seen = []
    em.add_callback(lambda msg: seen.append(msg.info.name))
    em.fire_event(SQLQuery(conn_name="c", sql="select 1", node_info={}))
    assert seen == ["SQLQuery"]

    em2, out2 = manager(EventLevel.INFO)
    em2.fire_event(SQLQuery(conn_name="c", sql="select 2", node_info={}), level=EventLevel.INFO)
    assert lines(out2) == ["SQLQuery"]


def test_skipping_is_installed_once(built):
    patched = EventManager.fire_event
    assert skip_unlogged_dbt_events()
    assert EventManager.fire_event is patched


def test_a_print_event_is_written_under_quiet_with_no_file_log(built):
    """`dbt show --quiet` (stdout at error level) with DBT_LOG_LEVEL_FILE=none, as a build sets:
    dbt writes its print events at error level, so the table is printed, never skipped."""
    from dbt.events.types import ShowNode

    em, out = manager(EventLevel.ERROR)
    em.fire_event(ShowNode(node_name="inline_query", preview='[{"a": 1}]', is_inline=True, output_format="json",
                           unique_id="sql_operation.inline_query", quiet=True))
    em.fire_event(Note(msg="not at error level"))
    assert built == ["ShowNode"]
    assert lines(out) == ["ShowNode"]
