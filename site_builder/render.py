"""Render the reference site: static HTML pages with inline SVG charts, no network needed."""
from __future__ import annotations

import itertools
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from site_builder import charts, fmt
from site_builder.data import SiteData
from ingest.files import link_or_copy
from publish import release

TEMPLATES = Path(__file__).parent / "templates"
# DuckDB-WASM for the release page, installed by `make wasm` (site_builder/wasm/README.md)
WASM = Path(__file__).parent / "wasm"
WASM_FILES = {"duckdb.mjs": WASM / "dist" / "duckdb.mjs",
              "duckdb-browser-eh.worker.js": WASM / "node_modules/@duckdb/duckdb-wasm/dist/duckdb-browser-eh.worker.js",
              "duckdb-eh.wasm": WASM / "node_modules/@duckdb/duckdb-wasm/dist/duckdb-eh.wasm"}
# the filters a template may use: each formats one value (site_builder/fmt.py); none computes
FORMAT_FILTERS = ("tps", "interval", "rank_range", "count", "seconds", "gib", "usd", "tokens_short", "grams",
                  "watts", "ratio", "percent", "build_label", "source_label", "stop_reason_text", "bandwidth",
                  "repos", "number", "cell_text")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-") or "x"


@dataclass
class Page:
    path: str            # relative to the site root
    title: str
    kind: str            # index | leaderboard | model | hardware | release
    sources: set[str] = field(default_factory=set)


def template_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    for name in FORMAT_FILTERS:
        env.filters[name] = getattr(fmt, name)
    env.filters["slug"] = slug
    return env


def grouped(rows: list[dict], *keys: str) -> list[tuple[object, list[dict]]]:
    """Consecutive rows with the same values of `keys`, in the order given: laying rows out in
    sections (one board per machine, one grid row per walk), not choosing or counting any."""
    return [(value, list(items))
            for value, items in itertools.groupby(rows, key=lambda r: tuple(r[k] for k in keys))]


class SiteBuilder:
    def __init__(self, data: SiteData, out: Path, exports: Path | None = None):
        self.data, self.out, self.exports = data, Path(out), exports
        self.env = template_env()
        self.pages: list[Page] = []
        self.notes: list[str] = []  # one line each, printed by `benchwh site build`

    def _write(self, page: Page, template: str, **ctx) -> None:
        depth = page.path.count("/")
        html = self.env.get_template(template).render(
            page=page, root="../" * depth, version=self.data.version, manifest=self.data.manifest,
            page_sources=[(name, self.data.sources().get(name, {})) for name in sorted(page.sources)], **ctx)
        target = self.out / page.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html)
        self.pages.append(page)

    def build(self) -> list[Page]:
        if self.out.exists():
            shutil.rmtree(self.out)
        self.out.mkdir(parents=True)
        d = self.data
        boards = d.rows("generation_leaderboard", ("test_profile", "hardware_name", "hardware_id",
                                                   "gen_tps_median desc", "rank_best", "build_id", "engine", "config_id"))
        profiles = grouped(boards, "test_profile")
        for (profile,), rows in profiles:
            self.leaderboard(profile, rows)
        models = d.rows("models", ("display_name", "model_id"))
        for m in models:
            self.model(m)
        hardware = d.rows("hardware", ("display_name", "hardware_id"))
        for h in hardware:
            self.hardware(h)
        has_release = self.release_page(models)
        index = Page("index.html", "Bench Warehouse", "index", set(d.sources()))
        self._write(index, "index.html", profiles=[rows[0] for _, rows in profiles], models=models,
                    hardware=hardware, has_release=has_release)
        return self.pages

    # --- pages ---------------------------------------------------------------------------------

    def leaderboard(self, profile: str, rows: list[dict]) -> None:
        machines = [{"hardware_id": hardware_id, "rows": board, "chart": charts.interval_chart(board)}
                    for (hardware_id,), board in grouped(rows, "hardware_id")]
        page = Page(f"leaderboards/{slug(profile)}.html", rows[0]["profile_display_name"], "leaderboard",
                    {"localscore", "runs"})
        self._write(page, "leaderboard.html", profile=rows[0], machines=machines)

    def model(self, model: dict) -> None:
        d, model_id = self.data, model["model_id"]
        speeds = d.rows("model_speeds_by_hardware", ("gen_tps_median desc", "hardware_id", "build_id", "engine"),
                        model_id=model_id)
        memory = d.rows("model_memory_by_quant", ("estimated_bytes", "build_id"), model_id=model_id)
        expected = d.rows("model_expected_speed", ("gen_tps desc", "hardware_id"), model_id=model_id)
        cost = d.rows("model_cost_vs_api", ("local_usd_per_mtok", "hardware_id", "build_id", "engine"), model_id=model_id)
        fits = d.rows("model_fits_on", ("memory_bytes", "machine_kind"), model_id=model_id)
        recall = d.rows("model_context_recall", ("contributor", "machine_id", "build_id", "context_tokens"),
                        model_id=model_id)
        carbon = d.rows("model_carbon", ("gco2_per_mtok", "machine_id", "build_id", "grid_area"), model_id=model_id)
        lowest = d.rows("model_carbon", ("gco2_per_mtok", "machine_id"), model_id=model_id, is_lowest_on_machine=True)
        builds = d.rows("model_builds", ("best_gen_tps desc", "quant", "quantizer", "build_id"), model_id=model_id)
        capabilities = d.rows("model_capabilities", ("display_name", "build_id"), model_id=model_id)
        derivatives = d.rows("models", ("display_name", "model_id"), base_model_id=model_id)
        walks = [{"cells": cells, **cells[0]} for _, cells in grouped(recall, "contributor", "machine_id", "build_id")] if recall else []
        sources = {"huggingface"} | ({"localscore", "runs"} if speeds else set())
        sources |= {"openrouter"} if cost else set()
        sources |= {"grid"} if carbon else set()
        page = Page(f"models/{slug(model_id)}.html", model["display_name"] or model_id, "model", sources)
        self._write(
            page, "model.html", model=model, speeds=speeds, memory=memory, expected=expected, cost=cost,
            price_chart=charts.speed_against_price(cost, model["api_usd_per_mtok"]),
            fits=fits, fits_chart=charts.fits_on_bars(fits, builds), walks=walks,
            recall_sizes=[c["context_tokens"] for c in walks[0]["cells"]] if walks else [],
            carbon=carbon, lowest=lowest, carbon_chart=charts.carbon_bars(lowest), grid=d.sources().get("grid", {}),
            builds=builds, contributors=d.rows("model_contributors", ("n_runs desc", "contributor"), model_id=model_id),
            capabilities=capabilities, derivatives=derivatives,
            proofs=d.rows("model_capabilities", ("display_name",), model_id=model_id, is_proof_listed=True),
            expected_chart=charts.bar_chart(expected, "hardware_name", "gen_tps", "expected tokens per second",
                                            estimate_key="is_estimate"),
        )

    def hardware(self, hw: dict) -> None:
        d, hardware_id = self.data, hw["hardware_id"]
        rows = d.rows("model_speeds_by_hardware", ("gen_tps_median desc", "model_id", "quant", "build_id"),
                      hardware_id=hardware_id)
        boards = d.rows("generation_leaderboard", ("test_profile", "gen_tps_median desc", "rank_best", "build_id",
                                                   "engine", "config_id"), hardware_id=hardware_id)
        page = Page(f"hardware/{slug(hardware_id)}.html", hw["display_name"] or hardware_id, "hardware",
                    {"localscore", "runs"} if rows else set())
        self._write(page, "hardware.html", hw=hw, rows=rows, boards=grouped(boards, "test_profile"),
                    chart=charts.bar_chart(rows, "entry_label", "gen_tps_median", "median tokens per second"))

    def release_page(self, models: list[dict]) -> bool:
        """release.html: one model's speeds queried from the latest release in the browser (DuckDB-WASM).
        The release folder and latest.json are linked into the site, so the page reads them over HTTP
        from the same server; nothing is fetched from elsewhere."""
        latest_path = self.exports / release.LATEST if self.exports else None
        if latest_path is None or not latest_path.exists():
            self.notes.append("release page skipped: no exports/latest.json beside the manifest (publish first)")
            return False
        missing = [name for name, path in WASM_FILES.items() if not path.exists()]
        if missing:
            self.notes.append(f"release page skipped: DuckDB-WASM is not installed ({missing[0]}; run `make wasm`)")
            return False
        latest = json.loads(latest_path.read_text())
        _link_tree(self.exports / latest["path"], self.out / latest["path"])
        shutil.copyfile(latest_path, self.out / release.LATEST)
        for name, path in WASM_FILES.items():
            _link_tree(path, self.out / "vendor" / "duckdb" / name)
        page = Page("release.html", "Measured speeds from the release", "release", {"localscore", "runs"})
        self._write(page, "release.html", models=models, release_version=latest["version"],
                    release_path=latest["path"])
        return True


def _link_tree(source: Path, target: Path) -> None:
    """Hard links (a copy across file systems) of a file or a folder's files."""
    files = [source] if source.is_file() else sorted(p for p in source.iterdir() if p.is_file())
    for item in files:
        dest = target if source.is_file() else target / item.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        link_or_copy(item, dest)


def build_site(source: Path, manifest: Path, out: Path) -> SiteBuilder:
    """Build the site into `out`; the builder's `pages` and `notes` say what was written."""
    builder = SiteBuilder(SiteData(source, manifest), out, exports=Path(manifest).parent)
    builder.build()
    return builder
