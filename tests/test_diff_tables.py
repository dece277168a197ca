"""publish/diff.py on two small warehouse files: added, removed and changed rows by primary key,
whole rows for a table without one, NULLs in keys, columns added (fast; no pipeline)."""
from __future__ import annotations

import duckdb

from publish.diff import KEYS_LISTED, diff_files


def make(path, statements: list[str]) -> None:
    con = duckdb.connect(str(path))
    try:
        con.execute("create schema marts")
        for sql in statements:
            con.execute(sql)
    finally:
        con.close()


def test_rows_are_added_removed_and_changed_by_primary_key(tmp_path):
    old, new = tmp_path / "old.duckdb", tmp_path / "new.duckdb"
    make(old, ["create table marts.prices (model_id varchar primary key, usd double)",
               "insert into marts.prices values ('a', 1.0), ('b', 2.0), ('c', 3.0), ('d', 4.0)"])
    make(new, ["create table marts.prices (model_id varchar primary key, usd double)",
               "insert into marts.prices values ('a', 1.0), ('b', 2.5), ('d', 4.0), ('e', 5.0), ('f', 6.0)"])
    result = diff_files(old, new)["tables"]["marts.prices"]
    assert result["key"] == ["model_id"]
    assert (result["added"], result["removed"], result["changed"]) == (2, 1, 1)
    assert result["added_keys"] == [{"model_id": "e"}, {"model_id": "f"}]
    assert result["removed_keys"] == [{"model_id": "c"}]
    assert result["changed_keys"] == [{"model_id": "b"}]
    # the other way round: what was added is removed, the change is a change again
    back = diff_files(new, old)["tables"]["marts.prices"]
    assert (back["added"], back["removed"], back["changed"]) == (1, 2, 1)


def test_a_table_without_a_key_is_compared_as_whole_rows_nulls_included(tmp_path):
    old, new = tmp_path / "old.duckdb", tmp_path / "new.duckdb"
    make(old, ["create table marts.names (raw_name varchar, hardware_id varchar)",
               "insert into marts.names values ('RTX 4090', 'nvidia-rtx-4090'), (null, 'x'), ('M2', null)"])
    make(new, ["create table marts.names (raw_name varchar, hardware_id varchar)",
               "insert into marts.names values ('RTX 4090', 'nvidia-rtx-4090'), (null, 'x'), ('M2', 'apple-m2')"])
    result = diff_files(old, new)["tables"]["marts.names"]
    assert result["key"] == ["raw_name", "hardware_id"]
    # a NULL matches a NULL (set semantics): only the M2 row differs, as one removed and one added
    assert (result["added"], result["removed"], result["changed"]) == (1, 1, 0)
    assert result["added_keys"] == [{"raw_name": "M2", "hardware_id": "apple-m2"}]
    assert result["removed_keys"] == [{"raw_name": "M2", "hardware_id": None}]


def test_identical_tables_are_left_out_and_counts_are_complete_beyond_the_listed_keys(tmp_path):
    old, new = tmp_path / "old.duckdb", tmp_path / "new.duckdb"
    rows = KEYS_LISTED + 25
    make(old, ["create table marts.same (id integer primary key, v integer)",
               "insert into marts.same select i, i from range(10) t(i)",
               "create table marts.runs (id integer primary key, gen_tps double)",
               f"insert into marts.runs select i, i from range({rows}) t(i)"])
    make(new, ["create table marts.same (id integer primary key, v integer)",
               "insert into marts.same select i, i from range(10) t(i)",
               "create table marts.runs (id integer primary key, gen_tps double, contributor varchar)",
               f"insert into marts.runs select i, i + 0.5, 'me' from range({rows}) t(i)"])
    summary = diff_files(old, new)
    assert summary["changed"] and list(summary["tables"]) == ["marts.runs"]
    result = summary["tables"]["marts.runs"]
    assert (result["added"], result["removed"], result["changed"]) == (0, 0, rows)
    assert len(result["changed_keys"]) == KEYS_LISTED and result["changed_keys"][0] == {"id": 0}
    assert result["columns_added"] == ["contributor"] and result["columns_removed"] == []
    assert not diff_files(old, old)["changed"]


KEYED = "create table marts.keyed (id varchar primary key, speed double, name varchar, measured_at timestamp, " \
        "ok boolean, tags varchar[])"
ROW = "1.5, 'a', timestamp '2026-01-01 00:00:00', true, ['x']"
OLD_KEYED = {"same": ROW, "speed": ROW, "name-to-null": ROW, "null-to-name": ROW.replace("'a'", "null"),
             "measured_at": ROW, "ok": ROW, "tags": ROW, "gone": ROW}
NEW_KEYED = {"same": ROW, "speed": ROW.replace("1.5", "1.5000000001"), "name-to-null": ROW.replace("'a'", "null"),
             "null-to-name": ROW, "measured_at": ROW.replace("00:00:00", "00:00:01"), "ok": ROW.replace("true", "false"),
             "tags": ROW.replace("['x']", "['x', 'y']"), "new": ROW}


def keyed_rows(rows: dict[str, str]) -> list[str]:
    return [KEYED] + [f"insert into marts.keyed values ('{key}', {values})" for key, values in rows.items()]


def test_a_change_in_any_column_of_a_keyed_row_is_found_by_its_key(tmp_path):
    """A keyed table's rows are compared as key and hash of the whole row: a change of one value,
    of a value to NULL or back, of a timestamp, a boolean or a list, is a change of that key."""
    old, new = tmp_path / "old.duckdb", tmp_path / "new.duckdb"
    make(old, keyed_rows(OLD_KEYED))
    make(new, keyed_rows(NEW_KEYED))
    result = diff_files(old, new)["tables"]["marts.keyed"]
    assert [k["id"] for k in result["changed_keys"]] == sorted(
        ["speed", "name-to-null", "null-to-name", "measured_at", "ok", "tags"])
    assert (result["added_keys"], result["removed_keys"]) == ([{"id": "new"}], [{"id": "gone"}])


def test_the_same_keyed_rows_in_another_order_are_no_change(tmp_path):
    old, new = tmp_path / "old.duckdb", tmp_path / "new.duckdb"
    make(old, keyed_rows(OLD_KEYED))
    make(new, keyed_rows(dict(reversed(OLD_KEYED.items()))))
    assert not diff_files(old, new)["changed"]
