"""A loopback fake of localscore.ai speaking its real shapes (cjpais/LocalScore, pages router).

    with FakeLocalScore(load_sqlite_runs(path)) as site:
        site.url                 # base URL for BENCHWH_LOCALSCORE_URL / FetchContext.base_url
        site.add_runs([...])     # newer runs appear on top of page 1
        site.layout = "app"      # result pages lose __NEXT_DATA__ (a site redesign)
        site.api_requests()      # requests counted per route

Runs are "detailed runs": the dict getBenchmarkResult builds (benchmark_runs columns, accelerator
name/type/memory, model {id, name, params, quant, variantId}, system {...}, runtime {...}) plus
`results`, the test_results rows. `/api/results` serves them without `results`, newest first,
`limit` clamped to 1..100 (default 20), `page` from 1. `/result/<id>` renders a Next.js page with
the run in `<script id="__NEXT_DATA__">` at props.pageProps.result; an unknown id answers 200 with
result null and "Result not found", as the site does.

Also here: `load_sqlite_runs` (the site's own development database -> runs) and
`synthetic_runs` (runs written by us, used for the offline recording and for tests).
"""
from __future__ import annotations

import html
import json
import random
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable, Iterable

from tests.helpers.loopback import LoopbackServer, Reply, Request

BUILD_ID = "m9Xq2Lr8kT0bYvJcW1pZs"
DEFAULT_LIMIT, MIN_LIMIT, MAX_LIMIT = 20, 1, 100

# the nine tests LocalScore runs (llamafile localscore), in the order it runs them
TESTS = [(1024, 16), (4096, 256), (2048, 256), (2048, 768), (1024, 1024), (1280, 3072),
         (384, 1152), (64, 1024), (16, 1536)]


def _json(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _next_escape(text: str) -> str:
    # Next.js escapes these in __NEXT_DATA__ so the JSON cannot close its <script>
    return (text.replace("&", "\\u0026").replace(">", "\\u003e").replace("<", "\\u003c")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def list_shape(run: dict) -> dict:
    """A detailed run as /api/results lists it (no test rows)."""
    return {k: v for k, v in run.items() if k != "results"}


def compare_result(run: dict) -> dict:
    """props.pageProps.compareResult: the model variant with the accelerators compared (here: one)."""
    m = run["model"]
    return {
        "model": {"name": m["name"], "id": m["id"], "variantId": m["variantId"], "quant": m["quant"],
                  "params": m["params"]},
        "results": [{
            "accelerator_id": run["accelerator_id"], "accelerator_name": run["accelerator"],
            "accelerator_type": run["accelerator_type"], "accelerator_memory_gb": run["accelerator_memory_gb"],
            "model_variant_id": m["variantId"], "avg_prompt_tps": run["avg_prompt_tps"],
            "avg_gen_tps": run["avg_gen_tps"], "avg_ttft": run["avg_ttft_ms"],
            "performance_score": run["performance_score"], "performance_rank": 1, "number_ranked": 1,
            "accelerator": {"id": run["accelerator_id"], "name": run["accelerator"],
                            "type": run["accelerator_type"], "memory_gb": run["accelerator_memory_gb"],
                            "manufacturer": None, "created_at": None},
        }],
    }


def _results_table(run: dict) -> str:
    rows = "".join(
        f'<div class="sm:text-base text-xs self-center">{html.escape(t["name"])}</div>'
        f'<div class="flex sm:flex-row flex-col items-center sm:gap-2"><div class="text-sm sm:text-lg">'
        f'{float(t["prompt_tps"]):,.0f}</div><div class="text-xs">tokens/s</div></div>'
        f'<div class="flex sm:flex-row flex-col items-center sm:gap-2"><div class="text-sm sm:text-lg">'
        f'{float(t["gen_tps"]):,.1f}</div><div class="text-xs">tokens/s</div></div>'
        f'<div class="flex sm:flex-row flex-col items-center sm:gap-2"><div class="text-sm sm:text-lg">'
        f'{float(t["ttft_ms"]):,.0f}</div><div class="text-xs">ms</div></div>'
        for t in run.get("results", [])
    )
    return (f'<div class="w-full grid grid-cols-4 gap-2"><div class="font-medium">TEST NAME</div>'
            f'<div class="font-medium">PROMPT</div><div class="font-medium">GENERATION</div>'
            f'<div class="font-medium">TTFT</div>{rows}</div>')


def _page(title: str, body: str, scripts: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charSet="utf-8"/>'
        '<meta name="viewport" content="width=device-width"/>'
        f'<title>{html.escape(title)}</title>'
        f'<link rel="preload" href="/_next/static/css/1d4b3b0c2f1e5a77.css" as="style"/>'
        f'<script src="/_next/static/chunks/webpack-3c1f0a6b8d2e4f59.js" defer=""></script>'
        f'<script src="/_next/static/{BUILD_ID}/_buildManifest.js" defer=""></script></head>'
        f'<body><div id="__next"><main class="max-w-screen-lg mx-auto">{body}</main></div>'
        f'{scripts}</body></html>'
    )


def render_result_page(run: dict | None, run_id: str, layout: str = "pages") -> str:
    """The HTML of /result/<id>: pages router with __NEXT_DATA__, or "app" (no __NEXT_DATA__)."""
    if run is None:
        props = {"result": None, "compareResults": None}
        body = "<div>Result not found</div>"
        title = "LocalScore"
    else:
        props = {"result": run, "compareResult": compare_result(run)}
        title = f"Test #{run['id']} Results"
        body = (f'<div class="space-y-8"><div class="flex flex-col gap-4">'
                f'<div class="text-2xl font-black">TEST #{run["id"]} RESULTS</div>'
                f'<div>{html.escape(run["accelerator"])}</div>'
                f'<div>{html.escape(run["model"]["name"])} - {html.escape(run["model"]["quant"])}</div>'
                f'{_results_table(run)}</div></div>')
    if layout == "pages":
        data = {"props": {"pageProps": props, "__N_SSP": True}, "page": "/result/[id]",
                "query": {"id": str(run_id)}, "buildId": BUILD_ID, "isFallback": False,
                "gssp": True, "scriptLoader": []}
        scripts = (f'<script id="__NEXT_DATA__" type="application/json">{_next_escape(_json(data))}</script>')
    else:
        # app router: the data streams in React Server Component chunks, no __NEXT_DATA__
        chunk = _json([1, "5:" + _json(["$", "div", None, props])])
        scripts = (f'<script>(self.__next_f=self.__next_f||[]).push([0])</script>'
                   f'<script>self.__next_f.push({_next_escape(chunk)})</script>')
    return _page(title, body, scripts)


class FakeLocalScore:
    def __init__(self, runs: Iterable[dict] = (), *, max_limit: int = MAX_LIMIT,
                 default_limit: int = DEFAULT_LIMIT, etags: bool = False):
        self.runs: list[dict] = list(runs)
        self.max_limit = max_limit
        self.default_limit = default_limit
        self.etags = etags  # answer API pages with an ETag (and 304 to If-None-Match)
        self.layout = "pages"  # "app": result pages without __NEXT_DATA__
        # called after an API page is served with (page, limit): lets a test add runs mid-paging
        self.after_api_page: Callable[[int, int], None] | None = None
        self.missing: set[str] = set()  # ids listed by the API whose page says "Result not found"
        self.broken: set[str] = set()  # ids whose page answers HTTP 500
        self.srv = LoopbackServer()
        self.srv.route("/api/results", self._api)
        self.srv.route_prefix("/result/", self._result)

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "FakeLocalScore":
        self.srv.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.srv.__exit__(*exc)

    @property
    def url(self) -> str:
        return self.srv.url

    # -- state -------------------------------------------------------------------------------
    def add_runs(self, runs: Iterable[dict]) -> None:
        self.runs.extend(runs)

    def ordered(self, direction: str = "desc") -> list[dict]:
        return sorted(self.runs, key=lambda r: (str(r["created_at"]), r["id"]), reverse=direction == "desc")

    def by_id(self, run_id: str) -> dict | None:
        for run in self.runs:
            if str(run["id"]) == str(run_id):
                return run
        return None

    # -- request log -------------------------------------------------------------------------
    def api_requests(self) -> list[Request]:
        return [r for r in self.srv.requests if r.path == "/api/results"]

    def result_requests(self) -> list[Request]:
        return [r for r in self.srv.requests if r.path.startswith("/result/")]

    def result_ids_requested(self) -> list[str]:
        return [r.path.rsplit("/", 1)[-1] for r in self.result_requests()]

    def api_pages_requested(self) -> list[int]:
        return [int((r.query.get("page") or ["1"])[0]) for r in self.api_requests()]

    def clear_log(self) -> None:
        with self.srv._lock:
            self.srv.requests.clear()

    # -- routes ------------------------------------------------------------------------------
    def _api(self, req: Request) -> Reply:
        def first_int(name: str) -> int | None:
            try:
                return int(req.query.get(name, [""])[0])
            except ValueError:
                return None

        page = max(1, first_int("page") or 1)
        limit = first_int("limit") or self.default_limit
        limit = min(self.max_limit, max(MIN_LIMIT, limit))
        direction = "asc" if req.query.get("sortDirection", [""])[0] == "asc" else "desc"
        chunk = self.ordered(direction)[(page - 1) * limit: page * limit]
        body = _json([list_shape(r) for r in chunk]).encode()
        headers = {"Content-Type": "application/json; charset=utf-8"}
        if self.etags:
            import hashlib
            tag = '"' + hashlib.sha1(body).hexdigest() + '"'
            headers["ETag"] = tag
            if req.headers.get("if-none-match") == tag:
                self._after(page, limit)
                return Reply(304, b"", headers={"ETag": tag})
        self._after(page, limit)
        return Reply(200, body, headers)

    def _after(self, page: int, limit: int) -> None:
        if self.after_api_page is not None:
            self.after_api_page(page, limit)

    def _result(self, req: Request) -> Reply:
        run_id = req.path[len("/result/"):].strip("/")
        if run_id in self.broken:
            return Reply(500, b"Internal Server Error", {"Content-Type": "text/plain"})
        run = None if run_id in self.missing else self.by_id(run_id)
        text = render_result_page(run, run_id, self.layout)
        return Reply(200, text.encode(), {"Content-Type": "text/html; charset=utf-8",
                                          "Cache-Control": "public, max-age=15768000, stale-while-revalidate=31536000"})


# ---- the site's development database -> runs --------------------------------------------------

def load_sqlite_runs(path: Path) -> list[dict]:
    """Every benchmark run of a LocalScore sqlite database as the detailed-run dict the site builds."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        def rows(sql: str, *args) -> list[dict]:
            return [dict(r) for r in con.execute(sql, args).fetchall()]

        runs = []
        for br in rows("SELECT * FROM benchmark_runs ORDER BY id"):
            acc = rows("SELECT * FROM accelerators WHERE id = ?", br["accelerator_id"])[0]
            var = rows("SELECT * FROM model_variants WHERE id = ?", br["model_variant_id"])[0]
            model = rows("SELECT * FROM models WHERE id = ?", var["model_id"])[0]
            system = rows("SELECT * FROM benchmark_systems WHERE id = ?", br["system_id"])[0]
            runtime = rows("SELECT * FROM runtimes WHERE id = ?", br["runtime_id"])[0]
            tests = rows("SELECT * FROM test_results WHERE benchmark_run_id = ? ORDER BY id", br["id"])
            runs.append({
                **br,
                "system": system,
                "accelerator": acc["name"],
                "accelerator_type": acc["type"],
                "accelerator_memory_gb": acc["memory_gb"],
                "model": {**model, "quant": var["quantization"], "variantId": var["id"]},
                "runtime": runtime,
                "results": tests,
            })
        return runs
    finally:
        con.close()


# ---- synthetic runs written by us -------------------------------------------------------------

# (name as the machine reports it, type, memory GB as reported, manufacturer,
#  memory bandwidth GB/s, typical board power W or 0 when no sensor, prompt/gen speed ratio)
HARDWARE = [
    ("NVIDIA GeForce RTX 4090", "GPU", 23.64, "NVIDIA", 1008, 380, 55),
    ("NVIDIA  GeForce RTX 4090", "GPU", 24.0, "NVIDIA", 1008, 370, 55),
    ("NVIDIA GeForce RTX 3090", "GPU", 23.59, "NVIDIA", 936, 330, 38),
    ("NVIDIA GeForce RTX 3060", "GPU", 11.63, "NVIDIA", 360, 165, 30),
    ("NVIDIA GeForce RTX 4060 Ti", "GPU", 15.61, "NVIDIA", 288, 150, 42),
    ("NVIDIA RTX A6000", "GPU", 47.53, "NVIDIA", 768, 290, 36),
    ("AMD Radeon RX 7900 XTX", "GPU", 23.98, "AMD", 960, 330, 22),
    ("AMD Radeon RX 6900 XT", "GPU", 15.98, "AMD", 512, 280, 16),
    ("Apple M2 Max", "GPU", 64.0, "Apple", 400, 55, 9),
    ("Apple M2 Max 12P+4E+38GPU", "GPU", 48.0, "Apple", 400, 58, 9),
    ("Apple M4 Pro 10P+4E+20GPU", "GPU", 36.0, "Apple", 273, 40, 8),
    ("AMD Ryzen 9 7950X 16-Core Processor (znver4)", "CPU", 62.71, "AMD", 70, 0, 9),
    ("13th Gen Intel(R) Core(TM) i7-13700K (alderlake)", "CPU", 31.85, "Intel", 75, 0, 7),
    ("Apple M4 Max 12P+4E", "CPU", 128.0, "Apple", 120, 0, 5),
]
SYSTEMS = {
    "NVIDIA": ("AMD Ryzen 9 5950X 16-Core Processor (znver3)", "x86_64", 62.71, "Linux", "6.8.0-49-generic",
               "Cosmopolitan 4.0.2 MODE=x86_64; #49~22.04.1-Ubuntu SMP PREEMPT_DYNAMIC Wed Nov  6 17:42:15 UTC 2"),
    "AMD": ("AMD Ryzen 7 7800X3D 8-Core Processor (znver4)", "x86_64", 31.2, "Windows", "10.0.26100",
            "Cosmopolitan 4.0.2 MODE=x86_64; Windows 11 Pro 24H2"),
    "Apple": ("Apple M2 Max 12P+4E", "arm64", 64.0, "Darwin", "24.1.0",
              "Cosmopolitan 4.0.2 MODE=aarch64; Darwin Kernel Version 24.1.0: Thu Oct 10 21:03:11 PDT 2024; "
              "root:xnu-11215.41.3~2/RELEASE_ARM64_T6020"),
    "Intel": ("13th Gen Intel(R) Core(TM) i7-13700K (alderlake)", "x86_64", 31.85, "Linux", "6.11.0-9-generic",
              "Cosmopolitan 4.0.2 MODE=x86_64; #9-Ubuntu SMP PREEMPT_DYNAMIC Mon Oct 14 13:19:59 UTC 2024"),
}
# (name as in the GGUF metadata or file, quantization as llama.cpp names it, parameters, file GB)
MODELS = [
    ("Llama 3.2 1B Instruct", "Q4_K - Medium", 1_235_814_432, 0.81),
    ("Meta Llama 3.1 8B Instruct", "Q4_K - Medium", 8_030_261_248, 4.92),
    ("Qwen2.5 14B Instruct", "Q4_K - Medium", 14_770_033_664, 8.99),
    ("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "Q4_K - Medium", 8_030_261_248, 4.92),
    ("Gemma 3 4b It", "Q4_K - Medium", 3_880_263_168, 2.49),
    ("Qwen3 0.6B", "Q8_0", 751_632_384, 0.64),
    ("Llama 3.2 3B Instruct", "Q6_K", 3_212_749_824, 2.64),
    ("DeepSeek R1 Distill Qwen 7B", "Q4_K - Medium", 7_615_616_512, 4.68),
]
RUNTIMES = [("llamafile", "0.9.3", "e3a5a5b"), ("llamafile", "0.9.2", "c4f7e61")]


class _Ids:
    """Stable LocalScore-style ids for accelerators, models, variants, systems and runtimes."""

    def __init__(self) -> None:
        self.maps: dict[str, dict] = {}

    def get(self, kind: str, key) -> int:
        table = self.maps.setdefault(kind, {})
        if key not in table:
            table[key] = len(table) + 1
        return table[key]


def make_run(run_id: int, created_at: datetime, hw: tuple, model: tuple, runtime: tuple,
             rng: random.Random, ids: _Ids) -> dict:
    name, kind, mem, maker, bandwidth, watts, pp_ratio = hw
    mname, quant, params, size_gb = model
    stamp = created_at.strftime("%Y-%m-%d %H:%M:%S")
    efficiency = rng.uniform(0.55, 0.75) if kind == "GPU" else rng.uniform(0.45, 0.6)
    peak_gen = efficiency * bandwidth / size_gb
    peak_pp = peak_gen * pp_ratio * rng.uniform(0.85, 1.15) * (8.0 / max(1.0, size_gb)) ** 0.3
    tests = []
    for n, (n_prompt, n_gen) in enumerate(TESTS):
        # short prompts cannot fill the device; long contexts slow generation a little
        pp = peak_pp * min(1.0, 0.12 + n_prompt / 1200) * (0.93 if n_prompt >= 4096 else 1.0)
        pp *= rng.uniform(0.97, 1.03)
        gen = peak_gen * (1 - 0.012 * (n_prompt + n_gen) / 1024) * rng.uniform(0.97, 1.03)
        ttft = n_prompt / pp * 1000 + rng.uniform(3, 12)
        total = ttft + n_gen / gen * 1000
        power = watts * rng.uniform(0.8, 1.0) if watts else 0.0
        tests.append({
            "id": run_id * 10 + n, "benchmark_run_id": run_id, "name": f"pp{n_prompt}+tg{n_gen}",
            "n_prompt": n_prompt, "n_gen": n_gen, "avg_time_ms": round(total, 6),
            "power_watts": round(power, 6), "prompt_tps": round(pp, 6), "gen_tps": round(gen, 6),
            "prompt_tps_watt": round(pp / power, 6) if power else 0.0,
            "gen_tps_watt": round(gen / power, 6) if power else 0.0,
            "vram_used_mb": None, "ttft_ms": round(ttft, 6), "created_at": stamp,
        })
    return assemble_run(run_id, stamp, hw, model, runtime, tests, ids)


def assemble_run(run_id: int, stamp: str, hw: tuple, model: tuple, runtime: tuple, tests: list[dict],
                 ids: _Ids) -> dict:
    name, kind, mem, maker, *_ = hw
    mname, quant, params, _ = model
    system = SYSTEMS[maker]
    if maker == "Apple" and kind == "GPU":
        system = SYSTEMS["Apple"]
    avg = lambda key: sum(t[key] for t in tests) / len(tests)  # noqa: E731
    a_pp, a_gen, a_ttft = avg("prompt_tps"), avg("gen_tps"), avg("ttft_ms")
    score = (a_pp * a_gen * (1000 / a_ttft)) ** (1 / 3) * 10
    model_id = ids.get("model", mname)
    return {
        "id": run_id,
        "system_id": ids.get("system", system),
        "accelerator_id": ids.get("accelerator", (name, kind, mem)),
        "model_variant_id": ids.get("variant", (mname, quant)),
        "runtime_id": ids.get("runtime", runtime),
        "avg_prompt_tps": a_pp, "avg_gen_tps": a_gen, "avg_ttft_ms": a_ttft, "performance_score": score,
        "created_at": stamp,
        "system": {"id": ids.get("system", system), "cpu_name": system[0], "cpu_arch": system[1],
                   "ram_gb": system[2], "kernel_type": system[3], "kernel_release": system[4],
                   "system_version": system[5], "created_at": stamp},
        "accelerator": name, "accelerator_type": kind, "accelerator_memory_gb": mem,
        "model": {"id": model_id, "name": mname, "params": params, "created_at": stamp,
                  "quant": quant, "variantId": ids.get("variant", (mname, quant))},
        "runtime": {"id": ids.get("runtime", runtime), "name": runtime[0], "version": runtime[1],
                    "commit_hash": runtime[2], "created_at": stamp},
        "results": tests,
    }


def synthetic_runs(n: int, *, first_id: int = 1, start: datetime = datetime(2026, 11, 1, 9, 0, 0),
                   seed: int = 7, resubmit_every: int = 0, cycle_hardware: bool = False) -> list[dict]:
    """n runs written by us: realistic GPUs/CPUs (messy spellings), models, 9 tests each.

    With resubmit_every=k, every k-th run is an identical re-submission of the run before it
    (same machine, model, runtime and test values) a few minutes later, as people do.
    cycle_hardware=True walks HARDWARE in order so every spelling appears.
    """
    rng = random.Random(seed)
    ids = _Ids()
    runs: list[dict] = []
    at = start
    for i in range(n):
        run_id = first_id + i
        at = at + timedelta(minutes=rng.randint(2, 400), seconds=rng.randint(0, 59))
        if resubmit_every and i and i % resubmit_every == 0:
            prev = runs[-1]
            at = datetime.strptime(prev["created_at"], "%Y-%m-%d %H:%M:%S") + timedelta(minutes=rng.randint(3, 25))
            stamp = at.strftime("%Y-%m-%d %H:%M:%S")
            tests = [{**t, "id": run_id * 10 + k, "benchmark_run_id": run_id, "created_at": stamp}
                     for k, t in enumerate(prev["results"])]
            clone = json.loads(json.dumps(prev))
            clone.update({"id": run_id, "created_at": stamp, "results": tests})
            for part in ("system", "model", "runtime"):
                clone[part]["created_at"] = prev[part]["created_at"]
            runs.append(clone)
            continue
        hw = HARDWARE[i % len(HARDWARE)] if cycle_hardware else HARDWARE[rng.randrange(len(HARDWARE))]
        fits = [m for m in MODELS if m[3] < hw[2] * 0.9]
        model = fits[rng.randrange(len(fits))]
        runtime = RUNTIMES[0] if rng.random() < 0.7 else RUNTIMES[1]
        runs.append(make_run(run_id, at, hw, model, runtime, rng, ids))
    return runs
