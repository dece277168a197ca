"""llama.cpp `llama-server` outputs (each pure: text in, ParsedRun out).

- Responses carrying `timings` (prompt_n, prompt_ms, predicted_n, predicted_ms, ...): the native
  `/completion` answer and the OpenAI-compatible `/v1/chat/completions` one (its `created` is
  the measurement time), one object, an array, or one per line (streamed chunks included).
- The server's log: a `print_timing` block per request (`prompt eval time = X ms / N tokens
  (...)`, `eval time = ...`, `total time = ...`, with or without the `slot print_timing: id N |
  task M |` prefix), plus what the log says of the machine and the model: the devices it
  loaded on (`using device CUDA0 (NVIDIA ...)`, `MTL0 : Apple M5 Max`), the model file and how
  many layers were offloaded. A log has no wall-clock time (measured_at stays null).
"""
from __future__ import annotations

import re
from datetime import datetime

from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.model import (ParsedRun, RunConfig, Sample, canonical_hash, finite, name_tests, per_second,
                                       required, short_str)
from ingest.sources.runs.payload import MAX_GEN_TPS, MAX_MS, MAX_PROMPT_TPS, MAX_TOKENS
from ingest.sources.runs.textutil import json_values, strip_ansi, utc_from_unix

MAX_REQUESTS = 100_000


def _file_of(model: str | None) -> str | None:
    return re.split(r"[\\/]", model)[-1] if model and model.lower().endswith(".gguf") else None


# ---- JSON responses ----------------------------------------------------------------------
def sniff_json(text: str) -> tuple[str | None, str]:
    objs = [v for v in json_values(text) if isinstance(v, dict)]
    if any(isinstance(v.get("timings"), dict) for v in objs):
        return "llama-server", ""
    return None, "no response with `timings`"


def parse_json(text: str, default_time: datetime) -> list[ParsedRun]:
    rows = [v for v in json_values(text) if isinstance(v, dict) and isinstance(v.get("timings"), dict)
            and v["timings"].get("predicted_n") is not None]
    if len(rows) > MAX_REQUESTS:
        raise RunRejected(f"more than {MAX_REQUESTS} responses", "too_many")
    samples, times, keys = [], [], []
    model = None
    for i, v in enumerate(rows):
        t = v["timings"]
        where = f"response {i} timings"
        if t.get("predicted_ms") is None:
            raise RunRejected(f"{where} lacks predicted_ms", "missing_field")
        n_gen = required(t["predicted_n"], f"{where}.predicted_n", hi=MAX_TOKENS, integer=True)
        gen_ms = required(t["predicted_ms"], f"{where}.predicted_ms", hi=MAX_MS)
        n_prompt = finite(t.get("prompt_n"), f"{where}.prompt_n", hi=MAX_TOKENS, integer=True)
        prompt_ms = finite(t.get("prompt_ms"), f"{where}.prompt_ms", hi=MAX_MS)
        gen_tps = finite(t.get("predicted_per_second"), f"{where}.predicted_per_second", hi=MAX_GEN_TPS,
                         lo_open=True)
        if gen_tps is None:
            gen_tps = per_second(n_gen, gen_ms / 1000, f"{where} predicted")
        prompt_tps = finite(t.get("prompt_per_second"), f"{where}.prompt_per_second", hi=MAX_PROMPT_TPS,
                            lo_open=True)
        if prompt_tps is None:
            prompt_tps = per_second(n_prompt, prompt_ms / 1000 if prompt_ms is not None else None,
                                    f"{where} prompt")
        s = Sample(test_name="", test_index=0, sample_index=i, n_prompt=n_prompt, n_gen=n_gen,
                   gen_tps=gen_tps, prompt_tps=prompt_tps, ttft_ms=prompt_ms,
                   turn_time_ms=(prompt_ms or 0) + gen_ms)
        if v.get("created") is not None:
            created = finite(v["created"], f"response {i} created", hi=4e9)
            s.measured_at = utc_from_unix(created)
            times.append(s.measured_at)
        model = model or v.get("model") or (v.get("generation_settings") or {}).get("model")
        keys.append({"id": v.get("id"), "created": v.get("created"), "t": {k: t.get(k) for k in sorted(t)}})
        samples.append(s)
    if not samples:
        raise RunRejected("no llama-server `timings` with predicted_n found", "no_samples")
    name_tests(samples)
    model = short_str(model, "model")
    return [ParsedRun(source="llama-server", source_run_id=canonical_hash(keys),
                      created_at=min(times) if times else default_time, measured_at=min(times) if times else None,
                      engine_name="llama.cpp", model_name=model, model_file=_file_of(model),
                      protocol_name="llama-server", protocol_repetitions=len(samples), samples=samples)]


# ---- the server's log --------------------------------------------------------------------
_TIMING = re.compile(r"(?P<kind>prompt eval|eval|total) time\s*=\s*(?P<ms>[0-9.]+) ms\s*/\s*(?P<n>\d+) "
                     r"(?:tokens|runs)")
_DEVICE_USED = re.compile(r"using device (?P<id>\w+) \((?P<name>[^)]+)\)")
_DEVICE_LINE = re.compile(r"^\s*-?\s*(?P<id>(?:CUDA|ROCm|Vulkan|MTL|Metal|SYCL)\d+)\s*:\s*(?P<name>[^(|]+?)\s*(?:\(|\||$)")
_CUDA_DEVICE = re.compile(r"^\s*Device (?P<id>\d+): (?P<name>[^,]+)")
_MODEL_FILE = re.compile(r"(?:loading model '|load_model: loading model '|from )(?P<path>[^' ]+\.gguf)")
_OFFLOADED = re.compile(r"offloaded (?P<n>\d+)/(?P<of>\d+) layers to GPU")
_CUDA_FAILED = re.compile(r"ggml_cuda_init: failed to initialize")


def sniff_log(text: str) -> tuple[str | None, str]:
    plain = strip_ansi(text[:2_000_000])
    if re.search(r"prompt eval time\s*=.*ms\s*/", plain) and re.search(r"(?<!prompt )eval time\s*=", plain):
        return "llama-server-log", ""
    return None, "no `prompt eval time = ... ms / N tokens` timing lines"


def parse_log(text: str, default_time: datetime) -> list[ParsedRun]:
    lines = strip_ansi(text).splitlines()
    devices: dict[str, str] = {}
    model_path = None
    offloaded = None
    version = None
    failed = False
    requests: list[dict] = []
    current: dict = {}
    for line in lines:
        m = _DEVICE_USED.search(line) or _DEVICE_LINE.match(line)
        if m:
            devices.setdefault(m.group("id"), m.group("name").strip())
        elif _CUDA_DEVICE.match(line):
            m = _CUDA_DEVICE.match(line)
            devices.setdefault(f"CUDA{m.group('id')}", m.group("name").strip())
        m = re.match(r"^build: (\d+) \(([0-9a-f]+)\)", line)
        if m and version is None:
            version = f"b{m.group(1)} ({m.group(2)})"
        m = _MODEL_FILE.search(line)
        if m and model_path is None:
            model_path = m.group("path")
        m = _OFFLOADED.search(line)
        if m:
            offloaded = (int(m.group("n")), int(m.group("of")))
        if _CUDA_FAILED.search(line):
            failed = True
        m = _TIMING.search(line)
        if m:
            kind = m.group("kind")
            if kind in current or (kind == "prompt eval" and current):
                requests.append(current)
                current = {}
            current[kind] = (float(m.group("ms")), int(m.group("n")))
    if current:
        requests.append(current)
    requests = [r for r in requests if "eval" in r]
    if not requests:
        raise RunRejected("no `eval time = ...` lines in the llama-server log", "no_samples")
    if len(requests) > MAX_REQUESTS:
        raise RunRejected(f"more than {MAX_REQUESTS} requests", "too_many")
    samples = []
    for i, r in enumerate(requests):
        where = f"log request {i}"
        gen_ms, n_gen = r["eval"]
        prompt_ms, n_prompt = r.get("prompt eval", (None, None))
        finite(gen_ms, f"{where} eval time", hi=MAX_MS)
        finite(prompt_ms, f"{where} prompt eval time", hi=MAX_MS)
        samples.append(Sample(
            test_name="", test_index=0, sample_index=i, n_prompt=n_prompt, n_gen=n_gen,
            gen_tps=per_second(n_gen, gen_ms / 1000, f"{where} eval"),
            prompt_tps=per_second(n_prompt, prompt_ms / 1000 if prompt_ms is not None else None,
                                  f"{where} prompt eval"),
            ttft_ms=prompt_ms, turn_time_ms=(prompt_ms or 0.0) + gen_ms))
    name_tests(samples)
    gpus = [name for key, name in devices.items() if not key.upper().startswith("CPU")]
    config = RunConfig(backend=_backend_of(devices), devices=",".join(devices) or None,
                       is_cpu_fallback=failed and not gpus)
    if offloaded:
        config.n_gpu_layers = offloaded[0]
        config.offload = "full" if offloaded[0] >= offloaded[1] else ("none" if offloaded[0] == 0 else "partial")
        config.is_partial_offload = config.offload == "partial"
    else:
        config.finish()
    key = canonical_hash([sorted(r.items()) for r in requests] + [model_path])
    model_file = _file_of(model_path)
    return [ParsedRun(source="llama-server", source_run_id=key, created_at=default_time,
                      gpu=gpus[0] if gpus else None, gpu_count=len(gpus) if len(gpus) > 1 else None,
                      engine_name="llama.cpp", engine_version=version, engine_backend=config.backend,
                      model_name=re.sub(r"\.gguf$", "", model_file, flags=re.I) if model_file else None,
                      model_file=model_file, protocol_name="llama-server", protocol_repetitions=len(samples),
                      samples=samples, config=config)]


def _backend_of(devices: dict[str, str]) -> str | None:
    names = {"CUDA": "CUDA", "ROCm": "ROCm", "Vulkan": "Vulkan", "MTL": "Metal", "Metal": "Metal", "SYCL": "SYCL"}
    found = [names[k] for k in names if any(d.startswith(k) for d in devices)]
    return ",".join(dict.fromkeys(found)) or None
