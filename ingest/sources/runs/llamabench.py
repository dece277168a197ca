"""llama.cpp `llama-bench` output in json, jsonl, csv and md, across schema generations.

Only build_commit, model_filename, n_prompt, n_gen and avg_ts are required in structured
output (md has no file name: its model column stands in). samples_ts gives one sample per
repetition when present; otherwise the test's mean is one sample flagged `is_test_mean`.
Log lines around the output (backend init noise) are tolerated. Wrapper rows carrying the
llama-bench object under `bench_raw` (with power and memory peaks) are read too.
"""
from __future__ import annotations

import csv
import io
import re
from datetime import datetime

from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.model import ParsedRun, Sample, canonical_hash, finite
from ingest.sources.runs.payload import MAX_BYTES, MAX_GEN_TPS, MAX_PROMPT_TPS, MAX_TOKENS
from ingest.sources.runs.textutil import json_objects, parse_any_time

REQUIRED = ("build_commit", "model_filename", "n_prompt", "n_gen", "avg_ts")
# old builds said which backend was compiled in with one flag per backend
OLD_BACKEND_FLAGS = ("cuda", "vulkan", "kompute", "metal", "sycl", "rpc", "gpu_blas", "blas")
MIB = 1024 * 1024
MAX_RECORDS = 100_000


def detect(text: str) -> str | None:
    """json | jsonl | csv | md when the text looks like llama-bench output, else None."""
    head = text[:200_000]
    if "avg_ts" in head and any(k in head for k in ("build_commit", "model_filename", "n_prompt")):
        first = next((l.strip() for l in head.splitlines()
                      if l.strip().startswith(("[", "{")) or "avg_ts" in l), "")
        if first.startswith("[") or first == "{":
            return "json"
        if first.startswith("{"):
            return "jsonl"
        if "avg_ts" in first and "," in first:
            return "csv"
        return "json"
    if re.search(r"^\|\s*model\s*\|", head, re.M) and "t/s" in head:
        return "md"
    return None


def quant_from_type(model_type: str | None) -> str | None:
    """`llama 7B Q4_0` -> `Q4_0`; `glm4moe 106B.A12B Q4_K - Medium` -> `Q4_K - Medium`."""
    if not model_type:
        return None
    text = re.sub(r"\bmostly\s+", "", model_type.strip())
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


def parse(text: str, fmt: str, default_time: datetime) -> list[ParsedRun]:
    if fmt == "md":
        return _parse_md(text, default_time)
    if fmt == "csv":
        records = _csv_records(text)
    else:
        records = json_objects(text)
    if not records:
        raise RunRejected(f"no llama-bench records found in the {fmt} output", "no_samples")
    if len(records) > MAX_RECORDS:
        raise RunRejected(f"more than {MAX_RECORDS} llama-bench records", "too_many")
    tests = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise RunRejected(f"llama-bench record {i} is not an object", "malformed_payload")
        extra = {}
        if isinstance(rec.get("bench_raw"), dict):
            extra, rec = rec, rec["bench_raw"]
        tests.append(_test(rec, extra, i))
    # a wrapper adds power and memory measurements: another payload than the bare output,
    # so another run id; the samples it shares with the bare output carry the same test_key
    wrapped = any(isinstance(r, dict) and isinstance(r.get("bench_raw"), dict) for r in records)
    return _group(tests, default_time, "wrapped" if wrapped else "")


def _csv_records(text: str) -> list[dict]:
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if "avg_ts" in l and "," in l), None)
    if start is None:
        return []
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    header = [h.strip() for h in next(reader)]
    out = []
    for row in reader:
        if len(row) != len(header):
            continue  # a stray log line
        out.append({h: (v.strip() if isinstance(v, str) else v) for h, v in zip(header, row)})
    return out


def _int(value, name: str, hi: float = MAX_TOKENS) -> int | None:
    return finite(value, name, hi=hi, integer=True)


def _test(rec: dict, extra: dict, i: int) -> dict:
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
    backend = rec.get("backends") or rec.get("backend")
    if not backend:
        flags = [f.upper() if f != "gpu_blas" else "GPU BLAS" for f in OLD_BACKEND_FLAGS
                 if str(rec.get(f, "")).lower() in ("1", "true")]
        backend = ",".join(flags) or None
    power_w = peak = None
    if extra:
        power_w = finite(extra.get("avg_power_w"), f"{where} avg_power_w", hi=100_000)
        peaks = [extra.get(k) for k in ("vram_peak_mib", "gtt_peak_mib") if extra.get(k) is not None]
        if peaks:
            # an APU's model lives in GTT (system memory mapped for the GPU): count both
            peak = int(sum(finite(v, f"{where} memory peak", hi=MAX_BYTES / MIB) for v in peaks) * MIB)
    return {
        "commit": str(rec["build_commit"]), "build_number": rec.get("build_number"),
        "model_filename": str(rec["model_filename"]), "model_file": model_file,
        "model_type": rec.get("model_type"), "model_size": rec.get("model_size"),
        "model_n_params": rec.get("model_n_params"), "gpu_info": rec.get("gpu_info"),
        "cpu_info": rec.get("cpu_info"), "backend": backend,
        "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": n_depth, "avg_ts": avg_ts, "avg_ns": avg_ns,
        "ts": ts_values, "ns": ns_values, "test_time": test_time, "key": key,
        "power_w": power_w, "peak": peak,
    }


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


def _group(tests: list[dict], default_time: datetime, variant: str = "") -> list[ParsedRun]:
    """One run per (build, model file) in the output; its id hashes its tests' canonical keys,
    so the same output re-serialized (pretty JSON, jsonl, trimmed floats) gets the same id."""
    groups: dict[tuple, list[dict]] = {}
    for t in tests:
        groups.setdefault((t["commit"], t["model_filename"]), []).append(t)
    runs = []
    for (commit, _), group in groups.items():
        first = group[0]
        times = [t["test_time"] for t in group if t["test_time"]]
        gpu_info = first["gpu_info"]
        gpu = str(gpu_info).split(",")[0].strip() if gpu_info else None
        run = ParsedRun(
            source="llama-bench", source_run_id=canonical_hash([variant] + sorted(t["key"] for t in group) if variant
                                         else sorted(t["key"] for t in group)),
            created_at=min(times) if times else default_time,
            gpu=gpu or None, cpu=first["cpu_info"] or None,
            engine_name="llama.cpp",
            engine_version=(f"b{first['build_number']} ({commit})" if first["build_number"] not in (None, "")
                            else commit),
            engine_backend=first["backend"],
            model_name=(model_name_from_file(first["model_file"]) if first["model_file"]
                        else first["model_type"]),
            model_file=first["model_file"],
            model_quant=quant_from_type(first["model_type"]),
            model_file_size_bytes=finite(first["model_size"], "model_size", hi=MAX_BYTES, integer=True),
            model_params=finite(first["model_n_params"], "model_n_params", hi=1e15, integer=True),
            protocol_name="llama-bench",
            protocol_repetitions=max((len(t["ts"]) for t in group), default=0) or None,
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


_MD_TEST = re.compile(r"^(pp|tg|pg)\s*(\d+)(?:\s*,\s*(\d+))?(?:\s*\+\s*tg\s*(\d+))?(?:\s*@\s*d(\d+))?$")
_MD_TS = re.compile(r"^([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*(?:±\s*([0-9]*\.?[0-9]+))?$")


def _parse_md(text: str, default_time: datetime) -> list[ParsedRun]:
    lines = text.splitlines()
    build = re.search(r"^build:\s*([0-9a-fA-F]+)\s*\((\d+)\)", text, re.M)
    if not build:
        raise RunRejected("llama-bench md output lacks its `build: <commit> (<number>)` line", "missing_field")
    commit, number = build.group(1), build.group(2)
    header_idx = next((i for i, l in enumerate(lines) if re.match(r"^\|\s*model\s*\|", l)), None)
    if header_idx is None:
        raise RunRejected("llama-bench md table header not found", "malformed_payload")
    header = [h.strip() for h in lines[header_idx].strip().strip("|").split("|")]
    for col in ("model", "test", "t/s"):
        if col not in header:
            raise RunRejected(f"llama-bench md table lacks the {col!r} column", "missing_field")
    tests = []
    for line in lines[header_idx + 2:]:
        if not line.strip().startswith("|"):
            continue  # blank or a stray log line between rows
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(header):
            raise RunRejected(f"llama-bench md row has {len(cells)} cells, header has {len(header)}",
                              "malformed_payload")
        row = dict(zip(header, cells))
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
        tests.append({
            "commit": commit, "build_number": number, "model_filename": row["model"],
            "model_file": None, "model_type": row["model"], "model_size": None,
            "model_n_params": _params(row.get("params")), "gpu_info": None, "cpu_info": None,
            "backend": row.get("backend"), "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": n_depth,
            "avg_ts": avg, "avg_ns": None, "ts": [], "ns": None, "test_time": None,
            "key": canonical_hash({"c": commit, "m": row["model"], "test": row["test"], "ts": round(avg, 2)}),
            "power_w": None, "peak": None,
        })
    if not tests:
        raise RunRejected("llama-bench md table has no rows", "no_samples")
    return _group(tests, default_time)


def _params(text: str | None) -> int | None:
    m = re.match(r"^([0-9.]+)\s*([KMBT])$", (text or "").strip())
    if not m:
        return None
    scale = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m.group(2)]
    return int(round(float(m.group(1)) * scale))
