"""The offline snapshot publishes the rows it published before dbt ran stock (issue 51): every
table of marts, site and audit, compared by row hashes with tests/data/published_rows_offline.json.
A change that means to change rows writes that file again (its `about` says how)."""
from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.row_hashes import table_hashes

EXPECTED = Path(__file__).parent / "data" / "published_rows_offline.json"


def test_the_offline_snapshot_publishes_the_same_rows(offline_warehouse):
    doc = json.loads(EXPECTED.read_text())
    expected = doc["tables"]
    # columns added since (the configuration grain, issue 52) are left out: every other value of
    # every row still compares with the hashes written before
    published = table_hashes(offline_warehouse / "benchmarks.duckdb", without=doc["added_columns"])
    assert sorted(published) == sorted(expected)
    changed = {t: (expected[t], published[t]) for t in expected if published[t] != expected[t]}
    assert changed == {}


def test_row_hashes_see_one_changed_value_and_not_the_order(tmp_path):
    import duckdb

    db = tmp_path / "p.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create schema marts; create table marts.t as select * from (values (1, 'a'), (2, 'b')) v(x, y)")
    con.close()
    before = table_hashes(db)
    con = duckdb.connect(str(db))
    con.execute("create or replace table marts.t as select * from (values (2, 'b'), (1, 'a')) v(x, y)")
    con.close()
    assert table_hashes(db) == before  # the same rows in another order
    con = duckdb.connect(str(db))
    con.execute("update marts.t set y = 'c' where x = 2")
    con.close()
    assert table_hashes(db)["marts.t"] != before["marts.t"]
