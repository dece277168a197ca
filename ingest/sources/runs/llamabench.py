"""llama.cpp `llama-bench` output in json, jsonl, csv, sql and md, across the builds of 2023-2026.

Only build_commit, model_filename, n_prompt, n_gen and avg_ts are required in structured
output (md has no file name: its model column stands in, and its `build:` line may be absent).
Old and new field names both map (`cuda`/`metal`/... flags -> `backends`, `f16_kv` -> type_k/v,
boolean or -1/0/1 `flash_attn`); a field no mapping knows is kept in `extra_fields`, never fatal.
samples_ts gives one sample per repetition; otherwise the test's mean is one sample flagged
`is_test_mean`. Wrappers that nest llama-bench rows (`bench_raw` objects with power and memory
peaks, or any object holding a list of rows such as `{"cmd": ..., "rows": [...]}`) are read too.

md output is read as people paste it: any number of tables with banners, headings, prose,
command lines and `build:` lines between them. Device banners name the GPUs
(`ggml_cuda_init: found 1 CUDA devices: Device 0: ...`, `ggml_vulkan: 0 = ...`), and
`ggml_cuda_init: failed to initialize CUDA` marks the tables after it as a CPU fallback. Each
table is its own run: separate invocations are never pooled.

The run's configuration (backend, devices, GPU layers, flash attention, batch sizes, threads,
KV cache types, split mode, experts on the CPU) is part of the run: records that differ in it
form separate runs. A run on the CPU alone (no GPU backend, `-ngl 0` with no GPU named,
`devices` none, or a CPU fallback) is placed on the machine's CPU.
"""
from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime

from ingest.measure.machine import CPU_ONLY
from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.model import ParsedRun, RunConfig, Sample, canonical_hash, finite, short_str
from ingest.sources.runs.payload import MAX_BYTES, MAX_GEN_TPS, MAX_PROMPT_TPS, MAX_TOKENS
from ingest.sources.runs.textutil import json_values, parse_any_time

REQUIRED = ("build_commit", "model_filename", "n_prompt", "n_gen", "avg_ts")
# old builds said which backend was compiled in with one flag per backend
OLD_BACKEND_FLAGS = {"cuda": "CUDA", "vulkan": "Vulkan", "kompute": "Kompute", "metal": "Metal", "sycl": "SYCL",
                     "opencl": "OpenCL", "rpc": "RPC", "gpu_blas": "GPU BLAS", "blas": "BLAS"}
# every field some build wrote that is mapped or deliberately not part of a run's identity
KNOWN = set(REQUIRED) | set(OLD_BACKEND_FLAGS) | {
    "build_number", "cpu_info", "gpu_info", "backends", "backend", "model_type", "model_size", "model_n_params",
    "n_batch", "n_ubatch", "n_threads", "cpu_mask", "cpu_strict", "poll", "type_k", "type_v", "f16_kv",
    "n_gpu_layers", "n_cpu_moe", "split_mode", "main_gpu", "no_kv_offload", "flash_attn", "devices",
    "tensor_split", "tensor_buft_overrides", "defrag_thold", "use_mmap", "use_direct_io", "embeddings",
    "no_op_offload", "no_host", "mul_mat_q", "n_depth", "test_time", "avg_ns", "stddev_ns", "stddev_ts",
    "samples_ns", "samples_ts"}
BACKENDS_ON_CPU = {"CPU", "BLAS", "ACCELERATE", "OPENBLAS"}
MIB = 1024 * 1024
MAX_RECORDS = 100_000


# ---- detection ---------------------------------------------------------------------------
def sniff(text: str) -> tuple[str | None, str]:
    """(json | jsonl | csv | sql | md, "") when the text is llama-bench output, else (None, what is missing)."""
    head = text[:200_000]
    if re.search(r"^\s*INSERT INTO \w+ \(.*\bavg_ts\b", head, re.M):
        return "sql", ""
    if "avg_ts" in head and any(k in head for k in ("build_commit", "model_filename", "n_prompt")):
        first = next((line.strip() for line in head.splitlines()
                      if line.strip().startswith(("[", "{")) or "avg_ts" in line), "")
        if first.startswith("[") or first == "{":
            return "json", ""
        if first.startswith("{"):
            return "jsonl", ""
        if "avg_ts" in first and "," in first:
            return "csv", ""
        return "json", ""
    if re.search(r"^\s*\|\s*model\s*\|", head, re.M) and "t/s" in head:
        return "md", ""
    return None, "no avg_ts records and no `| model | ... | t/s |` table"


# ---- structured output -------------------------------------------------------------------
def parse(text: str, fmt: str, default_time: datetime) -> list[ParsedRun]:
    if fmt == "md":
        return _parse_md(text, default_time)
    if fmt == "csv":
        records = _csv_records(text)
    elif fmt == "sql":
        records = _sql_records(text)
    else:
        records = json_values(text)
    rows = _unwrap(records)
    if not rows:
        raise RunRejected(f"no llama-bench records found in the {fmt} output", "no_samples")
    if len(rows) > MAX_RECORDS:
        raise RunRejected(f"more than {MAX_RECORDS} llama-bench records", "too_many")
    tests = [_test(rec, extra, i) for i, (rec, extra) in enumerate(rows)]
    # a wrapper adds power and memory measurements: another payload than the bare output,
    # so another run id; the samples it shares with the bare output carry the same test_key
    wrapped = any(extra for _, extra in rows)
    return _group(tests, default_time, "wrapped" if wrapped else "")


def _unwrap(values: list) -> list[tuple[dict, dict]]:
    """(llama-bench record, wrapper row or {}) pairs: bare records, `bench_raw` rows, and
    records nested in lists under any key of a wrapper object."""
    out: list[tuple[dict, dict]] = []

    def visit(value, depth: int) -> None:
        if depth > 4 or len(out) > MAX_RECORDS:
            return
        if isinstance(value, list):
            for item in value:
                visit(item, depth + 1)
        elif isinstance(value, dict):
            if isinstance(value.get("bench_raw"), dict):
                out.append((value["bench_raw"], value))
            elif "avg_ts" in value or "build_commit" in value:
                out.append((value, {}))
            else:
                for item in value.values():
                    if isinstance(item, (list, dict)):
                        visit(item, depth + 1)

    visit(values, 0)
    return out


def _csv_records(text: str) -> list[dict]:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if "avg_ts" in line and "," in line), None)
    if start is None:
        return []
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    header = [h.strip() for h in next(reader)]
    out, misfits = [], []
    for n, row in enumerate(reader, start=1):
        if not row:
            continue
        if len(row) != len(header):
            misfits.append((n, len(row)))  # a stray log line, or a row that does not fit its header
            continue
        out.append({h: (v.strip() if isinstance(v, str) else v) for h, v in zip(header, row)})
    if not out and misfits:
        n, cells = misfits[0]
        raise RunRejected(f"llama-bench csv row {n} has {cells} values but the header names {len(header)} "
                          "columns: the values cannot be matched to their fields", "malformed_payload")
    return out


_SQL_INSERT = re.compile(r"^\s*INSERT INTO \w+ \((?P<cols>[^)]*)\) VALUES \((?P<vals>.*)\);\s*$")


def _sql_records(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        m = _SQL_INSERT.match(line)
        if not m:
            continue
        cols = [c.strip() for c in m.group("cols").split(",")]
        vals = next(csv.reader([m.group("vals")], quotechar="'", skipinitialspace=True, doublequote=True))
        if len(vals) != len(cols):
            raise RunRejected(f"llama-bench sql INSERT has {len(vals)} values for {len(cols)} columns",
                              "malformed_payload")
        out.append({c: (None if v.strip().upper() == "NULL" else v.strip()) for c, v in zip(cols, vals)})
    return out


def _int(value, name: str, hi: float = MAX_TOKENS, signed: bool = False) -> int | None:
    """A whole number; `signed` lets -1 through (llama-bench's "auto" / "all")."""
    if signed and str(value).strip() == "-1":
        return -1
    return finite(value, name, hi=hi, integer=True)


def _bool(value) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    return None


def flash_attn_of(value) -> str | None:
    """llama-bench said flash attention as a boolean (-fa 0|1), later as -1 (auto) / 0 / 1."""
    if value is None or value == "":
        return None
    text = str(value).strip().lower()
    if text in ("-1", "auto"):
        return "auto"
    flag = _bool(value)
    return None if flag is None else ("on" if flag else "off")


def backend_of(rec: dict) -> str | None:
    backend = rec.get("backends") or rec.get("backend")
    if backend:
        return str(backend)
    flags = [name for key, name in OLD_BACKEND_FLAGS.items() if _bool(rec.get(key))]
    return ",".join(flags) or None


def is_cpu_backend(backend: str | None) -> bool:
    parts = {p.strip().upper() for p in re.split(r"[,+]", backend or "") if p.strip()}
    return bool(parts) and parts <= BACKENDS_ON_CPU


def _test(rec: dict, extra: dict, i: int) -> dict:
    if not isinstance(rec, dict):
        raise RunRejected(f"llama-bench record {i} is not an object", "malformed_payload")
    missing = [k for k in REQUIRED if rec.get(k) in (None, "")]
    if missing:
        raise RunRejected(f"llama-bench record {i} lacks {', '.join(missing)}", "missing_field")
    where = f"llama-bench record {i}"
    for key in ("build_commit", "model_filename"):
        if not isinstance(rec[key], (str, int)) or len(str(rec[key])) > 500:
            raise RunRejected(f"{where} {key} is not a short string", "wrong_type")
    n_prompt = _int(rec["n_prompt"], f"{where} n_prompt")
    n_gen = _int(rec["n_gen"], f"{where} n_gen")
    n_depth = _int(rec.get("n_depth"), f"{where} n_depth") or 0
    if not n_prompt and not n_gen:
        raise RunRejected(f"{where} has n_prompt 0 and n_gen 0", "impossible_value")
    limit = MAX_GEN_TPS if not n_prompt else MAX_PROMPT_TPS
    avg_ts = finite(rec["avg_ts"], f"{where} avg_ts", hi=limit, lo_open=True)
    avg_ns = _int(rec.get("avg_ns"), f"{where} avg_ns", hi=1e18)
    samples_ts = rec.get("samples_ts")
    samples_ns = rec.get("samples_ns")
    if isinstance(samples_ts, str):  # some csv writers join lists into one field
        samples_ts = [v for v in re.split(r"[\s,;]+", samples_ts.strip("[] ")) if v]
    if isinstance(samples_ns, str):
        samples_ns = [v for v in re.split(r"[\s,;]+", samples_ns.strip("[] ")) if v]
    if samples_ts is not None and not isinstance(samples_ts, list):
        raise RunRejected(f"{where} samples_ts is not a list", "wrong_type")
    if samples_ts and len(samples_ts) > 10_000:
        raise RunRejected(f"{where} has more than 10000 samples", "too_many")
    ts_values = [finite(v, f"{where} samples_ts[{j}]", hi=limit, lo_open=True)
                 for j, v in enumerate(samples_ts or [])]
    ns_values = None
    if isinstance(samples_ns, list) and len(samples_ns) == len(ts_values):
        ns_values = [_int(v, f"{where} samples_ns[{j}]", hi=1e18) for j, v in enumerate(samples_ns)]
    test_time = None
    if rec.get("test_time"):
        test_time = parse_any_time(str(rec["test_time"]), f"{where} test_time")
    model_file = file_basename(str(rec["model_filename"]))
    key = canonical_hash({
        "c": str(rec["build_commit"]), "f": model_file, "p": n_prompt, "g": n_gen, "d": n_depth,
        "t": test_time.isoformat() if test_time else None,
        "ns": avg_ns, "ts": None if avg_ns is not None else round(avg_ts, 2),
    })
    power_w = peak = None
    if extra:
        power_w = finite(extra.get("avg_power_w"), f"{where} avg_power_w", hi=100_000)
        peaks = [extra.get(k) for k in ("vram_peak_mib", "gtt_peak_mib") if extra.get(k) is not None]
        if peaks:
            # an APU's model lives in GTT (system memory mapped for the GPU): count both
            peak = int(sum(finite(v, f"{where} memory peak", hi=MAX_BYTES / MIB) for v in peaks) * MIB)
    f16_kv = _bool(rec.get("f16_kv"))
    old_kv = None if f16_kv is None else ("f16" if f16_kv else "f32")
    gpu_info = short_str(rec.get("gpu_info"), f"{where} gpu_info")
    config = RunConfig(
        backend=short_str(backend_of(rec), f"{where} backends"),
        devices=short_str(rec.get("devices"), f"{where} devices"),
        n_gpu_layers=_int(rec.get("n_gpu_layers"), f"{where} n_gpu_layers", hi=100_000, signed=True),
        flash_attn=flash_attn_of(rec.get("flash_attn")),
        n_batch=_int(rec.get("n_batch"), f"{where} n_batch"),
        n_ubatch=_int(rec.get("n_ubatch"), f"{where} n_ubatch"),
        n_threads=_int(rec.get("n_threads"), f"{where} n_threads", hi=100_000),
        type_k=short_str(rec.get("type_k") or old_kv, f"{where} type_k"),
        type_v=short_str(rec.get("type_v") or old_kv, f"{where} type_v"),
        split_mode=short_str(rec.get("split_mode"), f"{where} split_mode"),
        tensor_split=short_str(rec.get("tensor_split"), f"{where} tensor_split"),
        n_cpu_moe=_int(rec.get("n_cpu_moe"), f"{where} n_cpu_moe", hi=100_000),
    )
    return {
        "commit": str(rec["build_commit"]), "build_number": rec.get("build_number"),
        "model_filename": str(rec["model_filename"]), "model_file": model_file,
        "model_type": rec.get("model_type"), "model_size": rec.get("model_size"),
        "model_n_params": rec.get("model_n_params"), "gpu_info": gpu_info,
        "cpu_info": short_str(rec.get("cpu_info"), f"{where} cpu_info"), "config": config,
        "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": n_depth, "avg_ts": avg_ts, "avg_ns": avg_ns,
        "ts": ts_values, "ns": ns_values, "test_time": test_time, "key": key,
        "power_w": power_w, "peak": peak, "gpu_names": [], "gpu_count": None,
        "extra": {k: v for k, v in rec.items() if k not in KNOWN},
    }


# ---- names -------------------------------------------------------------------------------
def quant_from_type(model_type: str | None) -> str | None:
    """`llama 7B Q4_0` -> `Q4_0`; `glm4moe 106B.A12B Q4_K - Medium` -> `Q4_K - Medium`."""
    if not model_type:
        return None
    text = re.sub(r"\bmostly\s+", "", str(model_type).strip())
    parts = text.split(" ", 2)
    return parts[2].strip() if len(parts) == 3 else None


def file_basename(path: str) -> str:
    return re.split(r"[\\/]", path.strip())[-1]


def model_name_from_file(name: str) -> str:
    stem = re.sub(r"\.gguf$", "", name, flags=re.I)
    return re.sub(r"-\d{5}-of-\d{5}$", "", stem)


def test_name(n_prompt: int, n_gen: int, n_depth: int | None) -> str:
    if n_prompt and n_gen:
        name = f"pp{n_prompt}+tg{n_gen}"
    elif n_gen:
        name = f"tg{n_gen}"
    else:
        name = f"pp{n_prompt}"
    if n_depth:
        name += f" @ d{n_depth}"
    return name


# ---- runs --------------------------------------------------------------------------------
def _samples_of(t: dict, test_index: int) -> list[Sample]:
    name = test_name(t["n_prompt"], t["n_gen"], t["n_depth"])
    values = t["ts"] or [t["avg_ts"]]
    out = []
    for j, ts in enumerate(values):
        ns = t["ns"][j] if t["ns"] else (t["avg_ns"] if not t["ts"] else None)
        s = Sample(test_name=name, test_index=test_index, sample_index=j, n_prompt=t["n_prompt"],
                   n_gen=t["n_gen"], n_depth=t["n_depth"], is_test_mean=not t["ts"],
                   power_w=t["power_w"], peak_memory_bytes=t["peak"], measured_at=t["test_time"],
                   test_key=t["key"])
        if t["n_prompt"] and t["n_gen"]:
            # a pp+tg test: the rate covers both phases, the time is the whole turn
            s.turn_time_ms = ns / 1e6 if ns else 1000.0 * (t["n_prompt"] + t["n_gen"]) / ts
        elif t["n_gen"]:
            s.gen_tps = ts
        else:
            s.prompt_tps = ts
        out.append(s)
    return out


def _place(t: dict) -> tuple[str | None, str | None, int | None]:
    """(gpu, cpu, gpu_count) of a test: the CPU for a run that never ran on a GPU."""
    config: RunConfig = t["config"]
    names = t["gpu_names"] or ([n.strip() for n in str(t["gpu_info"]).split(",") if n.strip()]
                               if t["gpu_info"] else [])
    on_cpu = (config.is_cpu_fallback or config.devices == "none" or is_cpu_backend(config.backend)
              or (not names and config.n_gpu_layers == 0))
    if on_cpu:
        config.devices = config.devices or "none"
        return CPU_ONLY, t["cpu_info"], None
    count = t["gpu_count"] if t["gpu_count"] is not None else len(names)
    return (names[0] if names else None), t["cpu_info"], (count if count > 1 else None)


def _group(tests: list[dict], default_time: datetime, variant: str = "") -> list[ParsedRun]:
    """One run per (table, build, model file, configuration); its id hashes its tests' canonical
    keys, so the same output re-serialized (pretty JSON, jsonl, trimmed floats) gets the same id."""
    groups: dict[tuple, list[dict]] = {}
    for t in tests:
        t["place"] = _place(t)  # before finish(): a run on the CPU has no devices
        t["config"].finish()
        config_key = t["config"].key("llama.cpp", t["commit"])
        groups.setdefault((t.get("table"), t["commit"], t["model_filename"], config_key), []).append(t)
    several_configs = len({k[3] for k in groups}) > 1
    runs = []
    for (table, commit, _, config_key), group in groups.items():
        first = group[0]
        times = [t["test_time"] for t in group if t["test_time"]]
        gpu, cpu, gpu_count = first["place"]
        keys = sorted(t["key"] for t in group)
        # runs of one output made differently get ids of their own; a uniform output keeps
        # the id it always had
        id_parts = ([variant] if variant else []) + ([config_key] if several_configs else []) + keys
        extra = {}
        for t in group:
            for k, v in t["extra"].items():
                extra.setdefault(k, v)
        build = first["build_number"]
        version = (f"b{build} ({commit})" if build not in (None, "") and commit else
                   commit or (f"b{build}" if build not in (None, "") else None))
        run = ParsedRun(
            source="llama-bench", source_run_id=canonical_hash(id_parts),
            created_at=min(times) if times else default_time, measured_at=min(times) if times else None,
            gpu=gpu, gpu_count=gpu_count, cpu=cpu,
            engine_name="llama.cpp", engine_version=version, engine_backend=first["config"].backend,
            model_name=(model_name_from_file(first["model_file"]) if first["model_file"]
                        else first["model_type"]),
            model_file=first["model_file"],
            model_quant=quant_from_type(first["model_type"]),
            model_file_size_bytes=finite(first["model_size"], "model_size", hi=MAX_BYTES, integer=True),
            model_params=finite(first["model_n_params"], "model_n_params", hi=1e15, integer=True),
            protocol_name="llama-bench",
            protocol_repetitions=max((len(t["ts"]) for t in group), default=0) or None,
            config=first["config"],
            extra_fields=json.dumps(extra, sort_keys=True, default=str)[:4000] if extra else None,
        )
        powers = [t["power_w"] for t in group if t["power_w"] is not None]
        if powers:
            run.power_method, run.power_avg_watts = "sensor", sum(powers) / len(powers)
        peaks = [t["peak"] for t in group if t["peak"] is not None]
        run.memory_peak_bytes = max(peaks) if peaks else None
        for i, t in enumerate(group):
            run.samples.extend(_samples_of(t, i))
        runs.append(run)
    return runs


# ---- md as people paste it ---------------------------------------------------------------
_MD_TEST = re.compile(r"^(pp|tg|pg)\s*(\d+)(?:\s*,\s*(\d+))?(?:\s*\+\s*tg\s*(\d+))?(?:\s*@\s*d\s*(\d+))?$")
_MD_TS = re.compile(r"^([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*(?:±\s*([0-9]*\.?[0-9]+))?$")
_MD_HEADER = re.compile(r"^\s*\|\s*model\s*\|")
_BUILD = re.compile(r"^\s*build:\s*([0-9a-fA-F]+)\s*\((\d+)\)")
_CUDA_FOUND = re.compile(r"ggml_cuda_init: found (\d+) (CUDA|ROCm|MUSA) devices")
_CUDA_FAILED = re.compile(r"ggml_cuda_init: failed to initialize (CUDA|ROCm|HIP)")
_CUDA_DEVICE = re.compile(r"^\s*Device (\d+): ([^,]+)")
_VULKAN_FOUND = re.compile(r"ggml_vulkan: Found (\d+) Vulkan devices")
_VULKAN_DEVICE = re.compile(r"ggml_vulkan: (\d+) = (.+?)(?: \(|\s*\||$)")
_METAL_DEVICE = re.compile(r"ggml_metal(?:_device)?_init: (?:GPU name|found device):\s*(.+?)\s*$")
_COMMAND = re.compile(r"llama-bench\b(.*)$")
# md columns -> config fields (llama-bench prints only the parameters that vary or differ
# from their defaults)
_MD_CONFIG = {"ngl": "n_gpu_layers", "n_gpu_layers": "n_gpu_layers", "threads": "n_threads",
              "n_threads": "n_threads", "n_batch": "n_batch", "n_ubatch": "n_ubatch", "type_k": "type_k",
              "type_v": "type_v", "fa": "flash_attn", "flash_attn": "flash_attn", "dev": "devices",
              "devices": "devices", "sm": "split_mode", "split_mode": "split_mode", "ts": "tensor_split",
              "tensor_split": "tensor_split", "n_cpu_moe": "n_cpu_moe", "ncmoe": "n_cpu_moe", "cmoe": "n_cpu_moe"}
_MD_KNOWN = {"model", "size", "params", "backend", "test", "t/s"} | set(_MD_CONFIG)


class _Banner:
    """What the lines before a table said about the devices."""

    def __init__(self):
        self.names: list[str] = []
        self.count: int | None = None
        self.prefix: str | None = None
        self.failed = False
        self.rpc_servers = 0

    def read(self, line: str) -> None:
        m = _CUDA_FOUND.search(line)
        if m:
            self.names, self.count, self.failed = [], int(m.group(1)), False
            self.prefix = "ROCm" if m.group(2) == "ROCm" else m.group(2)
            return
        if _CUDA_FAILED.search(line):
            self.names, self.count, self.failed = [], 0, True
            return
        m = _VULKAN_FOUND.search(line)
        if m:
            self.names, self.count, self.failed, self.prefix = [], int(m.group(1)), False, "Vulkan"
            return
        m = _VULKAN_DEVICE.search(line) or _METAL_DEVICE.search(line)
        if m:
            self.names.append(m.group(m.lastindex).strip())
            if _METAL_DEVICE.search(line):
                self.prefix, self.failed = "MTL", False
            return
        m = _CUDA_DEVICE.match(line)
        if m and self.count:
            self.names.append(m.group(2).strip())
            return
        m = _COMMAND.search(line)
        if m:
            rpc = re.search(r"--rpc\s+(\S+)", m.group(1))
            self.rpc_servers = len(rpc.group(1).split(",")) if rpc else 0


def _parse_md(text: str, default_time: datetime) -> list[ParsedRun]:
    lines = text.splitlines()
    banner = _Banner()
    tests: list[dict] = []
    pending: list[dict] = []  # tests of tables whose build line has not come yet
    table = -1
    i = 0
    while i < len(lines):
        line = lines[i]
        build = _BUILD.match(line)
        if build:
            for t in pending:
                t["commit"], t["build_number"] = build.group(1), build.group(2)
            pending = []
            i += 1
            continue
        if not _MD_HEADER.match(line):
            banner.read(line)
            i += 1
            continue
        table += 1
        header = [h.strip() for h in line.strip().strip("|").split("|")]
        for col in ("model", "test", "t/s"):
            if col not in header:
                raise RunRejected(f"llama-bench md table {table + 1} lacks the {col!r} column", "missing_field")
        i += 2  # the header and its |---| line
        while i < len(lines):
            row_line = lines[i]
            if _MD_HEADER.match(row_line) or _BUILD.match(row_line):
                break
            stripped = row_line.strip()
            if not stripped.startswith("|"):
                banner.read(row_line)  # blank, prose, log lines or the next table's banner
                i += 1
                continue
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if len(cells) != len(header):
                raise RunRejected(f"llama-bench md row has {len(cells)} cells, header has {len(header)}",
                                  "malformed_payload")
            t = _md_test(dict(zip(header, cells)), table, banner)
            tests.append(t)
            pending.append(t)
            i += 1
    if not tests:
        raise RunRejected("llama-bench md table has no rows", "no_samples")
    for t in tests:
        t["key"] = canonical_hash({"c": t["commit"], "m": t["model_filename"], "test": t["test"],
                                   "ts": round(t["avg_ts"], 2), "table": t["table"]})
    return _group(tests, default_time)


def _md_test(row: dict, table: int, banner: _Banner) -> dict:
    m = _MD_TEST.fullmatch(row["test"])
    if not m:
        raise RunRejected(f"llama-bench md test {row['test'][:40]!r} not understood", "malformed_payload")
    kind, a, b, tg, depth = m.groups()
    if kind == "pg":
        n_prompt, n_gen = int(a), int(b or 0)
    elif kind == "pp":
        n_prompt, n_gen = int(a), int(tg or 0)
    else:
        n_prompt, n_gen = 0, int(a)
    n_depth = int(depth) if depth else 0
    ts_m = _MD_TS.fullmatch(row["t/s"])
    if not ts_m:
        raise RunRejected(f"llama-bench md t/s {row['t/s'][:40]!r} is not a number", "malformed_payload")
    limit = MAX_GEN_TPS if not n_prompt else MAX_PROMPT_TPS
    where = f"llama-bench md test {row['test']!r}"
    avg = finite(ts_m.group(1), f"{where} t/s", hi=limit, lo_open=True)
    if n_prompt > MAX_TOKENS or n_gen > MAX_TOKENS or n_depth > MAX_TOKENS:
        raise RunRejected(f"{where}: token count impossible", "impossible_value")
    values: dict = {}
    for col, attr in _MD_CONFIG.items():
        if col in row and row[col] != "":
            values[attr] = row[col]
    devices = values.get("devices")
    gpu_count = banner.count
    if devices is not None and devices != "none":
        gpu_count = len([d for d in re.split(r"[/,]", devices) if d.strip()])
    if devices is None and banner.failed:
        devices = "none"
    elif devices is None and (banner.count or 0) > 1:
        devices = ",".join(f"{banner.prefix}{n}" for n in range(banner.count))
    if banner.rpc_servers:
        local = ",".join(f"{banner.prefix}{n}" for n in range(banner.count or 1)) if banner.prefix else "local"
        devices = f"{devices or local}+{banner.rpc_servers} RPC"
    config = RunConfig(
        backend=short_str(row.get("backend"), "backend"), devices=short_str(devices, "devices"),
        n_gpu_layers=_int(values.get("n_gpu_layers"), f"{where} ngl", hi=100_000, signed=True),
        flash_attn=flash_attn_of(values.get("flash_attn")),
        n_batch=_int(values.get("n_batch"), f"{where} n_batch"),
        n_ubatch=_int(values.get("n_ubatch"), f"{where} n_ubatch"),
        n_threads=_int(values.get("n_threads"), f"{where} threads", hi=100_000),
        type_k=short_str(values.get("type_k"), "type_k"), type_v=short_str(values.get("type_v"), "type_v"),
        split_mode=short_str(values.get("split_mode"), "sm"), tensor_split=short_str(values.get("tensor_split"), "ts"),
        n_cpu_moe=_int(values.get("n_cpu_moe"), f"{where} n_cpu_moe", hi=100_000),
        is_cpu_fallback=banner.failed,
    )
    params = _params(row.get("params"))
    model = row["model"]
    if params and re.search(r"\s\?B\s", model):
        # llama.cpp prints `?B` when it has no size class for the architecture (gpt-oss 20b and
        # 120b both read `gpt-oss ?B F16`): the params column tells them apart
        model = re.sub(r"\s\?B\s", f" {row['params'].replace(' ', '')} ", model, count=1)
    return {
        "commit": None, "build_number": None, "model_filename": model, "model_file": None,
        "model_type": model, "model_size": None, "model_n_params": params,
        "gpu_info": None, "cpu_info": None, "config": config, "test": row["test"], "table": table,
        "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": n_depth, "avg_ts": avg, "avg_ns": None,
        "ts": [], "ns": None, "test_time": None, "power_w": None, "peak": None,
        "gpu_names": list(banner.names), "gpu_count": gpu_count,
        "extra": {k: v for k, v in row.items() if k not in _MD_KNOWN},
    }


def _params(text: str | None) -> int | None:
    m = re.match(r"^([0-9.]+)\s*([KMBT])$", (text or "").strip())
    if not m:
        return None
    scale = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m.group(2)]
    return int(round(float(m.group(1)) * scale))
