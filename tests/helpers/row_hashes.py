"""Row hashes of every published table (marts, site, audit): one digest per table over its rows
in any order, so that two builds can be compared without keeping their files. audit.build_info
names the build (version, run id, start time, code revision) and differs in every build."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb

PER_BUILD = {"audit.build_info"}


def table_hashes(path: Path, without: dict[str, list[str]] | None = None) -> dict[str, dict]:
    """`without`: columns left out of a table's hash (columns added since the hashes were
    written), the others hashed in table order, so the rest of each row still compares."""
    without = without or {}
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = con.execute("SELECT table_schema, table_name FROM information_schema.tables "
                             "WHERE table_schema IN ('marts', 'site', 'audit') ORDER BY 1, 2").fetchall()
        out = {}
        for schema, table in tables:
            if f"{schema}.{table}" in PER_BUILD:
                continue
            left_out = set(without.get(f"{schema}.{table}", ()))
            columns = [c for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
                "ORDER BY ordinal_position", [schema, table]).fetchall() if c not in left_out]
            kept = ", ".join(f'"{c}"' for c in columns)
            digest, rows = con.execute(
                f'SELECT md5(string_agg(h, \'|\' ORDER BY h)), count(*) FROM '
                f'(SELECT md5(CAST(t AS VARCHAR)) AS h FROM (SELECT {kept} FROM "{schema}"."{table}") AS t)').fetchone()
            out[f"{schema}.{table}"] = {"rows": rows, "md5": digest}
        return out
    finally:
        con.close()


if __name__ == "__main__":  # python -m tests.helpers.row_hashes PUBLISHED.duckdb > FILE.json
    print(json.dumps(table_hashes(Path(sys.argv[1])), indent=1, sort_keys=True))
