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


def check_run(run: ParsedRun, received_at: datetime | None) -> ParsedRun:
    """Checks every format shares: limits on each sample, timestamps, a GPU name."""
    if not run.gpu or not str(run.gpu).strip():
        raise RunRejected("GPU name missing: give --gpu or a <file>.meta.json sidecar with \"gpu\"",
                          "missing_gpu")
    if not run.model_name and not run.model_file:
        raise RunRejected("model name missing: give --model or a sidecar with \"model\"", "missing_model")
    if not run.samples:
        raise RunRejected("no measurements found", "no_samples")
    check_not_future(run.created_at, received_at, "created_at")
    for name in NAME_FIELDS:
        value = getattr(run, name)
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
        if s.gen_tps is None and s.prompt_tps is None and s.turn_time_ms is None:
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
