"""LocalScore (localscore.ai): benchmark runs from its JSON API, per-test rows from its result pages.

Shapes (cjpais/LocalScore, src/pages/api/results.ts, src/db/queries.ts, src/pages/result/[id].tsx):
- `GET /api/results?sortDirection=desc&limit=1..100&page=N` answers a JSON array of runs, newest
  first: the benchmark_runs columns (id, system_id, accelerator_id, model_variant_id, runtime_id,
  avg_prompt_tps, avg_gen_tps, avg_ttft_ms, performance_score, created_at as "YYYY-MM-DD HH:MM:SS"
  UTC without a zone) plus accelerator (name), accelerator_type, accelerator_memory_gb,
  model {id, name, params, quant, variantId}, system {...}, runtime {...}.
- `GET /result/<id>` is a Next.js page; the same run with `results` (one object per test:
  name such as "pp1024+tg16", n_prompt, n_gen, avg_time_ms, power_watts, prompt_tps, gen_tps,
  prompt_tps_watt, gen_tps_watt, vram_used_mb, ttft_ms) sits in the page's
  `<script id="__NEXT_DATA__">` JSON at props.pageProps.result. An unknown id answers
  HTTP 200 with result null and "Result not found" in the body.

Fetch is incremental: API pages are read newest first until a page holds only runs already
known, then the result page of every new run is fetched. Nothing here deduplicates runs across
payloads: an API page re-fetched later lists runs again, and a result page repeats its run.
Downstream keeps the latest row per run_id.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any, Iterable
from urllib.parse import urlsplit

import pandas as pd
import pandera.pandas as pa
from bs4 import BeautifulSoup, SoupStrainer
from pandera.typing import Series

from ingest.coerce import to_float, to_int, to_text
from ingest.http import FetchError
from ingest.landing.rules import QUARANTINE_SHARE_LIMIT
from ingest.landing.schema import LandingSchema
from ingest.raw_store import RawEntry
from ingest.source import Entity, FetchContext, PayloadRejected, Source, SourceFailed

PAGE_LIMIT = 100  # the API's maximum page size; every bounded page but the last is full
MAX_PAGES = 10_000  # a guard against a server that never runs out of pages
TEST_NAME = re.compile(r"^(?:pp(?P<pp>\d+))?\+?(?:tg(?P<tg>\d+))?$")
EARLIEST = pd.Timestamp("2020-01-01")  # LocalScore launched in 2025; older stamps are broken


# ---- entities ------------------------------------------------------------------------------

class LocalScoreRunsSchema(LandingSchema):
    """One LocalScore run as one API page listed it."""

    run_id: Series[int] = pa.Field(ge=1, description="LocalScore's benchmark run id")
    created_at: Series[pd.Timestamp] = pa.Field(ge=EARLIEST, description="Submission time, UTC (naive)")
    accelerator_id: Series[pd.Int64Dtype] = pa.Field(nullable=True, description="LocalScore's accelerator id")
    accelerator_name: Series[str] = pa.Field(str_length={"min_value": 1}, nullable=True,
                                             description="Accelerator name as reported (some CPU runs have none)")
    accelerator_type: Series[str] = pa.Field(nullable=True, description="CPU or GPU")
    accelerator_memory_gb: Series[float] = pa.Field(ge=0, le=4096, nullable=True,
                                                    description="Accelerator memory as reported (GB, e.g. 23.59)")
    accelerator_manufacturer: Series[str] = pa.Field(nullable=True, description="Manufacturer, where given")
    model_id: Series[pd.Int64Dtype] = pa.Field(nullable=True, description="LocalScore's model id")
    model_variant_id: Series[pd.Int64Dtype] = pa.Field(nullable=True, description="LocalScore's model variant id")
    model_name: Series[str] = pa.Field(str_length={"min_value": 1}, description="Model name as reported")
    model_quant: Series[str] = pa.Field(nullable=True, description="Quantization as reported (e.g. 'Q4_K - Medium')")
    model_params: Series[pd.Int64Dtype] = pa.Field(ge=0, nullable=True, description="Parameter count")
    runtime_id: Series[pd.Int64Dtype] = pa.Field(nullable=True, description="LocalScore's runtime id")
    runtime_name: Series[str] = pa.Field(nullable=True, description="Runtime, e.g. llamafile")
    runtime_version: Series[str] = pa.Field(nullable=True, description="Runtime version")
    runtime_commit: Series[str] = pa.Field(nullable=True, description="Runtime commit hash")
    system_id: Series[pd.Int64Dtype] = pa.Field(nullable=True, description="LocalScore's system id")
    cpu_name: Series[str] = pa.Field(nullable=True, description="CPU name as reported")
    cpu_arch: Series[str] = pa.Field(nullable=True, description="CPU architecture (x86_64, arm64)")
    ram_gb: Series[float] = pa.Field(ge=0, le=65536, nullable=True, description="System RAM (GB)")
    kernel_type: Series[str] = pa.Field(nullable=True, description="OS kernel: Linux, Darwin, Windows, FreeBSD")
    kernel_release: Series[str] = pa.Field(nullable=True, description="OS kernel release")
    system_version: Series[str] = pa.Field(nullable=True, description="Full system version string")
    avg_prompt_tps: Series[float] = pa.Field(ge=0, le=1e7, nullable=True, description="Mean prompt tokens/s over the tests")
    avg_gen_tps: Series[float] = pa.Field(ge=0, le=1e6, nullable=True, description="Mean generation tokens/s over the tests")
    avg_ttft_ms: Series[float] = pa.Field(ge=0, le=1e8, nullable=True, description="Mean time to first token (ms)")
    performance_score: Series[float] = pa.Field(ge=0, le=1e7, nullable=True, description="LocalScore's score")



class LocalScoreTestsSchema(LandingSchema):
    """One test of one LocalScore run (from its result page)."""

    run_id: Series[int] = pa.Field(ge=1, description="LocalScore's benchmark run id")
    test_id: Series[pd.Int64Dtype] = pa.Field(nullable=True, description="LocalScore's test result id")
    test_index: Series[int] = pa.Field(ge=0, description="Position of the test on the page")
    test_name: Series[str] = pa.Field(str_length={"min_value": 1}, description="Test name, e.g. pp1024+tg16")
    n_prompt: Series[pd.Int64Dtype] = pa.Field(ge=0, le=10_000_000, nullable=True, description="Prompt tokens")
    n_gen: Series[pd.Int64Dtype] = pa.Field(ge=0, le=10_000_000, nullable=True, description="Generated tokens")
    avg_time_ms: Series[float] = pa.Field(ge=0, le=1e9, nullable=True, description="Mean wall time of the test (ms)")
    prompt_tps: Series[float] = pa.Field(ge=0, le=1e7, description="Prompt processing tokens/s")
    gen_tps: Series[float] = pa.Field(ge=0, le=1e6, description="Generation tokens/s")
    ttft_ms: Series[float] = pa.Field(ge=0, le=1e8, nullable=True, description="Time to first token (ms)")
    power_watts: Series[float] = pa.Field(ge=0, le=10_000, nullable=True,
                                          description="Mean power (W); 0 where the machine reports none")
    prompt_tps_watt: Series[float] = pa.Field(ge=0, le=1e7, nullable=True, description="Prompt tokens/s per watt")
    gen_tps_watt: Series[float] = pa.Field(ge=0, le=1e6, nullable=True, description="Generation tokens/s per watt")
    vram_used_mb: Series[float] = pa.Field(ge=0, le=4_194_304, nullable=True, description="VRAM used (MB), rarely given")
    created_at: Series[pd.Timestamp] = pa.Field(ge=EARLIEST, nullable=True, description="Test row time, UTC (naive)")



RUN_COLUMNS = list(LocalScoreRunsSchema.to_schema().columns)
TEST_COLUMNS = list(LocalScoreTestsSchema.to_schema().columns)


# ---- helpers -------------------------------------------------------------------------------

def utc_naive(value: Any) -> pd.Timestamp | None:
    """LocalScore times ("2025-03-19 21:50:27", UTC without a zone, or ISO with a zone) -> naive UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # sqlite integer timestamps: seconds (or ms) since the epoch
        seconds = value / 1000 if value > 1e11 else value
        return pd.Timestamp(datetime.fromtimestamp(seconds, tz=timezone.utc).replace(tzinfo=None))
    ts = pd.Timestamp(str(value).strip())
    if ts.tzinfo is not None:
        ts = ts.tz_convert("UTC").tz_localize(None)
    return ts


def parse_test_name(name: str | None) -> tuple[int | None, int | None]:
    """'pp1024+tg16' -> (1024, 16); 'tg128' -> (0, 128); unknown shapes -> (None, None)."""
    if not name:
        return None, None
    m = TEST_NAME.fullmatch(name.strip())
    if not m or (m.group("pp") is None and m.group("tg") is None):
        return None, None
    return int(m.group("pp") or 0), int(m.group("tg") or 0)


def _first(obj: dict, *keys: str) -> Any:
    for key in keys:
        if key in obj and obj[key] is not None:
            return obj[key]
    return None


def run_row(run: dict) -> dict:
    """One run object (API or page shape) -> one landing row. Raises KeyError/TypeError if unusable."""
    model = run.get("model")
    if isinstance(model, dict):
        model_name = model.get("name")
        model_quant = _first(model, "quant", "quantization")
        model_params = model.get("params")
        model_id = model.get("id")
        variant_id = _first(model, "variantId", "variant_id")
    else:  # the early API flattened the model to its name
        model_name, model_quant, model_params, model_id = model, run.get("quantization"), None, None
        variant_id = None
    if variant_id is None:
        variant_id = run.get("model_variant_id")
    accel = run.get("accelerator")
    if isinstance(accel, dict):
        accel_name, accel_type = accel.get("name"), accel.get("type")
        accel_mem, accel_maker = accel.get("memory_gb"), accel.get("manufacturer")
        accel_id = accel.get("id", run.get("accelerator_id"))
    else:
        accel_name, accel_type = accel, run.get("accelerator_type")
        accel_mem, accel_maker = run.get("accelerator_memory_gb"), run.get("accelerator_manufacturer")
        accel_id = run.get("accelerator_id")
    system = run.get("system") or {}
    runtime = run.get("runtime") or {}
    # a CPU run without an accelerator name still lands: the build names it by its CPU
    if run.get("id") is None or model_name is None or (accel_name is None and str(accel_type).upper() != "CPU"):
        raise KeyError("id, model name or accelerator name")
    return {
        "run_id": to_int(run["id"]),
        "created_at": utc_naive(_first(run, "created_at", "run_date")),
        "accelerator_id": to_int(accel_id),
        "accelerator_name": to_text(accel_name),
        "accelerator_type": to_text(accel_type),
        "accelerator_memory_gb": to_float(accel_mem),
        "accelerator_manufacturer": to_text(accel_maker),
        "model_id": to_int(model_id),
        "model_variant_id": to_int(variant_id),
        "model_name": to_text(model_name),
        "model_quant": to_text(model_quant),
        "model_params": to_int(model_params),
        "runtime_id": to_int(_first(runtime, "id") if runtime else run.get("runtime_id")),
        "runtime_name": to_text(runtime.get("name")),
        "runtime_version": to_text(runtime.get("version")),
        "runtime_commit": to_text(_first(runtime, "commit_hash", "commit")),
        "system_id": to_int(_first(system, "id") if system else run.get("system_id")),
        "cpu_name": to_text(system.get("cpu_name")),
        "cpu_arch": to_text(system.get("cpu_arch")),
        "ram_gb": to_float(system.get("ram_gb")),
        "kernel_type": to_text(system.get("kernel_type")),
        "kernel_release": to_text(system.get("kernel_release")),
        "system_version": to_text(_first(system, "system_version", "version")),
        "avg_prompt_tps": to_float(run.get("avg_prompt_tps")),
        "avg_gen_tps": to_float(run.get("avg_gen_tps")),
        "avg_ttft_ms": to_float(_first(run, "avg_ttft_ms", "avg_ttft")),
        "performance_score": to_float(run.get("performance_score")),
    }


def test_rows(run_id: int, results: list) -> list[dict]:
    rows = []
    for i, t in enumerate(results):
        if not isinstance(t, dict):
            raise TypeError(f"test {i} is not an object")
        name = to_text(t.get("name"))
        pp, tg = parse_test_name(name)
        rows.append({
            "run_id": run_id,
            "test_id": to_int(t.get("id")),
            "test_index": i,
            "test_name": name,
            "n_prompt": to_int(t["n_prompt"]) if t.get("n_prompt") is not None else pp,
            "n_gen": to_int(t["n_gen"]) if t.get("n_gen") is not None else tg,
            "avg_time_ms": to_float(t.get("avg_time_ms")),
            "prompt_tps": to_float(t.get("prompt_tps")),
            "gen_tps": to_float(t.get("gen_tps")),
            "ttft_ms": to_float(t.get("ttft_ms")),
            "power_watts": to_float(t.get("power_watts")),
            "prompt_tps_watt": to_float(t.get("prompt_tps_watt")),
            "gen_tps_watt": to_float(t.get("gen_tps_watt")),
            "vram_used_mb": to_float(t.get("vram_used_mb")),
            "created_at": utc_naive(t.get("created_at")),
        })
    return rows


def frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)


def result_id_from_url(url: str) -> str | None:
    m = re.search(r"/result/([^/?#]+)/?$", urlsplit(url).path)
    return m.group(1) if m else None


def is_api_page(url: str) -> bool:
    return urlsplit(url).path.rstrip("/").endswith("/api/results")


NEXT_DATA_TAG = b'<script id="__NEXT_DATA__" type="application/json">'  # as Next.js writes it


def next_data_fast(body: bytes) -> Any:
    """The `__NEXT_DATA__` JSON read straight from the bytes (BeautifulSoup took ~3.5 ms a page),
    or None when the page is not in the exact shape Next.js writes: the name once, in that tag,
    its text free of `</` and `<!--` up to `</script>`, UTF-8, valid JSON. Then next_data_soup()
    reads it, so both give the same data wherever the fast path answers."""
    if body.count(b"__NEXT_DATA__") != 1:
        return None
    start = body.find(NEXT_DATA_TAG)
    if start < 0:
        return None
    start += len(NEXT_DATA_TAG)
    end = body.find(b"</", start)
    if end < 0 or body[end:end + 9].lower() != b"</script>" or b"<!--" in body[start:end]:
        return None
    try:
        return json.loads(body[start:end].decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is one
        return None


def next_data_soup(body: bytes, rid: str) -> Any:
    """The `__NEXT_DATA__` JSON as BeautifulSoup reads the page (the checked fallback of next_data_fast).
    Raises PayloadRejected when the page has none or it is not JSON."""
    soup = BeautifulSoup(body, "html.parser", parse_only=SoupStrainer("script", id="__NEXT_DATA__"))
    script = soup.find("script", id="__NEXT_DATA__")
    if script is None:
        if "Result not found" in BeautifulSoup(body, "html.parser").get_text(" "):
            raise PayloadRejected(f"result page {rid}: Result not found", "result_not_found")
        raise PayloadRejected(f"result page {rid} has no __NEXT_DATA__ script (layout change?)",
                              "result_page_layout")
    try:
        return json.loads(script.string or script.get_text())
    except ValueError as exc:
        raise PayloadRejected(f"result page {rid}: __NEXT_DATA__ is not JSON: {exc}",
                              "result_page_layout") from None


# ---- the source ----------------------------------------------------------------------------

class LocalScoreSource(Source):
    name = "localscore"
    kind = "incremental"
    # the site's code is Apache-2.0; the site states no licence for the submitted results
    license = "No stated licence for the results (site code Apache-2.0); used with attribution"
    attribution = "LocalScore (https://www.localscore.ai), a Mozilla Builders project"
    parser_version = "1"
    freshness_warn_hours = 36
    page_limit = PAGE_LIMIT  # runs asked per API page (the API clamps to 1..100)
    entities = (
        Entity("runs", LocalScoreRunsSchema, "One row per LocalScore run per API page payload that listed it"),
        Entity("tests", LocalScoreTestsSchema, "One row per test of a run, from its result page"),
    )

    # -- fetch -------------------------------------------------------------------------------
    def known_run_ids(self, ctx: FetchContext) -> set[str]:
        """Runs whose result page is already dealt with: tests landed or the page stored.

        Not merely "run landed": an API page can land a run whose result page was never
        fetched (a fetch cut short), and stopping at such a run would leave it without tests.
        """
        known = {str(v) for v in ctx.landed_values("tests", "run_id")}
        for entry in ctx.store.entries(self.name):
            rid = result_id_from_url(entry.url)
            if rid is not None and entry.status in (200, 304):
                known.add(rid)
        return known

    def listed_run_ids(self, ctx: FetchContext) -> set[str]:
        """Runs listed by an earlier fetch (landed from API pages)."""
        return {str(v) for v in ctx.landed_values("runs", "run_id")}

    def fetch(self, ctx: FetchContext) -> None:
        base = ctx.base_url.rstrip("/")
        known = self.known_run_ids(ctx)
        new_ids: list[str] = []  # in listing order, newest first, each once
        seen: set[str] = set()
        pages = 0
        for page in range(1, MAX_PAGES + 1):
            url = f"{base}/api/results?sortDirection=desc&limit={self.page_limit}&page={page}"
            entry, body = ctx.get(url, ext="json")
            if body is None:  # 304: the page is as stored before
                body = ctx.store.read(entry)
            pages += 1
            ids = self._page_ids(body, url)
            if not ids:
                break
            fresh = [i for i in ids if i not in known]
            unseen = [i for i in fresh if i not in seen]  # a run pushed down while paging comes twice
            if fresh and not unseen:
                # only runs this fetch already has: a server ignoring `page` would loop forever
                ctx.log(f"localscore: page {page} repeats earlier pages only; stopped paging")
                break
            seen.update(unseen)
            new_ids.extend(unseen)
            if not fresh:
                break
            if len(ids) < self.page_limit:
                break  # a short page is the last one
        # runs listed earlier whose result page never got fetched (an interrupted fetch)
        for rid in sorted(self.listed_run_ids(ctx) - known - seen, key=_id_sort_key, reverse=True):
            seen.add(rid)
            new_ids.append(rid)
        ctx.log(f"localscore: {pages} API page(s), {len(new_ids)} new result page(s) to fetch")
        failed: list[str] = []
        for n, rid in enumerate(new_ids, 1):
            try:
                ctx.get(f"{base}/result/{rid}", ext="html", conditional=False)
            except FetchError as exc:
                # not stored, so the run stays pending and its page is asked for next time
                failed.append(str(exc))
            if n % 100 == 0:
                ctx.log(f"localscore: fetched {n}/{len(new_ids)} result pages")
        if failed:
            share = len(failed) / len(new_ids)
            ctx.log(f"localscore: {len(failed)} result page(s) failed to fetch, e.g. {failed[0]}")
            if share > QUARANTINE_SHARE_LIMIT:
                raise SourceFailed(f"localscore: {len(failed)} of {len(new_ids)} result pages failed to fetch "
                                   f"({share:.0%} > {QUARANTINE_SHARE_LIMIT:.0%}), e.g. {failed[0]}")

    @staticmethod
    def _page_ids(body: bytes, url: str) -> list[str]:
        try:
            data = json.loads(body)
        except ValueError:
            raise SourceFailed(f"localscore: {url} did not answer JSON") from None
        if not isinstance(data, list):
            raise SourceFailed(f"localscore: {url} did not answer a JSON array of runs")
        ids = []
        for run in data:
            if isinstance(run, dict) and run.get("id") is not None:
                ids.append(str(run["id"]))
        return ids

    # -- parse -------------------------------------------------------------------------------
    def parse(self, body: bytes, entry: RawEntry) -> dict[str, pd.DataFrame]:
        return {name: frame(rows, RUN_COLUMNS if name == "runs" else TEST_COLUMNS)
                for name, rows in self.parse_rows(body, entry).items()}

    def parse_rows(self, body: bytes, entry: RawEntry) -> dict[str, list[dict]]:
        if is_api_page(entry.url):
            return {"runs": self._api_page_rows(body)}
        rid = result_id_from_url(entry.url)
        if rid is not None:
            return {"tests": self._result_page_rows(body, rid)}
        raise PayloadRejected(f"not a LocalScore API page or result page: {entry.url}", "unknown_url")

    def _parse_api_page(self, body: bytes) -> dict[str, pd.DataFrame]:
        return {"runs": frame(self._api_page_rows(body), RUN_COLUMNS)}

    def _api_page_rows(self, body: bytes) -> list[dict]:
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise PayloadRejected(f"API page is not JSON: {exc}", "api_page_json") from None
        if not isinstance(data, list):
            raise PayloadRejected("API page is not a JSON array of runs", "api_page_shape")
        if not data:
            # asked past the last run; stored as fetched, nothing to land
            raise PayloadRejected("API page holds no runs (past the last page)", "api_page_empty")
        rows = []
        for i, run in enumerate(data):
            try:
                rows.append(run_row(run))
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise PayloadRejected(f"API page run {i} is missing {exc}", "api_page_shape") from None
        return rows

    def _parse_result_page(self, body: bytes, rid: str, fast: bool = True) -> dict[str, pd.DataFrame]:
        return {"tests": frame(self._result_page_rows(body, rid, fast), TEST_COLUMNS)}

    def _result_page_rows(self, body: bytes, rid: str, fast: bool = True) -> list[dict]:
        data = next_data_fast(body) if fast else None
        if data is None:
            data = next_data_soup(body, rid)
        try:
            page_props = data["props"]["pageProps"]
        except (KeyError, TypeError):
            raise PayloadRejected(f"result page {rid}: no props.pageProps in __NEXT_DATA__",
                                  "result_page_layout") from None
        if not isinstance(page_props, dict) or "result" not in page_props:
            raise PayloadRejected(f"result page {rid}: no props.pageProps.result in __NEXT_DATA__",
                                  "result_page_layout")
        result = page_props["result"]
        if result is None:
            raise PayloadRejected(f"result page {rid}: Result not found", "result_not_found")
        if not isinstance(result, dict):
            raise PayloadRejected(f"result page {rid}: props.pageProps.result is not an object",
                                  "result_page_layout")
        if str(result.get("id")) != rid:
            raise PayloadRejected(f"result page {rid} holds run {result.get('id')!r}", "result_page_id")
        results = result.get("results")
        if not isinstance(results, list):
            raise PayloadRejected(f"result page {rid}: props.pageProps.result.results is missing",
                                  "result_page_layout")
        if not results:
            raise PayloadRejected(f"result page {rid}: the run has no test results", "result_page_empty")
        try:
            tests = test_rows(to_int(result["id"]), results)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise PayloadRejected(f"result page {rid}: missing {exc}", "result_page_layout") from None
        # The page repeats the run's listing fields; runs land from API pages only, which list
        # every run, so each result page costs one small frame to validate and write.
        return tests

    # -- after landing -----------------------------------------------------------------------
    def validate_payloads(self, results: Iterable) -> None:
        pages = [o for o in results if result_id_from_url(o.url) is not None]
        if not pages:
            return
        rejected = [o for o in pages if o.status != "landed"]
        share = len(rejected) / len(pages)
        if share > QUARANTINE_SHARE_LIMIT:
            reasons = sorted({o.reason or o.status for o in rejected})
            raise SourceFailed(
                f"localscore: {len(rejected)} of {len(pages)} new result pages rejected "
                f"({share:.0%} > {QUARANTINE_SHARE_LIMIT:.0%}), e.g. {reasons[0]}"
            )


def _id_sort_key(rid: str) -> tuple[int, Any]:
    return (0, int(rid)) if rid.isdigit() else (1, rid)
