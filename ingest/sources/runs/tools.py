"""Ollama, llama-server and vLLM outputs (each pure: text in, ParsedRun out).

- Ollama: final API responses (`/api/generate|chat` with `"done": true`; durations in ns), one
  JSON object or one per line (each a repetition), and `ollama run --verbose` text blocks with
  Go durations (`2m43.589s`, `97.885315ms`, `850µs`).
- llama-server: responses carrying `timings` (prompt_n, prompt_ms, predicted_n, predicted_ms, ...).
- vLLM: `vllm bench serve --save-result` JSON; per-request samples when the detailed lists
  (ttfts, itls, output_lens) are present, else one sample from the medians.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone

from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.model import ParsedRun, Sample, canonical_hash, finite, per_second
from ingest.sources.runs.payload import MAX_GEN_TPS, MAX_MS, MAX_PROMPT_TPS, MAX_TOKENS
from ingest.sources.runs.textutil import go_duration_ms, parse_any_time, utc_from_unix

MAX_REQUESTS = 100_000
NS_MAX = MAX_MS * 1e6


def detect(text: str, values: list | None) -> str | None:
    """ollama | ollama-verbose | llama-server | vllm, or None."""
    if re.search(r"^\s*eval rate:\s", text, re.M) and re.search(r"^\s*eval count:\s", text, re.M):
        return "ollama-verbose"
    if not values:
        return None
    objs = [v for v in values if isinstance(v, dict)]
    if not objs:
        return None
    if any(isinstance(v.get("timings"), dict) for v in objs):
        return "llama-server"
    if any(v.get("done") is True and "eval_count" in v for v in objs):
        return "ollama"
    first = objs[0]
    if ("completed" in first and "duration" in first
            and any(k in first for k in ("median_ttft_ms", "mean_ttft_ms", "output_throughput"))):
        return "vllm"
    return None


def _s(value, name: str, max_len: int = 500) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        value = str(value)
    if len(value) > max_len:
        raise RunRejected(f"{name} is longer than {max_len} characters", "too_long")
    return value


def _required(value, name: str, **limits):
    out = finite(value, name, **limits)
    if out is None:
        raise RunRejected(f"{name} is missing", "missing_field")
    return out


# ---- Ollama ------------------------------------------------------------------------------
def parse_ollama(values: list, default_time: datetime) -> list[ParsedRun]:
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
        n_gen = _required(v["eval_count"], f"{where} eval_count", hi=MAX_TOKENS, integer=True)
        eval_ns = _required(v["eval_duration"], f"{where} eval_duration", hi=NS_MAX, lo_open=True)
        n_prompt = finite(v.get("prompt_eval_count"), f"{where} prompt_eval_count", hi=MAX_TOKENS, integer=True)
        prompt_ns = finite(v.get("prompt_eval_duration"), f"{where} prompt_eval_duration", hi=NS_MAX)
        total_ns = finite(v.get("total_duration"), f"{where} total_duration", hi=NS_MAX)
        if total_ns is not None and total_ns < eval_ns:
            raise RunRejected(f"{where} total_duration is shorter than eval_duration", "impossible_value")
        s = Sample(test_name="", test_index=0, sample_index=i, n_prompt=n_prompt, n_gen=n_gen,
                   gen_tps=per_second(n_gen, eval_ns / 1e9, f"{where} eval"),
                   prompt_tps=per_second(n_prompt, prompt_ns / 1e9 if prompt_ns else None, f"{where} prompt eval"),
                   ttft_ms=(total_ns - eval_ns) / 1e6 if total_ns is not None else None,
                   turn_time_ms=total_ns / 1e6 if total_ns is not None else None)
        if v.get("created_at"):
            s.measured_at = parse_any_time(str(v["created_at"]), f"{where} created_at")
            times.append(s.measured_at)
        keys.append({k: v.get(k) for k in ("created_at", "eval_count", "eval_duration",
                                            "prompt_eval_count", "prompt_eval_duration", "total_duration")})
        samples.append(s)
    _name_tests(samples)
    run = ParsedRun(source="ollama", source_run_id=canonical_hash(keys),
                    created_at=min(times) if times else default_time, engine_name="ollama",
                    model_name=_s(finals[0].get("model"), "model"), protocol_name="ollama-api",
                    protocol_repetitions=len(samples), samples=samples)
    return [run]


_VERBOSE = {
    "total duration": "total", "load duration": "load", "prompt eval count": "prompt_n",
    "prompt eval duration": "prompt_d", "prompt eval rate": "prompt_rate", "eval count": "gen_n",
    "eval duration": "gen_d", "eval rate": "gen_rate",
}


def parse_ollama_verbose(text: str, default_time: datetime) -> list[ParsedRun]:
    blocks, current = [], {}
    for line in text.splitlines():
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
        gen_tps = (per_second(n_gen, gen_ms / 1000, f"{where} eval") if gen_ms is not None
                   else _rate(b.get("gen_rate"), f"{where} eval rate", MAX_GEN_TPS))
        # a cached prompt can take "0s": no prompt rate then, rather than a rejection
        prompt_tps = (per_second(n_prompt, prompt_ms / 1000, f"{where} prompt eval") if prompt_ms
                      else _rate(b.get("prompt_rate"), f"{where} prompt eval rate", MAX_PROMPT_TPS)
                      if prompt_ms is None else None)
        if total_ms is not None and gen_ms is not None and total_ms < gen_ms:
            raise RunRejected(f"{where} total duration is shorter than eval duration", "impossible_value")
        samples.append(Sample(
            test_name="", test_index=0, sample_index=i, n_prompt=n_prompt, n_gen=n_gen,
            gen_tps=gen_tps, prompt_tps=prompt_tps,
            ttft_ms=(total_ms - gen_ms) if total_ms is not None and gen_ms is not None else None,
            turn_time_ms=total_ms))
    _name_tests(samples)
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


def _name_tests(samples: list[Sample]) -> None:
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


# ---- llama-server ------------------------------------------------------------------------
def parse_llama_server(values: list, default_time: datetime) -> list[ParsedRun]:
    rows = [v for v in values if isinstance(v, dict) and isinstance(v.get("timings"), dict)]
    if len(rows) > MAX_REQUESTS:
        raise RunRejected(f"more than {MAX_REQUESTS} responses", "too_many")
    samples, times, keys = [], [], []
    model = None
    for i, v in enumerate(rows):
        t = v["timings"]
        where = f"response {i} timings"
        for k in ("predicted_n", "predicted_ms"):
            if t.get(k) is None:
                raise RunRejected(f"{where} lacks {k}", "missing_field")
        n_gen = _required(t["predicted_n"], f"{where}.predicted_n", hi=MAX_TOKENS, integer=True)
        gen_ms = _required(t["predicted_ms"], f"{where}.predicted_ms", hi=MAX_MS)
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
        raise RunRejected("no llama-server `timings` found", "no_samples")
    _name_tests(samples)
    model = _s(model, "model")
    model_file = re.split(r"[\\/]", model)[-1] if model and model.lower().endswith(".gguf") else None
    return [ParsedRun(source="llama-server", source_run_id=canonical_hash(keys),
                      created_at=min(times) if times else default_time, engine_name="llama.cpp",
                      engine_backend=None, model_name=model, model_file=model_file,
                      protocol_name="llama-server", protocol_repetitions=len(samples), samples=samples)]


# ---- vLLM --------------------------------------------------------------------------------
def parse_vllm(values: list, default_time: datetime) -> list[ParsedRun]:
    if len(values) != 1 or not isinstance(values[0], dict):
        raise RunRejected("a vLLM --save-result file holds one JSON object", "malformed_payload")
    r = values[0]
    created = default_time
    if isinstance(r.get("date"), str):
        try:  # vLLM writes "%Y%m%d-%H%M%S" (the benchmark host's clock, taken as UTC)
            created = datetime.strptime(r["date"], "%Y%m%d-%H%M%S").replace(tzinfo=timezone.utc)
        except ValueError:
            raise RunRejected(f"date {r['date'][:40]!r} is not %Y%m%d-%H%M%S", "bad_timestamp") from None
    completed = finite(r.get("completed"), "completed", hi=MAX_REQUESTS, integer=True)
    if not completed:
        raise RunRejected("vLLM result has no completed requests", "no_samples")
    concurrency = r.get("max_concurrency")
    samples = []
    ttfts, itls, outs, ins = r.get("ttfts"), r.get("itls"), r.get("output_lens"), r.get("input_lens")
    errors = r.get("errors") or []
    detailed = all(isinstance(x, list) for x in (ttfts, itls, outs, ins))
    if detailed:
        n = len(ttfts)
        if not (len(itls) == len(outs) == len(ins) == n) or n > MAX_REQUESTS:
            raise RunRejected("vLLM detailed lists differ in length", "inconsistent")
        for i in range(n):
            if isinstance(errors, list) and i < len(errors) and errors[i]:
                continue  # a failed request: no timing to keep
            where = f"request {i}"
            out_n = _required(outs[i], f"{where} output_len", hi=MAX_TOKENS, integer=True)
            in_n = _required(ins[i], f"{where} input_len", hi=MAX_TOKENS, integer=True)
            ttft_s = _required(ttfts[i], f"{where} ttft", hi=MAX_MS / 1000)
            if not isinstance(itls[i], list):
                raise RunRejected(f"{where} itls is not a list", "wrong_type")
            decode_s = sum(_required(x, f"{where} itl", hi=MAX_MS / 1000) for x in itls[i])
            gen_tps = per_second(out_n - 1, decode_s, f"{where} decode") if out_n and out_n > 1 else None
            samples.append(Sample(test_name="", test_index=0, sample_index=i, n_prompt=in_n, n_gen=out_n,
                                  ttft_ms=ttft_s * 1000, gen_tps=gen_tps,
                                  prompt_tps=per_second(in_n, ttft_s, f"{where} prefill") if ttft_s else None,
                                  turn_time_ms=(ttft_s + decode_s) * 1000, measured_at=created))
        if not samples:
            raise RunRejected("every vLLM request failed", "no_samples")
    else:
        tpot = finite(r.get("median_tpot_ms", r.get("mean_tpot_ms")), "median_tpot_ms", hi=MAX_MS, lo_open=True)
        ttft = finite(r.get("median_ttft_ms", r.get("mean_ttft_ms")), "median_ttft_ms", hi=MAX_MS)
        e2el = finite(r.get("median_e2el_ms", r.get("mean_e2el_ms")), "median_e2el_ms", hi=MAX_MS)
        tin = finite(r.get("total_input_tokens"), "total_input_tokens", hi=MAX_TOKENS * 1000, integer=True)
        tout = finite(r.get("total_output_tokens"), "total_output_tokens", hi=MAX_TOKENS * 1000, integer=True)
        samples.append(Sample(test_name="", test_index=0, sample_index=0,
                              n_prompt=round(tin / completed) if tin is not None else None,
                              n_gen=round(tout / completed) if tout is not None else None,
                              ttft_ms=ttft, gen_tps=1000.0 / tpot if tpot else None,
                              turn_time_ms=e2el, is_test_mean=True, measured_at=created))
    # one test per run: the request shapes of a serving benchmark vary by request
    mean_in = round(sum(s.n_prompt or 0 for s in samples) / len(samples))
    mean_out = round(sum(s.n_gen or 0 for s in samples) / len(samples))
    name = f"serve pp{mean_in}+tg{mean_out} c{concurrency if concurrency else 'inf'}"
    for i, s in enumerate(samples):
        s.test_name, s.sample_index = name, i
    model = _s(r.get("model_id"), "model_id")
    key_fields = {k: r.get(k) for k in sorted(r) if k not in ("generated_texts",)}
    return [ParsedRun(source="vllm", source_run_id=canonical_hash(key_fields), created_at=created,
                      engine_name="vllm", engine_backend=_s(r.get("backend"), "backend"),
                      model_name=model, model_repo=model if model and "/" in model else None,
                      protocol_name=name, protocol_prompt_tokens=mean_in, protocol_gen_tokens=mean_out,
                      protocol_repetitions=len(samples), samples=samples)]
