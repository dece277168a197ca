"""Render the reference site: static HTML pages with inline SVG charts, no network needed."""
from __future__ import annotations

import json
import re
import shutil
from urllib.parse import quote
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from site_builder import charts, fmt
from site_builder.data import SiteData
from ingest.files import link_or_copy
from publish import release

TEMPLATES = Path(__file__).parent / "templates"
# speed-row `source` values -> the manifest source that delivered them
SPEED_SOURCE_TO_MANIFEST = {"localscore": "localscore", "runfile": "runs", "llama-bench": "runs", "ollama": "runs",
                            "llama-server": "runs", "vllm": "runs"}
LOCALSCORE_RESULT_URL = "https://www.localscore.ai/result/{}"
# DuckDB-WASM for the release page, installed by `make wasm` (site_builder/wasm/README.md)
WASM = Path(__file__).parent / "wasm"
WASM_FILES = {"duckdb.mjs": WASM / "dist" / "duckdb.mjs",
              "duckdb-browser-eh.worker.js": WASM / "node_modules/@duckdb/duckdb-wasm/dist/duckdb-browser-eh.worker.js",
              "duckdb-eh.wasm": WASM / "node_modules/@duckdb/duckdb-wasm/dist/duckdb-eh.wasm"}


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-") or "x"


@dataclass
class Page:
    path: str            # relative to the site root
    title: str
    kind: str            # index | leaderboard | model | hardware
    sources: set[str] = field(default_factory=set)


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    for name in ("tps", "interval", "rank_range", "count", "seconds", "gb", "usd", "tokens_short", "grams", "card_gb"):
        env.filters[name] = getattr(fmt, name)
    env.filters["slug"] = slug
    env.filters["build_label"] = build_label
    return env


def protocol_sentence(prompt_tokens, gen_tokens, n_runs_max) -> str:
    """The leaderboard's one-line protocol, from the profile's own token counts."""
    what = "How fast the model writes its answer: tokens per second"
    if gen_tokens:
        what += f" over {fmt.count(gen_tokens)} generated tokens"
    if prompt_tokens:
        what += f", after a prompt of about {fmt.count(prompt_tokens)} tokens"
    return (what + ". Median of the runs behind each row (up to " + fmt.count(n_runs_max) + "); the interval is the "
            "distribution-free 95% interval of the median (the range of the samples for 5 or fewer).")


def _speed_sources(rows: list[dict]) -> set[str]:
    out = set()
    for r in rows:
        for s in str(r.get("sources") or "").split(","):
            if s.strip():
                out.add(SPEED_SOURCE_TO_MANIFEST.get(s.strip(), s.strip()))
    return out


SOURCE_TEXT = {"localscore": "LocalScore", "runfile": "signed run"}


def _split(text) -> list[str]:
    return [t.strip() for t in str(text or "").split(",") if t.strip()]


def _source_links(row: dict) -> list[dict]:
    """One link per LocalScore result behind the row (run_ids holds <source>:<id>), then the other
    sources by name."""
    links, named = [], set()
    for item in _split(row.get("run_ids")):
        source, _, run_id = item.partition(":")
        if source == "localscore" and run_id:
            first = not any(link["href"] for link in links)
            links.append({"text": ("LocalScore #" if first else "#") + run_id,
                          "href": LOCALSCORE_RESULT_URL.format(quote(run_id, safe=""))})
    for source in _split(row.get("sources")):
        if source == "localscore" and any(link["href"] for link in links) or source in named:
            continue
        named.add(source)
        links.append({"text": SOURCE_TEXT.get(source, source), "href": None})
    return links


def build_label(quant, quantizer) -> str:
    return f"{quant} · {quantizer}" if quantizer else str(quant or "—")


def _packager_of(build_id) -> str | None:
    """Build ids are <model>@<quant>[@<repo>/<file>]: the repository owner packaged the file."""
    parts = str(build_id or "").split("@", 2)
    return parts[2].split("/", 1)[0] if len(parts) == 3 and "/" in parts[2] else None


def most_common(values):
    values = [v for v in values if v is not None]
    return max(set(values), key=lambda v: (values.count(v), str(v))) if values else None


class SiteBuilder:
    def __init__(self, data: SiteData, out: Path, exports: Path | None = None):
        self.data, self.out, self.exports = data, Path(out), exports
        self.env = _env()
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
        profiles = self.data.test_profiles()
        models = self.data.model_ids()
        hardware = self.data.hardware_ids()
        for profile in profiles:
            self.leaderboard(profile)
        for m in models:
            self.model(m["model_id"], m["model_name"] or m["model_id"])
        for h in hardware:
            self.hardware(h["hardware_id"], h["hardware_name"] or h["hardware_id"])
        has_release = self.release_page(models)
        index = Page("index.html", "Bench Warehouse", "index", set(self.data.sources()))
        self._write(index, "index.html", profiles=profiles, models=models, hardware=hardware, has_release=has_release)
        return self.pages

    # --- pages ---------------------------------------------------------------------------------

    def leaderboard(self, profile: str) -> None:
        rows = self.data.leaderboard_rows(profile)
        machines: dict[str, dict] = {}
        for r in rows:
            r["packager"] = _packager_of(r["build_id"])
            r["label"] = f"{r['model_name'] or r['model_id']} ({build_label(r['quant'], r['packager'])})"
            m = machines.setdefault(r["hardware_id"], {"hardware_id": r["hardware_id"],
                                                        "hardware_name": r["hardware_name"] or r["hardware_id"], "rows": []})
            m["rows"].append(r)
        for m in machines.values():
            m["chart"] = charts.interval_chart(m["rows"])
        prompt = max((r["prompt_tokens"] or 0 for r in rows), default=0)
        gen = max((r["gen_tokens"] or 0 for r in rows), default=0)
        page = Page(f"leaderboards/{slug(profile)}.html", f"Leaderboard {profile}", "leaderboard",
                    {"localscore", "runs"})
        self._write(page, "leaderboard.html", profile=profile, machines=list(machines.values()),
                    protocol=protocol_sentence(prompt, gen, max((r["n_runs"] or 0 for r in rows), default=0)),
                    sampling=most_common([r["protocol_sampling"] for r in rows]),
                    repetitions=most_common([r["protocol_repetitions"] for r in rows]),
                    any_derived=any(r["is_turn_time_derived"] for r in rows), gen_tokens=gen)

    def model(self, model_id: str, name: str) -> None:
        d = self.data
        speeds = d.measured_speeds(model_id)
        for r in speeds:
            r["links"] = _source_links(r)
        memory = d.memory_by_quant(model_id)
        expected = d.expected_speeds(model_id)
        cost = d.cost_vs_api(model_id)
        api_prices = [r["api_usd_per_mtok"] for r in cost if r["api_usd_per_mtok"] is not None]
        api_price = api_prices[0] if api_prices else None
        fits = d.fits_on(model_id)
        recall = d.context_recall(model_id)
        recall_sizes = sorted({r["context_tokens"] for r in recall})
        recall_rows: dict[tuple, dict] = {}
        for r in recall:
            row = recall_rows.setdefault((r["machine_id"], r["build_id"]), {**r, "cells": {}})
            row["cells"][r["context_tokens"]] = r["recalled"]
        capabilities = d.capabilities(model_id)
        proved = sorted({c["display_name"] for c in capabilities if c["passed"]})
        carbon = d.carbon(model_id)
        builds = d.builds(model_id)
        fit = next((r for r in expected if r["is_estimate"] and r["fit_n"] is not None), None)
        sources = _speed_sources(speeds) | {"huggingface"} if memory or builds else _speed_sources(speeds)
        if cost:
            sources.add("openrouter")
        if carbon:
            sources.add("grid")
        if expected and not speeds:
            sources |= {"huggingface"}
        page = Page(f"models/{slug(model_id)}.html", name, "model", sources)
        self._write(
            page, "model.html", model_id=model_id, name=name, speeds=speeds, memory=memory, expected=expected,
            fit=fit, cost=cost, api_price=api_price, price_chart=charts.speed_against_price(cost, api_price),
            fits=fits, recall_sizes=recall_sizes, recall_rows=list(recall_rows.values()),
            carbon=carbon, grid=d.sources().get("grid", {}), builds=builds,
            contributors=d.contributors(model_id), capabilities=capabilities, proved=proved,
            expected_chart=charts.bar_chart([r["hardware_name"] for r in expected if r["gen_tps"] is not None],
                                            [r["gen_tps"] for r in expected if r["gen_tps"] is not None],
                                            "expected tokens per second",
                                            [bool(r["is_estimate"]) for r in expected if r["gen_tps"] is not None]),
        )

    def hardware(self, hardware_id: str, name: str) -> None:
        rows = self.data.hardware_models(hardware_id)
        for r in rows:
            r["label"] = f"{r['model_name'] or r['model_id']} ({build_label(r['quant'], r['quantizer'])}, {r['engine']})"
        page = Page(f"hardware/{slug(hardware_id)}.html", name, "hardware", _speed_sources(rows))
        self._write(page, "hardware.html", hardware_id=hardware_id, name=name, rows=rows,
                    profiles=self.data.hardware_profiles(hardware_id),
                    chart=charts.bar_chart([r["label"] for r in rows], [r["gen_tps_median"] or 0 for r in rows],
                                           "median tokens per second"))


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
