"""What the site reads: the published `site.*` tables (from benchmarks.duckdb or the Parquet
exports) and exports/manifest.json, nothing else. Plain Python, no Dagster.

Every page section reads one site table through `SiteData.rows`: all columns of the rows whose key
equals the page's, in the order of named columns. No join, aggregate, filter on values or arithmetic
happens here or in the templates: a sentence, a choice of row or a frontier a page shows is a column
of the site tables (DESIGN §5), so any other site reading the exports shows the same. The published
site tables (dbt_project/models/site/_site__models.yml, contracts enforced) are the contract: a
missing table or column is an error, not a fallback.
"""
from __future__ import annotations

import json
from pathlib import Path

import duckdb


# the published site tables the pages read (dbt_project/models/site/)
SITE_TABLES = ("models", "hardware", "generation_leaderboard", "model_speeds_by_hardware", "model_memory_by_quant", "model_expected_speed",
               "model_cost_vs_api", "model_fits_on", "model_context_recall", "model_carbon", "model_builds",
               "model_contributors", "model_capabilities")


class SiteSourceError(Exception):
    """The published warehouse cannot be read as a site source (one line, names the cause)."""


def _sql_str(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


class SiteData:
    """An in-memory DuckDB holding views `site.<table>` over the published site tables only."""

    def __init__(self, source: Path, manifest_path: Path):
        source, manifest_path = Path(source), Path(manifest_path)
        if not manifest_path.is_file():
            raise SiteSourceError(f"no manifest at {manifest_path} (publish first: benchwh refresh)")
        try:
            self.manifest = json.loads(manifest_path.read_text())
        except (OSError, ValueError) as exc:
            raise SiteSourceError(f"unreadable manifest {manifest_path}: {exc}") from None
        self.con = duckdb.connect(":memory:")
        self.con.execute("CREATE SCHEMA site")
        self.tables: dict[str, list[str]] = {}
        if source.is_dir():
            self._from_exports(source)
        elif source.is_file():
            self._from_duckdb(source)
        else:
            raise SiteSourceError(f"no published warehouse at {source}")
        if not self.tables:
            raise SiteSourceError(f"{source} holds no site.* tables")
        missing = sorted(set(SITE_TABLES) - set(self.tables))
        if missing:
            raise SiteSourceError(f"{source} lacks the site tables {', '.join(missing)} (publish a current build)")

    def _from_duckdb(self, path: Path) -> None:
        try:
            self.con.execute(f"ATTACH {_sql_str(path)} AS pub (READ_ONLY)")
        except duckdb.Error as exc:
            raise SiteSourceError(f"cannot open {path}: {str(exc).splitlines()[0]}") from None
        names = self.con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'pub' "
                                 "AND schema_name = 'site' ORDER BY 1").fetchall()
        for (name,) in names:
            self.con.execute(f'CREATE VIEW site."{name}" AS SELECT * FROM pub.site."{name}"')
            self._note_columns(name)

    def _from_exports(self, folder: Path) -> None:
        for table, meta in sorted(self.manifest.get("tables", {}).items()):
            schema, name = table.split(".", 1)
            parquet = folder / meta.get("file", f"{name}.parquet")
            if schema != "site" or not parquet.is_file():
                continue
            self.con.execute(f'CREATE VIEW site."{name}" AS SELECT * FROM read_parquet({_sql_str(parquet)})')
            self._note_columns(name)

    def _note_columns(self, name: str) -> None:
        rows = self.con.execute(f'DESCRIBE site."{name}"').fetchall()
        self.tables[name] = [r[0] for r in rows]

    # --- version and sources -------------------------------------------------------------------

    @property
    def version(self) -> str:
        return self.manifest.get("version", "unknown")

    def sources(self) -> dict[str, dict]:
        return self.manifest.get("sources", {})

    # --- the one read ----------------------------------------------------------------------------

    def rows(self, table: str, order_by: tuple[str, ...], **equals) -> list[dict]:
        """`SELECT * FROM site.<table> WHERE <column> = <value> ... ORDER BY <order_by>`: nothing else.
        Order keys are column names, each optionally followed by " desc"."""
        if table not in self.tables:
            raise SiteSourceError(f"the published warehouse has no site.{table}")
        columns = set(self.tables[table])
        keys = []
        for key in order_by:
            name, _, direction = key.partition(" ")
            if name not in columns or direction not in ("", "desc"):
                raise SiteSourceError(f"site.{table} has no column {name} to order by")
            keys.append(f'"{name}" {direction or "asc"} nulls last')
        unknown = sorted(set(equals) - columns)
        if unknown:
            raise SiteSourceError(f"site.{table} has no column {unknown[0]}")
        where = " AND ".join(f'"{name}" = ?' for name in equals)
        sql = f'SELECT * FROM site."{table}"' + (f" WHERE {where}" if where else "") + " ORDER BY " + ", ".join(keys)
        cur = self.con.execute(sql, list(equals.values()))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
