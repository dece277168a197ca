"""What the site reads: the published `site.*` tables (from benchmarks.duckdb or the Parquet
exports) and exports/manifest.json, nothing else. Plain Python, no Dagster.

Each page section reads through one small function below (`leaderboard_rows`, `measured_speeds`,
...), so a change of a site table's columns is a change of one function. Sections written against
DESIGN §5's pinned columns fall back to today's columns where the pinned ones are absent.
"""
from __future__ import annotations

import json
from pathlib import Path

import duckdb


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

    def has(self, table: str, *columns: str) -> bool:
        return table in self.tables and all(c in self.tables[table] for c in columns)

    def rows(self, sql: str, params: list | None = None) -> list[dict]:
        cur = self.con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def col(self, table: str, *candidates: str, default: str = "NULL") -> str:
        """The first of `candidates` that `table` has (pinned name first, today's name after)."""
        for c in candidates:
            if self.has(table, c):
                return f'"{c}"'
        return default

    # --- version and sources -------------------------------------------------------------------

    @property
    def version(self) -> str:
        return self.manifest.get("version", "unknown")

    def sources(self) -> dict[str, dict]:
        return self.manifest.get("sources", {})

    # --- what gets a page ----------------------------------------------------------------------

    def test_profiles(self) -> list[str]:
        if not self.has("generation_leaderboard"):
            return []
        return [r["test_profile"] for r in self.rows(
            "SELECT DISTINCT test_profile FROM site.generation_leaderboard ORDER BY 1")]

    def model_ids(self) -> list[dict]:
        """Every model some site table names, with its name (the model pages)."""
        parts = [f'SELECT model_id, {self.col(t, "model_name")} AS model_name FROM site."{t}"'
                 for t in self.tables if self.has(t, "model_id")]
        if not parts:
            return []
        return self.rows(f"SELECT model_id, max(model_name) AS model_name FROM ({' UNION ALL '.join(parts)}) "
                         "WHERE model_id IS NOT NULL GROUP BY 1 ORDER BY lower(coalesce(max(model_name), model_id))")

    def hardware_ids(self) -> list[dict]:
        """Every machine with a measurement (the hardware pages)."""
        parts = [f'SELECT hardware_id, hardware_name FROM site."{t}"'
                 for t in ("generation_leaderboard", "model_speeds_by_hardware") if self.has(t, "hardware_id", "hardware_name")]
        if not parts:
            return []
        return self.rows(f"SELECT hardware_id, max(hardware_name) AS hardware_name FROM ({' UNION ALL '.join(parts)}) "
                         "GROUP BY 1 ORDER BY lower(max(hardware_name))")

    # --- leaderboard ---------------------------------------------------------------------------

    def leaderboard_rows(self, test_profile: str) -> list[dict]:
        """site.generation_leaderboard of one profile, every machine, fastest first."""
        return self.rows("""
            SELECT hardware_id, hardware_name, model_id, model_name, family, quant, engine, build_id,
                   gen_tps_median, gen_tps_ci_low, gen_tps_ci_high, interval_method,
                   rank_best, rank_worst, rank_of, prompt_tokens, gen_tokens, turn_time_ms_median, n_runs, n_samples
            FROM site.generation_leaderboard WHERE test_profile = ?
            ORDER BY lower(hardware_name), hardware_id, gen_tps_median DESC NULLS LAST, rank_best, model_id, quant, engine""",
                         [test_profile])

    # --- model page sections -------------------------------------------------------------------

    def measured_speeds(self, model_id: str) -> list[dict]:
        """Measured speeds by hardware; run ids (for source links) where the table carries them."""
        t = "model_speeds_by_hardware"
        if not self.has(t):
            return []
        run_ids = self.col(t, "source_run_ids", "run_ids")
        return self.rows(f"""
            SELECT hardware_id, hardware_name, build_id, quant, engine, gen_tps_median, prompt_tps_median,
                   n_runs, n_samples, sources, {run_ids} AS run_ids
            FROM site.{t} WHERE model_id = ? ORDER BY gen_tps_median DESC NULLS LAST, hardware_id""", [model_id])

    def memory_by_quant(self, model_id: str) -> list[dict]:
        t = "model_memory_by_quant"
        if not self.has(t):
            return []
        return self.rows(f"""
            SELECT build_id, quant, file_name, {self.col(t, "quantizer", "packager")} AS quantizer, file_size_bytes,
                   context_tokens, estimated_bytes, smallest_card_name, smallest_card_memory_gb,
                   measured_peak_bytes, estimate_error_pct
            FROM site.{t} WHERE model_id = ? ORDER BY estimated_bytes NULLS LAST, build_id""", [model_id])

    def expected_speeds(self, model_id: str) -> list[dict]:
        t = "model_expected_speed"
        if not self.has(t):
            return []
        return self.rows(f"""
            SELECT hardware_id, hardware_name, has_fitting_build, build_id, quant, engine, gen_tps, is_estimate,
                   n_runs_measured, fit_n, fit_mdape_pct, estimated_bytes
            FROM site.{t} WHERE model_id = ? ORDER BY gen_tps DESC NULLS LAST, hardware_id""", [model_id])

    def cost_vs_api(self, model_id: str) -> list[dict]:
        t = "model_cost_vs_api"
        if not self.has(t):
            return []
        return self.rows(f"""
            SELECT hardware_id, hardware_name, build_id, quant, engine, gen_tps_median, power_w, power_basis,
                   local_usd_per_mtok, openrouter_id, api_usd_per_mtok, local_to_api_ratio, measured_on
            FROM site.{t} WHERE model_id = ? ORDER BY local_usd_per_mtok NULLS LAST, hardware_id""", [model_id])

    def fits_on(self, model_id: str) -> list[dict]:
        """What it fits on: pinned site.model_fits_on where present, else the popular machines of
        site.model_expected_speed (kind = that machine, held = whether a build fits)."""
        t = "model_fits_on"
        if self.has(t, "machine_kind"):
            return self.rows(f"""
                SELECT machine_kind, memory_bytes, smallest_build_id, builds_held, builds_total
                FROM site.{t} WHERE model_id = ? ORDER BY memory_bytes NULLS LAST, machine_kind""", [model_id])
        if not (self.has("model_expected_speed") and self.has("model_memory_by_quant")):
            return []
        # a machine that holds any build holds the smallest one (same memory estimates)
        return self.rows("""
            WITH builds AS (SELECT build_id, estimated_bytes FROM site.model_memory_by_quant WHERE model_id = ?)
            SELECT e.hardware_name AS machine_kind, NULL AS memory_bytes,
                   CASE WHEN e.has_fitting_build THEN (SELECT arg_min(build_id, estimated_bytes) FROM builds) END
                       AS smallest_build_id,
                   CASE WHEN e.has_fitting_build THEN NULL ELSE 0 END AS builds_held,
                   (SELECT count(*) FROM builds) AS builds_total
            FROM site.model_expected_speed e WHERE e.model_id = ? ORDER BY e.hardware_name""", [model_id, model_id])

    def context_recall(self, model_id: str) -> list[dict]:
        """One row per (build, machine, context): pinned per-machine rows where present, else today's
        per-build aggregate (machine unknown, recalled when most runs recalled)."""
        t = "model_context_recall"
        if not self.has(t):
            return []
        if self.has(t, "machine_id", "recalled"):
            return self.rows(f"""
                SELECT build_id, machine_id, {self.col(t, "contributor")} AS contributor, context_tokens, recalled,
                       {self.col(t, "stop_reason")} AS stop_reason
                FROM site.{t} WHERE model_id = ? ORDER BY build_id, machine_id, context_tokens""", [model_id])
        return self.rows(f"""
            SELECT build_id, NULL AS machine_id, NULL AS contributor, context_tokens,
                   n_recalled * 2 > n_runs AS recalled, NULL AS stop_reason
            FROM site.{t} WHERE model_id = ? ORDER BY build_id, context_tokens""", [model_id])

    def carbon(self, model_id: str) -> list[dict]:
        t = "model_carbon"
        if not self.has(t):
            return []
        return self.rows(f"""
            SELECT hardware_id, hardware_name, build_id, quant, gco2_per_mtok, j_per_token, method, grid_area,
                   grid_year, n_runs
            FROM site.{t} WHERE model_id = ? ORDER BY gco2_per_mtok NULLS LAST, hardware_id""", [model_id])

    def builds(self, model_id: str) -> list[dict]:
        """Every build: DESIGN §5 pinned columns, today's names where the pinned ones are absent."""
        t = "model_builds"
        if not self.has(t):
            return []
        c = lambda *names: self.col(t, *names)  # noqa: E731
        return self.rows(f"""
            SELECT build_id, quant, {c("repo", "hf_repo")} AS repo, file_name,
                   {c("quantizer", "packager")} AS quantizer, {c("engine", "engines")} AS engine,
                   {c("memory_bytes", "estimated_bytes")} AS memory_bytes, context_proved_tokens,
                   best_gen_tps, n_machines
            FROM site.{t} WHERE model_id = ? ORDER BY best_gen_tps DESC NULLS LAST, build_id""", [model_id])

    def contributors(self, model_id: str) -> list[dict]:
        """Measured by: site.model_contributors where present, else the sources of the speed rows."""
        if self.has("model_contributors"):
            return self.rows("""SELECT contributor, n_runs, n_machines FROM site.model_contributors
                                WHERE model_id = ? ORDER BY n_runs DESC, contributor""", [model_id])
        if not self.has("model_speeds_by_hardware"):
            return []
        return self.rows("""
            SELECT s.source AS contributor, sum(n_runs) AS n_runs, count(DISTINCT hardware_id) AS n_machines
            FROM site.model_speeds_by_hardware, unnest(string_split(sources, ', ')) AS s(source)
            WHERE model_id = ? GROUP BY 1 ORDER BY 2 DESC, 1""", [model_id])

    def capabilities(self, model_id: str) -> list[dict]:
        if not self.has("model_capabilities"):
            return []
        return self.rows("""SELECT display_name, bool_or(passed) AS passed, count(DISTINCT build_id) AS n_builds
                            FROM site.model_capabilities WHERE model_id = ? GROUP BY 1 ORDER BY 1""", [model_id])

    # --- hardware page -------------------------------------------------------------------------

    def hardware_models(self, hardware_id: str) -> list[dict]:
        if not self.has("model_speeds_by_hardware"):
            return []
        return self.rows("""
            SELECT model_id, model_name, build_id, quant, engine, gen_tps_median, prompt_tps_median, n_runs, sources
            FROM site.model_speeds_by_hardware WHERE hardware_id = ?
            ORDER BY gen_tps_median DESC NULLS LAST, model_id, quant""", [hardware_id])

    def hardware_profiles(self, hardware_id: str) -> list[dict]:
        if not self.has("generation_leaderboard"):
            return []
        return self.rows("""SELECT test_profile, count(*) AS n_entries, max(prompt_tokens) AS prompt_tokens,
                                   max(gen_tokens) AS gen_tokens
                            FROM site.generation_leaderboard WHERE hardware_id = ? GROUP BY 1 ORDER BY 1""", [hardware_id])
