"""The normalised shape every run format is turned into, and the checks all of them share.

A format parser returns a list of `ParsedRun`; RunsSource turns those into the landed
entities (runs, samples, context_recall, capabilities).
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.payload import (MAX_BYTES, MAX_GB, MAX_GEN_TPS, MAX_MS, MAX_PROMPT_TPS, MAX_TOKENS,
                                         MAX_WATTS, MAX_ENERGY_J, check_name_text, check_not_future)

# every name a run carries, checked by one rule whatever format it came in (payload.check_name_text)
NAME_FIELDS = ("gpu", "cpu", "os", "country", "engine_name", "engine_version", "engine_backend", "model_name",
               "model_repo", "model_file", "model_quant", "protocol_name", "protocol_sampling", "contributor")
CONFIG_NAME_FIELDS = ("backend", "devices", "type_k", "type_v", "split_mode", "tensor_split", "request_rate",
                      "client_api")

SOURCES = ("runfile", "llama-bench", "ollama", "llama-server", "vllm")


@dataclass
class Sample:
    test_name: str
    test_index: int
    sample_index: int
    n_prompt: int | None = None
    n_gen: int | None = None
    n_depth: int | None = None
    ttft_ms: float | None = None
    prompt_tps: float | None = None
    gen_tps: float | None = None
    turn_time_ms: float | None = None
    # the tool reported only the mean of its repetitions (md output, csv, aggregate vLLM)
    is_test_mean: bool = False
    power_w: float | None = None
    energy_j: float | None = None
    peak_memory_bytes: int | None = None
    measured_at: datetime | None = None
    # hash of the test's canonical record: the same measurement seen in two files matches
    test_key: str | None = None
    # Ollama's model load, kept out of ttft_ms (a cold start is not prompt processing)
    load_duration_ms: float | None = None
    # turn_time_ms worked out from ttft and TPOT rather than measured (DESIGN §7)
    is_turn_time_derived: bool = False
    # tokens per second of all requests together (a batch or serving benchmark's throughput)
    throughput_tps: float | None = None


@dataclass
class ParsedRun:
    source: str
    source_run_id: str
    created_at: datetime
    gpu: str | None = None
    gpu_count: int | None = None
    gpu_memory_gb: float | None = None
    cpu: str | None = None
    ram_gb: float | None = None
    os: str | None = None
    country: str | None = None
    engine_name: str | None = None
    engine_version: str | None = None
    engine_backend: str | None = None
    model_name: str | None = None
    model_repo: str | None = None
    model_file: str | None = None
    model_quant: str | None = None
    model_file_size_bytes: int | None = None
    model_sha256: str | None = None
    model_params: int | None = None
    protocol_name: str | None = None
    protocol_prompt_tokens: int | None = None
    protocol_gen_tokens: int | None = None
    protocol_sampling: str | None = None
    protocol_repetitions: int | None = None
    power_method: str | None = None
    power_avg_watts: float | None = None
    power_energy_j: float | None = None
    memory_peak_bytes: int | None = None
    submission_id: str | None = None
    trust: str = "unverified"
    keyid: str | None = None
    contributor: str | None = None
    samples: list[Sample] = field(default_factory=list)
    context_recall: list[dict] = field(default_factory=list)
    recall_stop_reason: str | None = None  # forgot | could_not_hold | reached_trained_context
    recall_stop_at_tokens: int | None = None
    capabilities: list[dict] = field(default_factory=list)
    # when the file says the run was made (None when it does not: never the time it was added)
    measured_at: datetime | None = None
    config: "RunConfig" = field(default_factory=lambda: RunConfig())
    # fields of the tool's output that no parser maps yet, kept as JSON text (never fatal)
    extra_fields: str | None = None
    # a vouched tool output (vouch.py): {name, sha256 of its bytes, kind, source, source_run_id}
    source_file: dict | None = None


# How a run was made: two runs that differ here are never pooled (DESIGN §5, dim_run_config).
CONFIG_FIELDS = ("backend", "devices", "offload", "n_gpu_layers", "flash_attn", "n_batch", "n_ubatch", "n_threads",
                 "type_k", "type_v", "split_mode", "tensor_split", "n_cpu_moe", "concurrency", "request_rate",
                 "client_api", "is_cpu_fallback", "is_partial_offload")


@dataclass
class RunConfig:
    backend: str | None = None  # the engine's compute backend (CUDA, Metal, ...), never a client API
    devices: str | None = None  # devices used, as the tool names them (CUDA0, Vulkan0, MTL0, none)
    offload: str | None = None  # full | partial | none
    n_gpu_layers: int | None = None  # as given (-1 and 99 mean all layers)
    flash_attn: str | None = None  # on | off | auto
    n_batch: int | None = None
    n_ubatch: int | None = None
    n_threads: int | None = None
    type_k: str | None = None
    type_v: str | None = None
    split_mode: str | None = None
    tensor_split: str | None = None
    n_cpu_moe: int | None = None
    concurrency: int | None = None  # requests in flight at once (servers)
    request_rate: str | None = None  # requests per second the client sent ("inf": all at once)
    client_api: str | None = None  # the benchmark client's API (vLLM `backend`: openai, openai-chat, vllm)
    is_cpu_fallback: bool = False  # a GPU backend failed to start and the run went to the CPU
    is_partial_offload: bool = False

    def finish(self) -> "RunConfig":
        """Derive offload and its flags from what the file said."""
        if self.is_cpu_fallback or self.devices == "none" or self.n_gpu_layers == 0:
            self.offload = "none"
        elif self.n_cpu_moe:
            self.offload = "partial"
        elif self.n_gpu_layers is not None:
            # -1 / 99+ ask for every layer; a smaller count is taken as partial, since the
            # output does not say how many layers the model has
            self.offload = "full" if self.n_gpu_layers < 0 or self.n_gpu_layers >= 99 else "partial"
        self.is_partial_offload = self.offload == "partial"
        return self

    def key(self, engine: str | None, engine_version: str | None) -> str:
        """A stable id of the configuration (landed as config_key, the dbt config_id's source)."""
        values = {name: getattr(self, name) for name in CONFIG_FIELDS}
        return canonical_hash({"engine": engine, "engine_version": engine_version, **values})[:16]


def short_str(value, name: str, max_len: int = 500) -> str | None:
    """A name from a tool output as text (numbers too), or None; too long is refused."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        value = str(value)
    if len(value) > max_len:
        raise RunRejected(f"{name} is longer than {max_len} characters", "too_long")
    return value


def required(value, name: str, **limits):
    out = finite(value, name, **limits)
    if out is None:
        raise RunRejected(f"{name} is missing", "missing_field")
    return out


def name_tests(samples: list["Sample"]) -> None:
    """Repetitions of one request shape form one test named like llama-bench's (pp512+tg128)."""
    shapes: dict[tuple, int] = {}
    for s in samples:
        shape = (s.n_prompt or 0, s.n_gen or 0)
        idx = shapes.setdefault(shape, len(shapes))
        s.test_index = idx
        s.test_name = f"pp{shape[0]}+tg{shape[1]}" if shape[0] else f"tg{shape[1]}"
    counters: dict[int, int] = {}
    for s in samples:
        s.sample_index = counters.get(s.test_index, 0)
        counters[s.test_index] = s.sample_index + 1


def canonical_hash(obj: Any, prefix: str = "") -> str:
    """sha256 of a canonical JSON form (sorted keys, compact) of already-normalised values."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return prefix + hashlib.sha256(text.encode("ascii")).hexdigest()


def finite(value: Any, field_name: str, *, lo: float = 0.0, hi: float, lo_open: bool = False,
           integer: bool = False) -> float | int | None:
    """A number from a tool output (number or numeric string) checked against physical limits."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise RunRejected(f"{field_name}: expected a number, got a boolean", "wrong_type")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise RunRejected(f"{field_name}: {value[:40]!r} is not a number", "wrong_type") from None
    if not isinstance(value, (int, float)):
        raise RunRejected(f"{field_name}: expected a number, got {type(value).__name__}", "wrong_type")
    if isinstance(value, float) and not math.isfinite(value):
        raise RunRejected(f"{field_name}: {value} is not finite", "non_finite")
    if value < 0:
        raise RunRejected(f"{field_name}: {value} is negative", "negative")
    if value < lo or (lo_open and value == lo):
        raise RunRejected(f"{field_name}: {value} is impossible (must be above {lo:g})", "impossible_value")
    if value > hi:
        raise RunRejected(f"{field_name}: {value} is impossible (above {hi:g})", "impossible_value")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise RunRejected(f"{field_name}: {value} is not a whole number", "wrong_type")
        return int(value)
    return float(value)


def per_second(count: float | None, seconds: float | None, name: str) -> float | None:
    """count / seconds; None without a count, a rejection for a duration that rounds to zero."""
    if not count or seconds is None:
        return None
    if seconds <= 0:
        raise RunRejected(f"{name}: {count} tokens in no time is impossible", "impossible_value")
    return count / seconds


def missing_context(run: ParsedRun) -> list[tuple[str, str]]:
    """What a run lacks to be placed: (field, what, the `runs add` flag that gives it)."""
    missing = []
    if not run.gpu or not str(run.gpu).strip():
        missing.append(("gpu", "the GPU name (or CPU only)", "--gpu 'NAME'"))
    if not run.model_name and not run.model_file:
        missing.append(("model", "the model name", "--model 'NAME'"))
    return missing


def check_run(run: ParsedRun, received_at: datetime | None) -> ParsedRun:
    """Checks every format shares: limits on each sample, timestamps, the machine and model."""
    missing = missing_context(run)
    if missing:
        # every missing field at once, with the command line that completes the file
        raise RunRejected(
            f"lacks {' and '.join(what for _, what, _ in missing)}: add it with "
            f"`benchwh runs add FILE {' '.join(flag for _, _, flag in missing)}` or a FILE.meta.json sidecar",
            f"missing_{missing[0][0]}" if len(missing) == 1 else "missing_context")
    if not run.samples:
        raise RunRejected("no measurements found", "no_samples")
    check_not_future(run.created_at, received_at, "created_at")
    if run.measured_at is not None:
        check_not_future(run.measured_at, received_at, "measured_at")
    for name in NAME_FIELDS:
        value = getattr(run, name)
        if value is not None:
            check_name_text(str(value), name)
    for name in CONFIG_NAME_FIELDS:
        value = getattr(run.config, name)
        if value is not None:
            check_name_text(str(value), name)
    for cap in run.capabilities:
        if isinstance(cap, dict) and cap.get("name") is not None:
            check_name_text(str(cap["name"]), "capabilities.name")
    for s in run.samples:
        check_name_text(str(s.test_name), "test name")
        where = f"test {s.test_name!r} sample {s.sample_index}"
        finite(s.gen_tps, f"{where} gen_tps", hi=MAX_GEN_TPS, lo_open=True)
        finite(s.prompt_tps, f"{where} prompt_tps", hi=MAX_PROMPT_TPS, lo_open=True)
        finite(s.ttft_ms, f"{where} ttft_ms", hi=MAX_MS)
        finite(s.turn_time_ms, f"{where} turn_time_ms", hi=MAX_MS)
        for name in ("n_prompt", "n_gen", "n_depth"):
            finite(getattr(s, name), f"{where} {name}", hi=MAX_TOKENS, integer=True)
        finite(s.power_w, f"{where} power_w", hi=MAX_WATTS)
        finite(s.energy_j, f"{where} energy_j", hi=MAX_ENERGY_J)
        finite(s.peak_memory_bytes, f"{where} peak_memory_bytes", hi=MAX_BYTES, integer=True)
        finite(s.load_duration_ms, f"{where} load_duration_ms", hi=MAX_MS)
        finite(s.throughput_tps, f"{where} throughput_tps", hi=MAX_PROMPT_TPS)
        if s.gen_tps is None and s.prompt_tps is None and s.turn_time_ms is None and s.throughput_tps is None:
            raise RunRejected(f"{where}: no speed value", "no_samples")
        if s.measured_at is not None:
            check_not_future(s.measured_at, received_at, f"{where} measured_at")
    finite(run.power_avg_watts, "power avg_watts", hi=MAX_WATTS)
    finite(run.power_energy_j, "power energy_j", hi=MAX_ENERGY_J)
    finite(run.memory_peak_bytes, "memory peak_bytes", hi=MAX_BYTES, integer=True)
    finite(run.gpu_memory_gb, "gpu_memory_gb", hi=MAX_GB)
    finite(run.ram_gb, "ram_gb", hi=MAX_GB)
    finite(run.model_file_size_bytes, "model file_size_bytes", hi=MAX_BYTES, integer=True)
    return run
