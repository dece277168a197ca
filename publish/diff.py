"""What changed between two published versions, table by table (no Dagster import).

Rows are matched by each table's primary key (the dbt contracts declare one); a table without
one is compared as a set of whole rows. `audit.build_info` is left out: it names the build, so
it differs in every version. The same summary goes into the manifest of the version a refresh
publishes; an empty one means the refresh publishes nothing.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from ingest import config

IGNORED_TABLES = {"audit.build_info"}
KEYS_LISTED = 50  # keys listed per table and kind; the counts are always complete


class DiffError(Exception):
    pass


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_str(text) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def history_path(version: str) -> Path:
    return config.home() / "history" / f"{version}.duckdb"


def resolve_versions(old: str | None, new: str | None) -> tuple[Path, Path]:
    """Paths of two published versions: NEW defaults to the published one, OLD to the one before NEW."""
    from publish.history import list_history, read_version

    available = list_history()
    if new is None:
        current = read_version(config.published_path())
        if current is None:
            raise DiffError(f"nothing published in {config.home()} (run `benchwh refresh`)")
        new = current["version"]
    if new not in available:
        raise DiffError(f"unknown version {new}; available: {', '.join(available) or 'none'}")
    if old is None:
        older = [v for v in available if v < new]
        if not older:
            raise DiffError(f"no version older than {new} in history/")
        old = older[-1]
    elif old not in available:
        raise DiffError(f"unknown version {old}; available: {', '.join(available)}")
    return history_path(old), history_path(new)


def _tables(con, db: str) -> dict[str, list[str]]:
    rows = con.execute(f"SELECT schema_name || '.' || table_name, column_name FROM duckdb_columns() "
                       f"WHERE database_name = {_sql_str(db)} ORDER BY schema_name, table_name, column_index").fetchall()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return {t: c for t, c in out.items() if t not in IGNORED_TABLES}


def _primary_key(con, db: str, table: str) -> list[str] | None:
    schema, name = table.split(".", 1)
    rows = con.execute("SELECT constraint_column_names FROM duckdb_constraints() WHERE database_name = ? "
                       "AND schema_name = ? AND table_name = ? AND constraint_type = 'PRIMARY KEY'",
                       [db, schema, name]).fetchall()
    return list(rows[0][0]) if rows else None


def _version(con, db: str) -> str | None:
    try:
        rows = con.execute(f"SELECT version FROM {db}.audit.build_info").fetchall()
    except duckdb.Error:
        return None
    return rows[0][0] if rows else None


def _keys(con, sql: str, key: list[str]) -> tuple[int, list[dict]]:
    """Count and first keys of a set operation, run once (kept in a temporary table)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE diff_keys AS {sql}")
    n = con.execute("SELECT count(*) FROM diff_keys").fetchall()[0][0]
    rows = con.execute(f"SELECT * FROM diff_keys ORDER BY ALL LIMIT {KEYS_LISTED}").fetchall() if n else []
    return n, [dict(zip(key, r)) for r in rows]


def _compare_table(con, table: str, old_cols: list[str], new_cols: list[str], key: list[str] | None) -> dict:
    schema, name = table.split(".", 1)
    o, n = f"old.{_q(schema)}.{_q(name)}", f"new.{_q(schema)}.{_q(name)}"
    common = [c for c in new_cols if c in old_cols]
    if not key or not all(k in common for k in key):
        key = common
    k = ", ".join(_q(c) for c in key)
    cols = ", ".join(_q(c) for c in common)
    # The keys of the new rows that are not old rows, read both tables once: an added key is among
    # them (no old row has it), a changed one too (an old row has it). A keyed table's rows are
    # compared as (key, hash of the whole row): 64 bits say a row changed, the set operation then
    # holds two columns instead of every column (fct_speed_measurements: 1.3-2.0 s -> 0.4 s here).
    rows = cols if key == common else f"{k}, hash({cols}) AS diff_row_hash"
    con.execute(f"CREATE OR REPLACE TEMP TABLE diff_new_rows AS "
                f"SELECT {k} FROM (SELECT {rows} FROM {n} EXCEPT SELECT {rows} FROM {o})")
    added_n, added = _keys(con, f"SELECT {k} FROM diff_new_rows EXCEPT SELECT {k} FROM {o}", key)
    removed_n, removed = _keys(con, f"SELECT {k} FROM {o} EXCEPT SELECT {k} FROM {n}", key)
    changed_n, changed = _keys(con, f"SELECT {k} FROM diff_new_rows INTERSECT SELECT {k} FROM {o}", key)
    out = {"key": key, "added": added_n, "removed": removed_n, "changed": changed_n,
           "added_keys": added, "removed_keys": removed, "changed_keys": changed}
    if set(old_cols) != set(new_cols):
        out["columns_added"] = [c for c in new_cols if c not in old_cols]
        out["columns_removed"] = [c for c in old_cols if c not in new_cols]
    return out


def _new_runs(con, tables: dict) -> tuple[list[dict], list[dict]]:
    t = "marts.fct_speed_measurements"
    if t not in tables["old"] or t not in tables["new"]:
        return [], []
    sql = "SELECT DISTINCT source, source_run_id FROM {a}.marts.fct_speed_measurements EXCEPT " \
          "SELECT DISTINCT source, source_run_id FROM {b}.marts.fct_speed_measurements ORDER BY ALL"
    added = [{"source": s, "source_run_id": r} for s, r in con.execute(sql.format(a="new", b="old")).fetchall()]
    removed = [{"source": s, "source_run_id": r} for s, r in con.execute(sql.format(a="old", b="new")).fetchall()]
    return added, removed


def _new_models(con, tables: dict) -> list[dict]:
    t = "marts.dim_model"
    if t not in tables["old"] or t not in tables["new"]:
        return []
    rows = con.execute("SELECT model_id, name FROM new.marts.dim_model WHERE model_id NOT IN "
                       "(SELECT model_id FROM old.marts.dim_model) ORDER BY 1").fetchall()
    return [{"model_id": m, "name": name} for m, name in rows]


def _price_changes(con, tables: dict) -> list[dict]:
    """The latest OpenRouter price of each model, where it differs between the versions."""
    t = "marts.fct_api_prices"
    if t not in tables["old"] or t not in tables["new"]:
        return []
    latest = ("SELECT openrouter_id, arg_max(prompt_usd_per_mtok, valid_from) AS prompt, "
              "arg_max(completion_usd_per_mtok, valid_from) AS completion FROM {db}.marts.fct_api_prices GROUP BY 1")
    rows = con.execute(f"""
        SELECT coalesce(n.openrouter_id, o.openrouter_id), o.prompt, n.prompt, o.completion, n.completion
        FROM ({latest.format(db='old')}) o FULL JOIN ({latest.format(db='new')}) n USING (openrouter_id)
        WHERE o.prompt IS DISTINCT FROM n.prompt OR o.completion IS DISTINCT FROM n.completion
        ORDER BY 1""").fetchall()
    return [{"openrouter_id": r[0], "old_prompt_usd_per_mtok": r[1], "new_prompt_usd_per_mtok": r[2],
             "old_completion_usd_per_mtok": r[3], "new_completion_usd_per_mtok": r[4]} for r in rows]


def diff_files(old_path: Path, new_path: Path) -> dict:
    """Compare two warehouse files opened read-only; `changed` is False when no table differs."""
    for p in (old_path, new_path):
        if not Path(p).is_file():
            raise DiffError(f"no warehouse file {p}")
    con = duckdb.connect(":memory:", config=config.duckdb_config(file_less=True))
    try:
        con.execute(f"ATTACH {_sql_str(old_path)} AS old (READ_ONLY)")
        con.execute(f"ATTACH {_sql_str(new_path)} AS new (READ_ONLY)")
        tables = {"old": _tables(con, "old"), "new": _tables(con, "new")}
        summary: dict = {"old": _version(con, "old"), "new": _version(con, "new"), "tables": {},
                         "tables_added": sorted(set(tables["new"]) - set(tables["old"])),
                         "tables_removed": sorted(set(tables["old"]) - set(tables["new"]))}
        for table in sorted(set(tables["old"]) & set(tables["new"])):
            result = _compare_table(con, table, tables["old"][table], tables["new"][table],
                                    _primary_key(con, "new", table))
            if result["added"] or result["removed"] or result["changed"] or result.get("columns_added") \
                    or result.get("columns_removed"):
                summary["tables"][table] = result
        summary["new_runs"], summary["removed_runs"] = _new_runs(con, tables)
        summary["new_models"] = _new_models(con, tables)
        summary["price_changes"] = _price_changes(con, tables)
    finally:
        con.close()
    summary["changed"] = bool(summary["tables"] or summary["tables_added"] or summary["tables_removed"])
    return summary


def diff_versions(old_path: Path, new_path: Path) -> dict:
    try:
        return diff_files(old_path, new_path)
    except duckdb.Error as exc:
        raise DiffError(f"cannot compare {old_path.name} and {new_path.name}: {str(exc).splitlines()[0]}") from None


def _key_text(key: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in key.items())


def format_text(s: dict) -> str:
    lines = [f"{s['old']} -> {s['new']}: " + ("no table changed" if not s["changed"] else
                                              f"{len(s['tables'])} tables changed")]
    for t in s["tables_added"]:
        lines.append(f"  new table {t}")
    for t in s["tables_removed"]:
        lines.append(f"  table removed {t}")
    if s["new_runs"]:
        lines.append(f"new runs ({len(s['new_runs'])}):")
        lines += [f"  {r['source']} {r['source_run_id']}" for r in s["new_runs"]]
    if s["removed_runs"]:
        lines.append(f"runs gone ({len(s['removed_runs'])}):")
        lines += [f"  {r['source']} {r['source_run_id']}" for r in s["removed_runs"]]
    if s["new_models"]:
        lines.append(f"new models ({len(s['new_models'])}): " + ", ".join(m["model_id"] for m in s["new_models"]))
    if s["price_changes"]:
        lines.append(f"price changes ({len(s['price_changes'])}), USD per Mtok prompt/completion:")
        for p in s["price_changes"]:
            lines.append(f"  {p['openrouter_id']}: {p['old_prompt_usd_per_mtok']}/{p['old_completion_usd_per_mtok']}"
                         f" -> {p['new_prompt_usd_per_mtok']}/{p['new_completion_usd_per_mtok']}")
    for table, t in s["tables"].items():
        lines.append(f"{table}: +{t['added']} added, -{t['removed']} removed, ~{t['changed']} changed"
                     f" (key {', '.join(t['key'])})")
        if t.get("columns_added") or t.get("columns_removed"):
            lines.append(f"  columns added {t.get('columns_added')}, removed {t.get('columns_removed')}")
        for kind, sign in (("added_keys", "+"), ("removed_keys", "-"), ("changed_keys", "~")):
            for key in t[kind]:
                lines.append(f"  {sign} {_key_text(key)}")
            total = t[kind.split("_")[0]]
            if total > len(t[kind]):
                lines.append(f"  {sign} ... and {total - len(t[kind])} more")
    return "\n".join(lines)
