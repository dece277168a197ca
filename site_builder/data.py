"""What the site reads: the published `site.*` tables (from benchmarks.duckdb or the Parquet
exports) and exports/manifest.json, nothing else. Plain Python, no Dagster.

Each page section reads through one small function below (`leaderboard_rows`, `measured_speeds`,
...), so a change of a site table's columns is a change of one function. The published site tables
(dbt_project/models/site/_site__models.yml, contracts enforced) are the contract: a missing table or
column is an error, not a fallback.
"""
from __future__ import annotations

import json
from pathlib import Path

import duckdb


# the published site tables the pages read (dbt_project/models/site/)
SITE_TABLES = ("generation_leaderboard", "model_speeds_by_hardware", "model_memory_by_quant", "model_expected_speed",
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
        """site.generation_leaderboard of one profile, every machine, fastest first (with the
        configuration of each row, where the published version has it)."""
        config = ("config_id, config_label, is_degraded_config" if self.has("generation_leaderboard", "config_label")
                  else "NULL AS config_id, NULL AS config_label, false AS is_degraded_config")
        return self.rows(f"""
            SELECT hardware_id, hardware_name, model_id, model_name, family, family_display, quant, engine, build_id,
                   {config},
                   gen_tps_median, gen_tps_ci_low, gen_tps_ci_high, interval_method,
                   rank_best, rank_worst, rank_of, prompt_tokens, gen_tokens, turn_time_ms_median,
                   is_turn_time_derived, protocol_sampling, protocol_repetitions, n_runs, n_samples
            FROM site.generation_leaderboard WHERE test_profile = ?
            ORDER BY lower(hardware_name), hardware_id, gen_tps_median DESC NULLS LAST, rank_best, build_id, engine,
                     config_id""",
                         [test_profile])

    # --- model page sections -------------------------------------------------------------------
    # builds are model x quant x file: a build's label comes from site.model_builds (quant, packager)

    def measured_speeds(self, model_id: str) -> list[dict]:
        """Measured speeds per build, machine and engine, with LocalScore's own averages and the run ids."""
        return self.rows("""
            SELECT s.hardware_id, s.hardware_name, s.build_id, s.quant, b.quantizer, s.engine,
                   s.gen_tps_median, s.prompt_tps_median, s.n_runs, s.n_samples, s.sources, s.test_names, s.run_ids,
                   s.localscore_avg_gen_tps, s.localscore_avg_prompt_tps, s.localscore_avg_ttft_ms,
                   s.n_localscore_runs
            FROM site.model_speeds_by_hardware s LEFT JOIN site.model_builds b USING (build_id)
            WHERE s.model_id = ? ORDER BY s.gen_tps_median DESC NULLS LAST, s.hardware_id, s.build_id, s.engine""",
                         [model_id])

    def memory_by_quant(self, model_id: str) -> list[dict]:
        return self.rows("""
            SELECT build_id, quant, file_name, packager AS quantizer, file_size_bytes, context_tokens,
                   estimated_bytes, smallest_card_name, smallest_card_memory_bytes, measured_peak_bytes,
                   estimate_error_pct
            FROM site.model_memory_by_quant WHERE model_id = ? ORDER BY estimated_bytes NULLS LAST, build_id""",
                         [model_id])

    def expected_speeds(self, model_id: str) -> list[dict]:
        return self.rows("""
            SELECT hardware_id, hardware_name, has_fitting_build, build_id, quant, engine, gen_tps, is_estimate,
                   n_runs_measured, fit_n, fit_mdape_pct, estimated_bytes
            FROM site.model_expected_speed WHERE model_id = ? ORDER BY gen_tps DESC NULLS LAST, hardware_id""",
                         [model_id])

    def cost_vs_api(self, model_id: str) -> list[dict]:
        return self.rows("""
            SELECT hardware_id, hardware_name, build_id, quant, engine, gen_tps_median, power_w, power_basis,
                   local_usd_per_mtok, openrouter_id, api_usd_per_mtok, local_to_api_ratio, measured_on
            FROM site.model_cost_vs_api WHERE model_id = ? ORDER BY local_usd_per_mtok NULLS LAST, hardware_id""",
                         [model_id])

    def fits_on(self, model_id: str) -> list[dict]:
        """What it fits on: per kind of machine, its memory, the smallest build and how many builds it holds."""
        return self.rows("""
            SELECT f.machine_kind, f.memory_bytes, f.memory_kind, f.smallest_build_id, f.smallest_needed_bytes,
                   b.quant AS smallest_quant, b.quantizer AS smallest_quantizer, f.builds_held, f.builds_total
            FROM site.model_fits_on f LEFT JOIN site.model_builds b ON b.build_id = f.smallest_build_id
            WHERE f.model_id = ? ORDER BY f.memory_bytes, f.machine_kind""", [model_id])

    def context_recall(self, model_id: str) -> list[dict]:
        """One row per (build, machine, context asked): recalled true / false / null (not held)."""
        return self.rows("""
            SELECT build_id, machine_id, machine_kind, headline_label, contributor, quant, quantizer,
                   context_tokens, recalled, stop_reason, stop_at_tokens
            FROM site.model_context_recall WHERE model_id = ?
            ORDER BY contributor NULLS LAST, machine_id, build_id, context_tokens""", [model_id])

    def carbon(self, model_id: str) -> list[dict]:
        """Per build x machine x grid area."""
        return self.rows("""
            SELECT build_id, quant, quantizer, machine_id, machine_kind, headline_label, hardware_id, hardware_name,
                   gco2_per_mtok, j_per_token, gco2_per_kwh, method, grid_area, grid_year, grid_basis, n_runs,
                   is_lowest_on_machine
            FROM site.model_carbon WHERE model_id = ?
            ORDER BY machine_kind, machine_id, gco2_per_mtok, build_id, grid_area""", [model_id])

    def builds(self, model_id: str) -> list[dict]:
        """Every build (model x quant x file): two packagers of one quant are two rows; `unfiled` marks
        the model@quant builds of sources that name no file (LocalScore)."""
        return self.rows("""
            SELECT build_id, quant, repo, file_name, quantizer, engine, memory_bytes, memory_basis,
                   file_size_bytes, context_proved_tokens, best_gen_tps, n_machines,
                   (file_name IS NULL AND repo IS NULL) AS unfiled
            FROM site.model_builds WHERE model_id = ?
            ORDER BY best_gen_tps DESC NULLS LAST, quant, quantizer NULLS LAST, build_id""", [model_id])

    def contributors(self, model_id: str) -> list[dict]:
        """Measured by: the owners of the trusted keys that signed the model's runs."""
        return self.rows("""
            SELECT contributor, n_runs, n_machines, machine_kinds, n_builds, last_measured_at
            FROM site.model_contributors WHERE model_id = ? ORDER BY n_runs DESC, contributor""", [model_id])

    def capabilities(self, model_id: str) -> list[dict]:
        """One row per build x capability checked."""
        return self.rows("""
            SELECT c.build_id, b.quant, b.quantizer, c.capability, c.display_name, c.passed, c.n_runs,
                   c.n_runs_passed, c.n_machines
            FROM site.model_capabilities c LEFT JOIN site.model_builds b USING (build_id)
            WHERE c.model_id = ? ORDER BY c.display_name, b.quant, b.quantizer, c.build_id""", [model_id])

    # --- hardware page -------------------------------------------------------------------------

    def hardware_models(self, hardware_id: str) -> list[dict]:
        return self.rows("""
            SELECT s.model_id, s.model_name, s.build_id, s.quant, b.quantizer, s.engine, s.gen_tps_median,
                   s.prompt_tps_median, s.n_runs, s.sources
            FROM site.model_speeds_by_hardware s LEFT JOIN site.model_builds b USING (build_id)
            WHERE s.hardware_id = ?
            ORDER BY s.gen_tps_median DESC NULLS LAST, s.model_id, s.quant, s.build_id""", [hardware_id])

    def hardware_profiles(self, hardware_id: str) -> list[dict]:
        return self.rows("""SELECT test_profile, count(*) AS n_entries, max(prompt_tokens) AS prompt_tokens,
                                   max(gen_tokens) AS gen_tokens
                            FROM site.generation_leaderboard WHERE hardware_id = ? GROUP BY 1 ORDER BY 1""", [hardware_id])
