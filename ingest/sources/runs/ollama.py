"""Ollama outputs (each pure: text in, ParsedRun out).

- API final responses (`/api/generate` or `/api/chat` with `"done": true`; durations in ns), one
  JSON object, a JSON array, or an NDJSON stream whose last object carries the timings; each
  final response is one repetition. `created_at` is when the response was made (measured_at).
- `ollama run --verbose` text: blocks of `total duration:` ... `eval rate:` lines with Go
  durations (`2m43.589s`, `97.885315ms`, `850µs`), terminal escape codes stripped first. The
  text names no model and no time: they come from flags (`--model`, `--measured-at`).

The model load (`load_duration`) is kept in its own column and left out of TTFT and turn
time: 1.2 s of a cold start is not prompt processing.
"""
from __future__ import annotations

import re
from datetime import datetime

from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.model import (ParsedRun, Sample, canonical_hash, finite, name_tests, per_second, required,
                                       short_str)
from ingest.sources.runs.payload import MAX_GEN_TPS, MAX_MS, MAX_PROMPT_TPS, MAX_TOKENS
from ingest.sources.runs.textutil import go_duration_ms, json_values, parse_any_time, strip_ansi

MAX_REQUESTS = 100_000
NS_MAX = MAX_MS * 1e6


# ---- API responses -----------------------------------------------------------------------
def sniff_api(text: str) -> tuple[str | None, str]:
    objs = [v for v in json_values(text) if isinstance(v, dict)]
    if any(v.get("done") is True and "eval_count" in v for v in objs):
        return "ollama", ""
    if not objs:
        return None, "no JSON objects"
    return None, 'no final response ("done": true with eval_count)'


def parse_api(text: str, default_time: datetime) -> list[ParsedRun]:
    values = json_values(text)
    finals = [v for v in values if isinstance(v, dict) and v.get("done") is True]
    if not finals:
        raise RunRejected("no final Ollama response (\"done\": true) found", "no_samples")
    if len(finals) > MAX_REQUESTS:
        raise RunRejected(f"more than {MAX_REQUESTS} responses", "too_many")
    models = {str(v.get("model")) for v in finals}
    if len(models) > 1:
        raise RunRejected("Ollama responses of several models in one file", "inconsistent")
    samples, times, keys = [], [], []
    for i, v in enumerate(finals):
        where = f"response {i}"
        if "eval_count" not in v or "eval_duration" not in v:
            raise RunRejected(f"{where} lacks eval_count or eval_duration", "missing_field")
        n_gen = required(v["eval_count"], f"{where} eval_count", hi=MAX_TOKENS, integer=True)
        eval_ns = required(v["eval_duration"], f"{where} eval_duration", hi=NS_MAX, lo_open=True)
        n_prompt = finite(v.get("prompt_eval_count"), f"{where} prompt_eval_count", hi=MAX_TOKENS, integer=True)
        prompt_ns = finite(v.get("prompt_eval_duration"), f"{where} prompt_eval_duration", hi=NS_MAX)
        total_ns = finite(v.get("total_duration"), f"{where} total_duration", hi=NS_MAX)
        load_ns = finite(v.get("load_duration"), f"{where} load_duration", hi=NS_MAX) or 0.0
        if total_ns is not None and total_ns < eval_ns + load_ns:
            raise RunRejected(f"{where} total_duration is shorter than load plus eval", "impossible_value")
        s = Sample(test_name="", test_index=0, sample_index=i, n_prompt=n_prompt, n_gen=n_gen,
                   gen_tps=per_second(n_gen, eval_ns / 1e9, f"{where} eval"),
                   prompt_tps=per_second(n_prompt, prompt_ns / 1e9 if prompt_ns else None, f"{where} prompt eval"),
                   ttft_ms=(total_ns - load_ns - eval_ns) / 1e6 if total_ns is not None else None,
                   turn_time_ms=(total_ns - load_ns) / 1e6 if total_ns is not None else None,
                   load_duration_ms=load_ns / 1e6 if "load_duration" in v else None)
        if v.get("created_at"):
            s.measured_at = parse_any_time(str(v["created_at"]), f"{where} created_at")
            times.append(s.measured_at)
        keys.append({k: v.get(k) for k in ("created_at", "eval_count", "eval_duration",
                                            "prompt_eval_count", "prompt_eval_duration", "total_duration")})
        samples.append(s)
    name_tests(samples)
    return [ParsedRun(source="ollama", source_run_id=canonical_hash(keys),
                      created_at=min(times) if times else default_time, measured_at=min(times) if times else None,
                      engine_name="ollama", model_name=short_str(finals[0].get("model"), "model"),
                      protocol_name="ollama-api", protocol_repetitions=len(samples), samples=samples)]


# ---- `ollama run --verbose` --------------------------------------------------------------
_VERBOSE = {
    "total duration": "total", "load duration": "load", "prompt eval count": "prompt_n",
    "prompt eval duration": "prompt_d", "prompt eval rate": "prompt_rate", "eval count": "gen_n",
    "eval duration": "gen_d", "eval rate": "gen_rate",
}


def sniff_verbose(text: str) -> tuple[str | None, str]:
    plain = strip_ansi(text[:2_000_000])
    if re.search(r"^\s*eval rate:\s", plain, re.M) and re.search(r"^\s*eval count:\s", plain, re.M):
        return "ollama-verbose", ""
    return None, "no `eval count:` / `eval rate:` lines"


def parse_verbose(text: str, default_time: datetime) -> list[ParsedRun]:
    blocks, current = [], {}
    for line in strip_ansi(text).splitlines():
        m = re.match(r"^\s*([a-z ]+?):\s+(.+?)\s*$", line)
        if not m or m.group(1) not in _VERBOSE:
            continue
        key = _VERBOSE[m.group(1)]
        if key in current or (key == "total" and current):
            blocks.append(current)
            current = {}
        current[key] = m.group(2)
    if current:
        blocks.append(current)
    blocks = [b for b in blocks if "gen_n" in b and ("gen_d" in b or "gen_rate" in b)]
    if not blocks:
        raise RunRejected("no `eval count` / `eval duration` lines in the Ollama --verbose text", "no_samples")
    if len(blocks) > MAX_REQUESTS:
        raise RunRejected(f"more than {MAX_REQUESTS} blocks", "too_many")
    samples = []
    for i, b in enumerate(blocks):
        where = f"--verbose block {i}"
        n_gen = _count(b["gen_n"], f"{where} eval count")
        n_prompt = _count(b["prompt_n"], f"{where} prompt eval count") if "prompt_n" in b else None
        gen_ms = go_duration_ms(b["gen_d"]) if "gen_d" in b else None
        prompt_ms = go_duration_ms(b["prompt_d"]) if "prompt_d" in b else None
        total_ms = go_duration_ms(b["total"]) if "total" in b else None
        load_ms = go_duration_ms(b["load"]) if "load" in b else None
        gen_tps = (per_second(n_gen, gen_ms / 1000, f"{where} eval") if gen_ms is not None
                   else _rate(b.get("gen_rate"), f"{where} eval rate", MAX_GEN_TPS))
        # a cached prompt can take "0s": no prompt rate then, rather than a rejection
        prompt_tps = (per_second(n_prompt, prompt_ms / 1000, f"{where} prompt eval") if prompt_ms
                      else _rate(b.get("prompt_rate"), f"{where} prompt eval rate", MAX_PROMPT_TPS)
                      if prompt_ms is None else None)
        served_ms = None if total_ms is None else total_ms - (load_ms or 0.0)
        if served_ms is not None and gen_ms is not None and served_ms < gen_ms:
            raise RunRejected(f"{where} total duration is shorter than load plus eval", "impossible_value")
        samples.append(Sample(
            test_name="", test_index=0, sample_index=i, n_prompt=n_prompt, n_gen=n_gen,
            gen_tps=gen_tps, prompt_tps=prompt_tps,
            ttft_ms=(served_ms - gen_ms) if served_ms is not None and gen_ms is not None else None,
            turn_time_ms=served_ms, load_duration_ms=load_ms))
    name_tests(samples)
    key = canonical_hash([sorted(b.items()) for b in blocks])
    return [ParsedRun(source="ollama", source_run_id=key, created_at=default_time, engine_name="ollama",
                      protocol_name="ollama-run-verbose", protocol_repetitions=len(samples), samples=samples)]


def _count(text: str, name: str) -> int:
    m = re.match(r"^(\d+)(?:\s*token\(s\))?$", text.strip())
    if not m:
        raise RunRejected(f"{name} {text[:40]!r} is not a token count", "wrong_type")
    return finite(int(m.group(1)), name, hi=MAX_TOKENS, integer=True)


def _rate(text: str | None, name: str, hi: float) -> float | None:
    if text is None:
        return None
    m = re.match(r"^([0-9.eE+-]+|NaN|[+-]?Inf)\s*tokens/s$", text.strip())
    if not m:
        raise RunRejected(f"{name} {text[:40]!r} is not a rate", "wrong_type")
    return finite(m.group(1), name, hi=hi, lo_open=True)
