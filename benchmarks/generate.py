"""Seeded generator of raw inputs at a chosen scale, in the sources' real formats.

    python -m benchmarks.generate --scale 0.02 --home /tmp/bench/home

Writes into <home>/raw/ through the real RawStore, as if fetched or received:
- LocalScore: daily fetch rounds of `/api/results` pages (100 runs a page, newest first, paging
  until a page holds only known runs, so the last page of a round overlaps the previous round;
  some rounds see runs arrive while paging, so a page repeats the end of the one before) and one
  `/result/<id>` Next.js page per run (`__NEXT_DATA__`); a few pages say "Result not found", a few
  are fetched twice, a few tests carry an impossible value (quarantined);
- local runs: signed DSSE run files (benchwh.run/1) wrapped as intake payloads like
  `benchwh runs add` stores them; most signed by trusted keys, some by an unknown key;
- OpenRouter: one `/models` snapshot a day, 400 models, prices changing now and then, models
  added and withdrawn, the `openrouter/auto` router entry with its "-1" prices.
Names are as messy as the real ones: the same GPU spelled several ways, models named by display
name, GGUF file name or repo, quant names in llama.cpp's and in file-name style; 6% of LocalScore
runs and 3% of run files are identical re-submissions a few minutes after the original.

Also writes <work>/incoming/*.json: the run files of the incremental step (newer than the rest).
Deterministic for a (scale, seed): the same bytes every time.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import html
import json
import os
import random
import tempfile
import uuid
import zlib
from array import array
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ingest.raw_store import RawStore
from ingest.sources.runs import dsse
from ingest.sources.runs.intake import make_intake
from ingest.sources.runs.payload import SCHEMA, payload_bytes

END = datetime(2026, 11, 1, 0, 0, 0)  # the newest generated input; incremental files come after
LOCALSCORE = "https://www.localscore.ai"
OPENROUTER = "https://openrouter.ai/api/v1"
PAGE = 100
FIRST_RUN_ID = 2_000_001  # far above real LocalScore ids
BUILD_ID = "m9Xq2Lr8kT0bYvJcW1pZs"
TESTS = [(1024, 16), (4096, 256), (2048, 256), (2048, 768), (1024, 1024), (1280, 3072),
         (384, 1152), (64, 1024), (16, 1536)]

# (spellings as machines report them, type, memory GB as reported, manufacturer,
#  memory bandwidth GB/s, board power W (0: no sensor), prompt/gen speed ratio)
HARDWARE = [
    (["NVIDIA GeForce RTX 4090", "NVIDIA  GeForce RTX 4090", "nvidia geforce rtx 4090", "NVIDIA RTX 4090"],
     "GPU", [23.64, 23.99, 24.0], "NVIDIA", 1008, 380, 55),
    (["NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090 ", "GeForce RTX 3090"], "GPU", [23.59, 24.0], "NVIDIA", 936, 330, 38),
    (["NVIDIA GeForce RTX 3060", "NVIDIA GeForce RTX 3060 12GB"], "GPU", [11.63, 12.0], "NVIDIA", 360, 165, 30),
    (["NVIDIA GeForce RTX 4060 Ti", "NVIDIA GeForce RTX 4060 Ti 16GB"], "GPU", [15.61, 7.6], "NVIDIA", 288, 150, 42),
    (["NVIDIA GeForce RTX 4070 SUPER", "NVIDIA GeForce RTX 4070 Super"], "GPU", [11.99], "NVIDIA", 504, 210, 45),
    (["NVIDIA GeForce RTX 5090"], "GPU", [31.36, 32.0], "NVIDIA", 1792, 520, 60),
    (["NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"], "GPU", [79.15, 80.0], "NVIDIA", 1935, 300, 70),
    (["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"], "GPU", [79.1], "NVIDIA", 2000, 350, 80),
    (["NVIDIA RTX A6000"], "GPU", [47.53], "NVIDIA", 768, 290, 36),
    (["AMD Radeon RX 7900 XTX", "Radeon RX 7900 XTX", "AMD Radeon RX 7900 XTX (gfx1100)"], "GPU",
     [23.98, 24.0], "AMD", 960, 330, 22),
    (["AMD Radeon RX 6900 XT"], "GPU", [15.98], "AMD", 512, 280, 16),
    (["Apple M2 Max", "Apple M2 Max 12P+4E+38GPU"], "GPU", [64.0, 48.0], "Apple", 400, 55, 9),
    (["Apple M4 Pro 10P+4E+20GPU", "Apple M4 Pro"], "GPU", [36.0, 24.0], "Apple", 273, 40, 8),
    (["Apple M3 Max 16P+4E+40GPU"], "GPU", [128.0], "Apple", 400, 70, 10),
    (["AMD Ryzen 9 7950X 16-Core Processor (znver4)", "AMD Ryzen 9 7950X 16-Core Processor"], "CPU",
     [62.71], "AMD", 70, 0, 9),
    (["13th Gen Intel(R) Core(TM) i7-13700K (alderlake)", "13th Gen Intel(R) Core(TM) i7-13700K"], "CPU",
     [31.85], "Intel", 75, 0, 7),
    (["Moore Threads MTT S80"], "GPU", [16.0], "Moore Threads", 448, 255, 12),  # not catalogued
    (["Custom Build Tensor Box v2"], "GPU", [96.0], "Unknown", 800, 400, 30),  # not catalogued
]
# (display-style names, GGUF file name stem, quant spellings, parameters, file GB at ~4.8 bits)
MODELS = [
    (["Llama 3.2 1B Instruct", "Llama-3.2-1B-Instruct"], "Llama-3.2-1B-Instruct", 1_235_814_432, 0.81),
    (["Meta Llama 3.1 8B Instruct", "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "meta-llama/Llama-3.1-8B-Instruct"],
     "Meta-Llama-3.1-8B-Instruct", 8_030_261_248, 4.92),
    (["Qwen2.5 14B Instruct", "Qwen2.5-14B-Instruct"], "Qwen2.5-14B-Instruct", 14_770_033_664, 8.99),
    (["Qwen2.5 7B Instruct", "qwen2.5:7b"], "Qwen2.5-7B-Instruct", 7_615_616_512, 4.68),
    (["Gemma 3 4b It", "gemma-3-4b-it"], "gemma-3-4b-it", 3_880_263_168, 2.49),
    (["Qwen3 0.6B", "Qwen3-0.6B"], "Qwen3-0.6B", 751_632_384, 0.64),
    (["Qwen3 8B", "Qwen3-8B"], "Qwen3-8B", 8_190_735_360, 5.03),
    (["Llama 3.2 3B Instruct", "Llama-3.2-3B-Instruct-Q6_K.gguf"], "Llama-3.2-3B-Instruct", 3_212_749_824, 2.64),
    (["DeepSeek R1 Distill Qwen 7B", "DeepSeek-R1-Distill-Qwen-7B"], "DeepSeek-R1-Distill-Qwen-7B",
     7_615_616_512, 4.68),
    (["Mistral 7B Instruct v0.3", "Mistral-7B-Instruct-v0.3"], "Mistral-7B-Instruct-v0.3", 7_248_023_552, 4.37),
    (["My Finetune 13B Merged"], "My-Finetune-13B-Merged", 13_015_864_320, 7.9),  # not catalogued
]
# (llama.cpp file-type name as LocalScore shows it, file-name spellings, bits per weight)
QUANTS = [("Q4_K - Medium", ["Q4_K_M", "q4_k_m"], 4.85), ("Q8_0", ["Q8_0"], 8.5),
          ("Q6_K", ["Q6_K"], 6.56), ("Q5_K - Medium", ["Q5_K_M"], 5.69)]
SYSTEMS = {
    "NVIDIA": ("AMD Ryzen 9 5950X 16-Core Processor (znver3)", "x86_64", 62.71, "Linux", "6.8.0-49-generic"),
    "AMD": ("AMD Ryzen 7 7800X3D 8-Core Processor (znver4)", "x86_64", 31.2, "Windows", "10.0.26100"),
    "Apple": ("Apple M2 Max 12P+4E", "arm64", 64.0, "Darwin", "24.1.0"),
    "Intel": ("13th Gen Intel(R) Core(TM) i7-13700K (alderlake)", "x86_64", 31.85, "Linux", "6.11.0-9-generic"),
}
RUNTIMES = [("llamafile", "0.9.3", "e3a5a5b"), ("llamafile", "0.9.2", "c4f7e61"), ("llamafile", "0.9.1", "a01bb2c")]
ENGINES = [("llama.cpp", ["b4567", "b5012", "b6100"], "CUDA"), ("vllm", ["0.6.3", "0.8.5"], "CUDA"),
           ("ollama", ["0.5.7", "0.6.2"], None)]
COUNTRIES = ["DE", "FR", "US", "GB", "PL", "SE", "JP", "IN", "BR", "CA"]
PROTOCOLS = [("gen-1k", 512, 1024), ("chat-256", 1024, 256), ("long-8k", 8192, 512)]


@dataclass
class Plan:
    scale: float
    seed: int
    localscore_runs: int
    runfile_samples: int
    openrouter_models: int
    days: int
    incremental_files: int

    @classmethod
    def for_scale(cls, scale: float, seed: int = 2026, incremental_files: int = 1000) -> "Plan":
        if not (0 < scale <= 10):
            raise ValueError(f"scale must be in (0, 10], got {scale}")
        return cls(scale=scale, seed=seed,
                   localscore_runs=max(20, round(100_000 * scale)),
                   runfile_samples=max(20, round(100_000 * scale)),
                   openrouter_models=400,
                   # two years at most: more scale is more runs a day, not runs dated before LocalScore
                   # existed (scale 10 once spread them back to 2006 and the source rejected the pages)
                   days=max(3, min(730, round(730 * scale))),
                   incremental_files=incremental_files)


def _stamp(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S")


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def _json(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# ---- LocalScore ---------------------------------------------------------------------------------

class _Ids:
    def __init__(self) -> None:
        self.maps: dict[str, dict] = {}

    def get(self, kind: str, key) -> int:
        table = self.maps.setdefault(kind, {})
        return table.setdefault(key, len(table) + 1)


def _localscore_run(run_id: int, at: datetime, rng: random.Random, ids: _Ids) -> dict:
    spellings, kind, mems, maker, bandwidth, watts, pp_ratio = rng.choice(HARDWARE)
    name, mem = rng.choice(spellings), rng.choice(mems)
    mnames, _stem, params, size_gb = rng.choice(MODELS)
    mname = rng.choice(mnames)
    quant, _q, bits = rng.choices(QUANTS, weights=[6, 2, 1, 1])[0]
    size = size_gb * bits / 4.85
    runtime = rng.choice(RUNTIMES)
    system = SYSTEMS.get(maker, SYSTEMS["NVIDIA"])
    stamp = _stamp(at)
    eff = rng.uniform(0.55, 0.75) if kind == "GPU" else rng.uniform(0.45, 0.6)
    peak_gen = eff * bandwidth / size
    peak_pp = peak_gen * pp_ratio * rng.uniform(0.85, 1.15) * (8.0 / max(1.0, size)) ** 0.3
    tests = []
    for n, (n_prompt, n_gen) in enumerate(TESTS):
        pp = peak_pp * min(1.0, 0.12 + n_prompt / 1200) * rng.uniform(0.97, 1.03)
        gen = peak_gen * (1 - 0.012 * (n_prompt + n_gen) / 1024) * rng.uniform(0.97, 1.03)
        ttft = n_prompt / pp * 1000 + rng.uniform(3, 12)
        power = watts * rng.uniform(0.8, 1.0) if watts else 0.0
        tests.append({
            "id": run_id * 10 + n, "benchmark_run_id": run_id, "name": f"pp{n_prompt}+tg{n_gen}",
            "n_prompt": n_prompt, "n_gen": n_gen, "avg_time_ms": round(ttft + n_gen / gen * 1000, 6),
            "power_watts": round(power, 6), "prompt_tps": round(pp, 6), "gen_tps": round(gen, 6),
            "prompt_tps_watt": round(pp / power, 6) if power else 0.0,
            "gen_tps_watt": round(gen / power, 6) if power else 0.0,
            "vram_used_mb": None, "ttft_ms": round(ttft, 6), "created_at": stamp,
        })
    avg = lambda key: sum(t[key] for t in tests) / len(tests)  # noqa: E731
    a_pp, a_gen, a_ttft = avg("prompt_tps"), avg("gen_tps"), avg("ttft_ms")
    variant = ids.get("variant", (mname, quant))
    return {
        "id": run_id, "system_id": ids.get("system", system), "accelerator_id": ids.get("acc", (name, kind, mem)),
        "model_variant_id": variant, "runtime_id": ids.get("runtime", runtime),
        "avg_prompt_tps": a_pp, "avg_gen_tps": a_gen, "avg_ttft_ms": a_ttft,
        "performance_score": (a_pp * a_gen * (1000 / a_ttft)) ** (1 / 3) * 10, "created_at": stamp,
        "system": {"id": ids.get("system", system), "cpu_name": system[0], "cpu_arch": system[1],
                   "ram_gb": system[2], "kernel_type": system[3], "kernel_release": system[4],
                   "system_version": f"Cosmopolitan 4.0.2 MODE={system[1]}", "created_at": stamp},
        "accelerator": name, "accelerator_type": kind, "accelerator_memory_gb": mem,
        "model": {"id": ids.get("model", mname), "name": mname, "params": params, "created_at": stamp,
                  "quant": quant, "variantId": variant},
        "runtime": {"id": ids.get("runtime", runtime), "name": runtime[0], "version": runtime[1],
                    "commit_hash": runtime[2], "created_at": stamp},
        "results": tests,
    }


class PackedRuns:
    """The generated runs in submission order, each written to a temporary file as its
    zlib-compressed JSON and read back on use as an equal dict: a run with its nine tests held as
    dicts is ~9 KB, and at scale 10 the million of them held 9.5 GB (packed in memory, still
    1.5 GB). The pages written are the same bytes (JSON gives back the same numbers)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="benchwh-generate-runs-")
        self._spans = array("q")  # offset and length of each run in the file
        self.created_at: list[str] = []  # each run's created_at, without reading it back

    def append(self, run: dict) -> None:
        blob = zlib.compress(_json(run).encode("utf-8"), 1)
        offset = self._file.seek(0, os.SEEK_END)  # reads in between move the position
        self._file.write(blob)
        self._spans.extend((offset, len(blob)))
        self.created_at.append(run["created_at"])

    def __len__(self) -> int:
        return len(self._spans) // 2

    def __getitem__(self, i: int) -> dict:
        i = i + len(self) if i < 0 else i
        offset, length = self._spans[2 * i], self._spans[2 * i + 1]
        self._file.seek(offset)
        return json.loads(zlib.decompress(self._file.read(length)))

    def close(self) -> None:
        self._file.close()


def localscore_runs(plan: Plan, start: datetime) -> "PackedRuns":
    """Runs in submission order (ids ascending with time), 6% identical re-submissions."""
    rng = random.Random(plan.seed * 7 + 1)
    ids = _Ids()
    span = (END - start).total_seconds()
    mean_gap = span / plan.localscore_runs
    runs = PackedRuns()
    at = start
    for i in range(plan.localscore_runs):
        run_id = FIRST_RUN_ID + i
        if runs and rng.random() < 0.06:
            clone = runs[-1]  # a new dict, decoded from the packed run: changed in place
            at = at + timedelta(minutes=rng.randint(3, 25))
            stamp = _stamp(at)
            clone.update({"id": run_id, "created_at": stamp, "results": [
                {**t, "id": run_id * 10 + k, "benchmark_run_id": run_id, "created_at": stamp}
                for k, t in enumerate(clone["results"])]})
            runs.append(clone)
            continue
        at = at + timedelta(seconds=rng.expovariate(1 / mean_gap))
        run = _localscore_run(run_id, at, rng, ids)
        if rng.random() < 0.0005:  # an impossible value: that test row goes to quarantine
            run["results"][rng.randrange(9)]["gen_tps"] = -1.0
        runs.append(run)
    return runs


def _list_shape(run: dict) -> dict:
    return {k: v for k, v in run.items() if k != "results"}


def _next_escape(text: str) -> str:
    return (text.replace("&", "\\u0026").replace(">", "\\u003e").replace("<", "\\u003c")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def result_page(run: dict | None, run_id: int) -> bytes:
    """/result/<id> as the site renders it: a Next.js page with the run in __NEXT_DATA__."""
    if run is None:
        props, title, body = {"result": None, "compareResults": None}, "LocalScore", "<div>Result not found</div>"
    else:
        m = run["model"]
        props = {"result": run, "compareResult": {
            "model": {"name": m["name"], "id": m["id"], "variantId": m["variantId"], "quant": m["quant"],
                      "params": m["params"]},
            "results": [{"accelerator_id": run["accelerator_id"], "accelerator_name": run["accelerator"],
                         "accelerator_type": run["accelerator_type"],
                         "accelerator_memory_gb": run["accelerator_memory_gb"], "model_variant_id": m["variantId"],
                         "avg_prompt_tps": run["avg_prompt_tps"], "avg_gen_tps": run["avg_gen_tps"],
                         "avg_ttft": run["avg_ttft_ms"], "performance_score": run["performance_score"],
                         "performance_rank": 1, "number_ranked": 1}]}}
        title = f"Test #{run['id']} Results"
        rows = "".join(
            f'<div class="text-xs self-center">{html.escape(t["name"])}</div><div class="text-lg">'
            f'{t["prompt_tps"]:,.0f}</div><div class="text-lg">{t["gen_tps"]:,.1f}</div>'
            f'<div class="text-lg">{t["ttft_ms"]:,.0f}</div>' for t in run["results"])
        body = (f'<div class="space-y-8"><div class="text-2xl font-black">TEST #{run["id"]} RESULTS</div>'
                f'<div>{html.escape(run["accelerator"])}</div><div>{html.escape(m["name"])} - '
                f'{html.escape(m["quant"])}</div><div class="grid grid-cols-4 gap-2">{rows}</div></div>')
    data = {"props": {"pageProps": props, "__N_SSP": True}, "page": "/result/[id]",
            "query": {"id": str(run_id)}, "buildId": BUILD_ID, "isFallback": False, "gssp": True,
            "scriptLoader": []}
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charSet="utf-8"/>'
        f'<title>{html.escape(title)}</title>'
        '<link rel="preload" href="/_next/static/css/1d4b3b0c2f1e5a77.css" as="style"/>'
        f'<script src="/_next/static/{BUILD_ID}/_buildManifest.js" defer=""></script></head>'
        f'<body><div id="__next"><main class="max-w-screen-lg mx-auto">{body}</main></div>'
        f'<script id="__NEXT_DATA__" type="application/json">{_next_escape(_json(data))}</script>'
        '</body></html>'
    ).encode("utf-8")


def write_localscore(store: RawStore, plan: Plan, start: datetime) -> dict:
    rng = random.Random(plan.seed * 7 + 2)
    runs = localscore_runs(plan, start)
    created = [datetime.strptime(c, "%Y-%m-%d %H:%M:%S") for c in runs.created_at]
    known: set[int] = set()
    n = 0
    stats = {"api_pages": 0, "result_pages": 0, "runs": len(runs), "tests": 9 * len(runs),
             "not_found_pages": 0, "refetched_pages": 0, "listings": 0}
    refetch: list[int] = []
    for day in range(plan.days):
        # each day's fetches go to the manifest at once: a batch of the whole generation held
        # every manifest line in memory (1M of them at scale 10)
        with store.batched():
            fetch_at = start + timedelta(days=day + 1, hours=6, minutes=rng.randint(0, 50))
            if day == plan.days - 1:  # the last round sees every generated run
                fetch_at = max(fetch_at, created[-1] + timedelta(hours=1))
            while n < len(runs) and created[n] <= fetch_at:
                n += 1
            shift = rng.randint(1, 4) if rng.random() < 0.2 else 0  # runs arriving while paging
            earlier, refetch = refetch, []
            new_ids: dict[int, None] = {}  # in listing order, each once (overlapping pages repeat runs)
            t = fetch_at
            for page in range(1, 10_000):
                lo = (page - 1) * PAGE - (shift if page > 1 else 0)
                chunk = [n - 1 - j for j in range(lo, min(lo + PAGE, n))]  # newest first
                if not chunk:
                    break
                body = _json([_list_shape(runs[i]) for i in chunk]).encode()
                store.put("localscore", body, url=f"{LOCALSCORE}/api/results?sortDirection=desc&limit={PAGE}&page={page}",
                          headers={"content-type": "application/json"}, ext="json", fetched_at=_iso(t), parser_version="1")
                stats["api_pages"] += 1
                stats["listings"] += len(chunk)
                t += timedelta(seconds=1)
                fresh = [i for i in chunk if i not in known]
                new_ids.update(dict.fromkeys(fresh))
                if not fresh or len(chunk) < PAGE:
                    break
            for i in new_ids:
                known.add(i)
                run = runs[i]
                missing = rng.random() < 0.002  # deleted on the site: "Result not found"
                stats["not_found_pages"] += missing
                store.put("localscore", result_page(None if missing else run, run["id"]),
                          url=f"{LOCALSCORE}/result/{run['id']}", headers={"content-type": "text/html"},
                          ext="html", fetched_at=_iso(t), parser_version="1")
                stats["result_pages"] += 1
                t += timedelta(seconds=1)
                if rng.random() < 0.005:
                    refetch.append(i)
            for i in earlier:  # picked last round, fetched again now (same bytes: one blob, two fetches)
                run = runs[i]
                store.put("localscore", result_page(run, run["id"]), url=f"{LOCALSCORE}/result/{run['id']}",
                          headers={"content-type": "text/html"}, ext="html", fetched_at=_iso(t), parser_version="1")
                stats["refetched_pages"] += 1
                t += timedelta(seconds=1)
    stats["runs_listed"] = len(known)
    runs.close()  # an error leaves it to the collector: the file has no name
    return stats


# ---- local run files ------------------------------------------------------------------------------

def _key(seed: int, i: int) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(f"benchwh-bench-{seed}-{i}".encode()).digest())


def trust_keys(home: Path, seed: int) -> list[dsse.TrustedKey]:
    for i, who in enumerate(["Bench Lab A", "Bench Lab B"]):
        pub = dsse.public_key_of(_key(seed, i))
        dsse.trust_key(home, base64.b64encode(pub).decode("ascii"), who)
    return dsse.load_trusted_keys(home)


def _run_payload(rng: random.Random, at: datetime) -> dict:
    spellings, kind, mems, _maker, bandwidth, watts, pp_ratio = rng.choice(HARDWARE)
    mnames, stem, params, size_gb = rng.choice(MODELS)
    ftype, qspell, bits = rng.choices(QUANTS, weights=[6, 2, 1, 1])[0]
    quant = rng.choice(qspell + [ftype])
    engine, versions, backend = rng.choice(ENGINES)
    proto, p_tok, g_tok = rng.choice(PROTOCOLS)
    size = size_gb * bits / 4.85
    gen0 = rng.uniform(0.55, 0.8) * bandwidth / size
    pp0 = gen0 * pp_ratio * rng.uniform(0.85, 1.15)
    reps = rng.randint(3, 12)
    samples = []
    for _ in range(reps):
        pp, gen = pp0 * rng.uniform(0.95, 1.05), gen0 * rng.uniform(0.95, 1.05)
        ttft = p_tok / pp * 1000 + rng.uniform(5, 40)
        samples.append({"prompt_tokens": p_tok, "gen_tokens": g_tok, "ttft_ms": round(ttft, 3),
                        "prompt_tps": round(pp, 3), "gen_tps": round(gen, 3),
                        "turn_time_ms": round(ttft + g_tok / gen * 1000 + rng.uniform(1, 9), 3)})
    doc = {
        "schema": SCHEMA, "submission_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "created_at": at.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "machine": {"gpu": rng.choice(spellings), "gpu_count": 1, "gpu_memory_gb": rng.choice(mems),
                    "cpu": "AMD Ryzen 9 7950X 16-Core Processor", "ram_gb": 64, "os": "Ubuntu 24.04",
                    "country": rng.choice(COUNTRIES)},
        "engine": {"name": engine, "version": rng.choice(versions), **({"backend": backend} if backend else {})},
        "model": {"name": rng.choice(mnames), "file": f"{stem}-{rng.choice(qspell)}.gguf", "quant": quant,
                  "file_size_bytes": int(size * 1e9)},
        "protocol": {"name": proto, "prompt_tokens": p_tok, "gen_tokens": g_tok, "repetitions": reps},
        "samples": samples,
    }
    if watts and rng.random() < 0.6:
        doc["power"] = {"method": "sensor", "avg_watts": round(watts * rng.uniform(0.7, 1.0), 1)}
    return doc


def _envelope(doc: dict, key: Ed25519PrivateKey) -> bytes:
    return (json.dumps(dsse.sign_payload(payload_bytes(doc), key), indent=2) + "\n").encode()


def run_files(plan: Plan, start: datetime, end: datetime, n_samples: int | None, n_files: int | None,
              seed_offset: int) -> list[tuple[str, bytes, datetime]]:
    """(file name, DSSE envelope bytes, received at) for signed run files between start and end."""
    rng = random.Random(plan.seed * 7 + seed_offset)
    keys = [_key(plan.seed, 0), _key(plan.seed, 1), _key(plan.seed, 99)]  # 99: not trusted
    out: list[tuple[str, bytes, datetime]] = []
    samples = 0
    # expected files: samples / 7.5 repetitions
    expected = n_files if n_files is not None else max(1, round(n_samples / 7.5))
    gap = (end - start).total_seconds() / expected
    at = start
    prev: dict | None = None
    while (n_samples is not None and samples < n_samples) or (n_files is not None and len(out) < n_files):
        key = keys[rng.choices([0, 1, 2], weights=[60, 30, 10])[0]]
        if prev is not None and rng.random() < 0.03:  # re-submitted: same measurements, signed again
            at = at + timedelta(minutes=rng.randint(2, 20))
            doc = {**prev, "submission_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                   "created_at": at.strftime("%Y-%m-%dT%H:%M:%S.000000Z")}
        else:
            at = at + timedelta(seconds=rng.uniform(0.2, 1.8) * gap)
            doc = _run_payload(rng, at)
        prev = doc
        received = at + timedelta(minutes=rng.randint(1, 90))
        out.append((f"run-{seed_offset}-{len(out):06d}.json", _envelope(doc, key), received))
        samples += len(doc["samples"])
    return out


def write_runs(store: RawStore, home: Path, plan: Plan, start: datetime) -> dict:
    trusted = trust_keys(home, plan.seed)
    files = run_files(plan, start, END, plan.runfile_samples, None, 3)
    samples = 0
    for name, body, received in files:
        wrapper, kind = make_intake(body, name, {}, trusted)
        assert kind == "runfile", name
        store.put("runs", wrapper, url=f"file://{name}", ext="json",
                  fetched_at=received.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
        samples += json.loads(base64.b64decode(json.loads(body)["payload"]))["protocol"]["repetitions"]
    return {"files": len(files), "samples": samples}


def write_incoming(folder: Path, plan: Plan) -> dict:
    """The incremental step's run files, newer than everything landed, as files on disk."""
    folder.mkdir(parents=True, exist_ok=True)
    files = run_files(plan, END + timedelta(hours=1), END + timedelta(days=2), None, plan.incremental_files, 5)
    samples = 0
    for name, body, _received in files:
        (folder / name).write_bytes(body)
        samples += json.loads(base64.b64decode(json.loads(body)["payload"]))["protocol"]["repetitions"]
    return {"files": len(files), "samples": samples}


# ---- OpenRouter ----------------------------------------------------------------------------------

VENDORS = ["meta-llama", "qwen", "google", "mistralai", "deepseek", "anthropic", "openai", "microsoft",
           "nousresearch", "cohere", "x-ai", "amazon", "nvidia", "thudm", "ibm-granite", "moonshotai"]
WORDS = ["llama", "qwen", "gemma", "mistral", "mixtral", "deepseek", "phi", "hermes", "command", "grok",
         "nova", "nemotron", "glm", "granite", "kimi", "claude", "gpt"]


def _openrouter_catalogue(plan: Plan) -> list[dict]:
    rng = random.Random(plan.seed * 7 + 4)
    models, seen = [], set()
    while len(models) < plan.openrouter_models + plan.openrouter_models // 4:
        vendor, word = rng.choice(VENDORS), rng.choice(WORDS)
        size = rng.choice(["1b", "3b", "7b", "8b", "14b", "32b", "70b", "405b", "mini", "large", "small"])
        ver = rng.choice(["", "-2", "-3", "-3.1", "-3.3", "-2.5", "-4"])
        slug = f"{vendor}/{word}{ver}-{size}" + rng.choice(["", "-instruct", "-chat", "-it"])
        if slug in seen:
            continue
        seen.add(slug)
        prompt = rng.choice([0.015, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.8, 1, 2.5, 3, 5, 15])
        models.append({"id": slug, "prompt": prompt, "completion": prompt * rng.choice([1, 1.5, 2, 3, 4, 5]),
                       "ctx": rng.choice([8192, 32768, 131072, 200000, 1048576]),
                       "free": rng.random() < 0.12, "cache": rng.random() < 0.3,
                       "desc": " ".join(rng.choice(WORDS + ["fast", "model", "tuned", "reasoning", "tasks"])
                                        for _ in range(rng.randint(20, 60)))})
    return models


def _usd_per_token(per_mtok: float) -> str:
    return f"{per_mtok / 1e6:.10f}".rstrip("0").rstrip(".") or "0"


def _openrouter_record(m: dict, created: int, free: bool = False) -> dict:
    ident = m["id"] + (":free" if free else "")
    pricing = {"prompt": "0" if free else _usd_per_token(m["prompt"]),
               "completion": "0" if free else _usd_per_token(m["completion"]),
               "request": "0", "image": "0", "web_search": "0", "internal_reasoning": "0"}
    if m["cache"] and not free:
        pricing["input_cache_read"] = _usd_per_token(m["prompt"] / 4)
    name = m["id"].split("/")[1].replace("-", " ").title()
    return {
        "id": ident, "canonical_slug": m["id"] + "-20250101", "hugging_face_id": "",
        "name": f"{m['id'].split('/')[0].title()}: {name}" + (" (free)" if free else ""), "created": created,
        "description": m["desc"], "context_length": m["ctx"],
        "architecture": {"modality": "text->text", "input_modalities": ["text"], "output_modalities": ["text"],
                         "tokenizer": "Llama3", "instruct_type": None},
        "pricing": pricing,
        "top_provider": {"context_length": m["ctx"], "max_completion_tokens": 16384, "is_moderated": False},
        "per_request_limits": None,
        "supported_parameters": ["max_tokens", "temperature", "top_p", "stop", "seed"],
    }


def write_openrouter(store: RawStore, plan: Plan, start: datetime) -> dict:
    rng = random.Random(plan.seed * 7 + 5)
    catalogue = _openrouter_catalogue(plan)
    live = catalogue[:plan.openrouter_models - 10]
    waiting = catalogue[plan.openrouter_models - 10:]
    created = {m["id"]: int((start - timedelta(days=rng.randint(1, 400))).timestamp()) for m in catalogue}
    rows = 0
    auto = {"id": "openrouter/auto", "canonical_slug": "openrouter/auto", "name": "Auto Router",
            "created": 1699401600, "context_length": 2000000, "architecture": {"modality": "text->text"},
            "pricing": {"prompt": "-1", "completion": "-1"}, "top_provider": {"is_moderated": False}}
    for day in range(plan.days):
        at = start + timedelta(days=day + 1, hours=5, minutes=30)
        for m in live:
            if rng.random() < 0.01:  # a price change
                factor = rng.choice([0.5, 0.8, 0.9, 1.1, 1.25])
                m["prompt"], m["completion"] = round(m["prompt"] * factor, 6), round(m["completion"] * factor, 6)
        if waiting and rng.random() < 0.5 * plan.openrouter_models / max(1, len(catalogue)):
            live.append(waiting.pop(0))
            created[live[-1]["id"]] = int(at.timestamp())
        if len(live) > plan.openrouter_models and rng.random() < 0.5:
            live.pop(rng.randrange(len(live)))
        data = [auto]
        for m in live:
            data.append(_openrouter_record(m, created[m["id"]]))
            if m["free"]:
                data.append(_openrouter_record(m, created[m["id"]], free=True))
        body = json.dumps({"data": data}, indent=None).encode()
        store.put("openrouter", body, url=f"{OPENROUTER}/models", headers={"content-type": "application/json"},
                  ext="json", fetched_at=_iso(at), parser_version="1")
        rows += len(data)
    return {"snapshots": plan.days, "rows": rows}


# ---- entry point ----------------------------------------------------------------------------------

def generate(plan: Plan, home: Path, incoming: Path) -> dict:
    home = Path(home)
    store = RawStore(home / "raw")
    start = END - timedelta(days=plan.days)
    stats = {"plan": asdict(plan), "localscore": write_localscore(store, plan, start)}
    with store.batched():  # one manifest write per source
        stats["runs"] = write_runs(store, home, plan, start)
        stats["openrouter"] = write_openrouter(store, plan, start)
    stats["incoming"] = write_incoming(Path(incoming), plan)
    stats["raw_bytes"] = sum(p.stat().st_size for p in (home / "raw").rglob("*") if p.is_file())
    return stats


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--incoming", type=Path, default=None)
    ap.add_argument("--incremental-files", type=int, default=1000, help="run files for the incremental step")
    args = ap.parse_args(argv)
    try:
        plan = Plan.for_scale(args.scale, args.seed, args.incremental_files)
    except ValueError as exc:
        raise SystemExit(f"benchmarks.generate: {exc}") from None
    if (args.home / "raw").exists():
        raise SystemExit(f"benchmarks.generate: {args.home}/raw already exists; use a new --home")
    stats = generate(plan, args.home, args.incoming or args.home.parent / "incoming")
    # one line for the runner: rows = test-level measurements generated
    print(json.dumps({"rows": stats["localscore"]["tests"] + stats["runs"]["samples"], "detail": stats}))


if __name__ == "__main__":
    main()
