"""vLLM benchmark outputs (each pure: text in, ParsedRun out).

- `vllm bench serve --save-result` JSON (and the older `benchmark_serving.py` one): per-request
  samples when the detailed lists (ttfts, itls, output_lens, input_lens) are there, else one
  sample from the medians. A list or JSONL of such results (a `bench sweep`) is one run per
  result: each has its own concurrency and request rate.
- `vllm bench throughput` JSON (elapsed_time, num_requests, total_num_tokens, tokens_per_second):
  the batch throughput of all requests together, landed as throughput_tps (no per-request speed).
- `vllm bench latency` JSON (avg_latency, latencies): one sample per iteration, its turn time.
- The console "Serving Benchmark Result" block(s) of a log, with the Namespace line or the
  `Maximum request concurrency` / `Traffic request rate` lines before each.

`backend` in these files is the benchmark client's API (openai, openai-chat, vllm): it lands as
client_api, never as the engine's compute backend. TPOT excludes the first token, so a derived
turn time is ttft + (n_gen - 1) x TPOT (flagged derived). `date` is the measurement time.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone

from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.model import ParsedRun, RunConfig, Sample, canonical_hash, finite, per_second, required, short_str
from ingest.sources.runs.payload import MAX_GEN_TPS, MAX_MS, MAX_PROMPT_TPS, MAX_TOKENS
from ingest.sources.runs.textutil import json_values, strip_ansi

MAX_REQUESTS = 100_000
_TTFT_KEYS = ("median_ttft_ms", "mean_ttft_ms", "ttfts")


def _kind_of(v: dict) -> str | None:
    if any(k in v for k in _TTFT_KEYS) and any(k in v for k in ("completed", "duration", "request_throughput",
                                                                 "output_throughput", "ttfts")):
        return "serve"
    if "elapsed_time" in v and "tokens_per_second" in v:
        return "throughput"
    if "avg_latency" in v and isinstance(v.get("latencies"), list):
        return "latency"
    return None


def sniff_json(text: str) -> tuple[str | None, str]:
    objs = [v for v in json_values(text) if isinstance(v, dict)]
    if objs and all(_kind_of(v) for v in objs):
        return "vllm", ""
    return None, "no serve (ttft + completed/duration), throughput (elapsed_time) or latency (avg_latency) result"


def parse_json(text: str, default_time: datetime) -> list[ParsedRun]:
    objs = [v for v in json_values(text) if isinstance(v, dict)]
    if len(objs) > 10_000:
        raise RunRejected("more than 10000 vLLM results in one file", "too_many")
    runs = []
    for r in objs:
        kind = _kind_of(r)
        if kind == "serve":
            runs.append(_serve(r, default_time))
        elif kind == "throughput":
            runs.append(_throughput(r, default_time))
        else:
            runs.append(_latency(r, default_time))
    return runs


def _date(r: dict) -> datetime | None:
    if not isinstance(r.get("date"), str):
        return None
    try:  # vLLM writes "%Y%m%d-%H%M%S" (the benchmark host's clock, taken as UTC)
        return datetime.strptime(r["date"], "%Y%m%d-%H%M%S").replace(tzinfo=timezone.utc)
    except ValueError:
        raise RunRejected(f"date {r['date'][:40]!r} is not %Y%m%d-%H%M%S", "bad_timestamp") from None


def _rate_text(value) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "inf" if value == float("inf") else f"{float(value):g}"
    return short_str(str(value).strip().lower(), "request_rate", 40)


def _concurrency(value) -> int | None:
    return finite(value, "max_concurrency", hi=1_000_000, integer=True) if value not in (None, "") else None


def _run(r: dict, samples: list[Sample], name: str, when: datetime | None, default_time: datetime,
         model: str | None, config: RunConfig, protocol: str) -> ParsedRun:
    for i, s in enumerate(samples):
        s.test_name, s.sample_index, s.measured_at = name, i, when
    mean_in = [s.n_prompt for s in samples if s.n_prompt is not None]
    mean_out = [s.n_gen for s in samples if s.n_gen is not None]
    key_fields = {k: r.get(k) for k in sorted(r) if k not in ("generated_texts",)}
    model = short_str(model, "model_id")
    is_file = bool(model and model.lower().endswith(".gguf"))
    return ParsedRun(source="vllm", source_run_id=canonical_hash(key_fields), created_at=when or default_time,
                     measured_at=when, engine_name="vllm", model_name=model,
                     model_repo=model if model and "/" in model and not is_file and not model.startswith("/") else None,
                     model_file=re.split(r"[\\/]", model)[-1] if is_file else None,
                     protocol_name=protocol,
                     protocol_prompt_tokens=round(sum(mean_in) / len(mean_in)) if mean_in else None,
                     protocol_gen_tokens=round(sum(mean_out) / len(mean_out)) if mean_out else None,
                     protocol_repetitions=len(samples), samples=samples, config=config)


def _serve_name(samples: list[Sample], concurrency: int | None) -> str:
    ins = [s.n_prompt or 0 for s in samples]
    outs = [s.n_gen or 0 for s in samples]
    return (f"serve pp{round(sum(ins) / len(ins))}+tg{round(sum(outs) / len(outs))} "
            f"c{concurrency if concurrency else 'inf'}")


def _aggregate_sample(n_done, tin, tout, ttft, tpot, e2el, throughput) -> Sample:
    n_prompt = round(tin / n_done) if tin is not None and n_done else None
    n_gen = round(tout / n_done) if tout is not None and n_done else None
    derived = e2el is None and ttft is not None and tpot is not None and n_gen
    return Sample(test_name="", test_index=0, sample_index=0, n_prompt=n_prompt, n_gen=n_gen, ttft_ms=ttft,
                  gen_tps=1000.0 / tpot if tpot else None,
                  # TPOT excludes the first token: n_gen - 1 tokens follow it
                  turn_time_ms=e2el if e2el is not None else (ttft + (n_gen - 1) * tpot if derived else None),
                  is_turn_time_derived=bool(derived), is_test_mean=True, throughput_tps=throughput)


def _serve(r: dict, default_time: datetime) -> ParsedRun:
    when = _date(r)
    completed = finite(r.get("completed"), "completed", hi=MAX_REQUESTS, integer=True)
    if completed == 0:
        raise RunRejected("vLLM result has no completed requests", "no_samples")
    concurrency = _concurrency(r.get("max_concurrency"))
    samples = []
    ttfts, itls, outs, ins = r.get("ttfts"), r.get("itls"), r.get("output_lens"), r.get("input_lens")
    errors = r.get("errors") or []
    if all(isinstance(x, list) for x in (ttfts, itls, outs, ins)):
        n = len(ttfts)
        if not (len(itls) == len(outs) == len(ins) == n) or n > MAX_REQUESTS:
            raise RunRejected("vLLM detailed lists differ in length", "inconsistent")
        for i in range(n):
            if isinstance(errors, list) and i < len(errors) and errors[i]:
                continue  # a failed request: no timing to keep
            where = f"request {i}"
            out_n = required(outs[i], f"{where} output_len", hi=MAX_TOKENS, integer=True)
            in_n = required(ins[i], f"{where} input_len", hi=MAX_TOKENS, integer=True)
            ttft_s = required(ttfts[i], f"{where} ttft", hi=MAX_MS / 1000)
            if not isinstance(itls[i], list):
                raise RunRejected(f"{where} itls is not a list", "wrong_type")
            decode_s = sum(required(x, f"{where} itl", hi=MAX_MS / 1000) for x in itls[i])
            gen_tps = per_second(out_n - 1, decode_s, f"{where} decode") if out_n and out_n > 1 else None
            samples.append(Sample(test_name="", test_index=0, sample_index=i, n_prompt=in_n, n_gen=out_n,
                                  ttft_ms=ttft_s * 1000, gen_tps=gen_tps,
                                  prompt_tps=per_second(in_n, ttft_s, f"{where} prefill") if ttft_s else None,
                                  turn_time_ms=(ttft_s + decode_s) * 1000))
        if not samples:
            raise RunRejected("every vLLM request failed", "no_samples")
    else:
        samples.append(_aggregate_sample(
            completed or finite(r.get("num_prompts"), "num_prompts", hi=MAX_REQUESTS, integer=True),
            finite(r.get("total_input_tokens"), "total_input_tokens", hi=MAX_TOKENS * 1000, integer=True),
            finite(r.get("total_output_tokens"), "total_output_tokens", hi=MAX_TOKENS * 1000, integer=True),
            finite(r.get("median_ttft_ms", r.get("mean_ttft_ms")), "median_ttft_ms", hi=MAX_MS),
            finite(r.get("median_tpot_ms", r.get("mean_tpot_ms")), "median_tpot_ms", hi=MAX_MS, lo_open=True),
            finite(r.get("median_e2el_ms", r.get("mean_e2el_ms")), "median_e2el_ms", hi=MAX_MS),
            finite(r.get("total_token_throughput"), "total_token_throughput", hi=MAX_PROMPT_TPS)))
    config = RunConfig(concurrency=concurrency, request_rate=_rate_text(r.get("request_rate")),
                       client_api=short_str(r.get("backend") or r.get("endpoint_type"), "backend"))
    name = _serve_name(samples, concurrency)
    return _run(r, samples, name, when, default_time, r.get("model_id") or r.get("model"), config, name)


def _throughput(r: dict, default_time: datetime) -> ParsedRun:
    required(r.get("elapsed_time"), "elapsed_time", hi=MAX_MS / 1000, lo_open=True)
    n = required(r.get("num_requests"), "num_requests", hi=MAX_REQUESTS * 100, integer=True)
    tokens = finite(r.get("total_num_tokens"), "total_num_tokens", hi=MAX_TOKENS * 1000, integer=True)
    tps = required(r.get("tokens_per_second"), "tokens_per_second", hi=MAX_PROMPT_TPS, lo_open=True)
    out_tokens = finite(r.get("total_output_tokens"), "total_output_tokens", hi=MAX_TOKENS * 1000, integer=True)
    s = Sample(test_name="", test_index=0, sample_index=0, is_test_mean=True, throughput_tps=tps,
               gen_tps=None, n_gen=round(out_tokens / n) if out_tokens else None)
    name = f"throughput n{n}" + (f" tokens{tokens}" if tokens else "")
    config = RunConfig(request_rate="inf")
    return _run(r, [s], name, _date(r), default_time, r.get("model") or r.get("model_id"), config,
                "vllm-throughput")


def _latency(r: dict, default_time: datetime) -> ParsedRun:
    latencies = r["latencies"]
    if not latencies or len(latencies) > MAX_REQUESTS:
        raise RunRejected("vLLM latency result has no latencies (or too many)", "no_samples")
    samples = [Sample(test_name="", test_index=0, sample_index=i,
                      turn_time_ms=required(v, f"latencies[{i}]", hi=MAX_MS / 1000, lo_open=True) * 1000)
               for i, v in enumerate(latencies)]
    return _run(r, samples, "latency", _date(r), default_time, r.get("model") or r.get("model_id"), RunConfig(),
                "vllm-latency")


# ---- the console block -------------------------------------------------------------------
_BLOCK_START = re.compile(r"=+ Serving Benchmark Result =+")
_FIELD = re.compile(r"^\s*(?:#\s*)?(?P<label>[A-Za-z][A-Za-z0-9 ()/.-]*?):\s+(?P<value>\S+)\s*$")
_NS_MODEL = re.compile(r"\bmodel='(?P<v>[^']+)'")
_NS_BACKEND = re.compile(r"\bbackend='(?P<v>[^']+)'")
_NS_CONCURRENCY = re.compile(r"\bmax_concurrency=(?P<v>\w+)")
_NS_RATE = re.compile(r"\brequest_rate=(?P<v>[\w.]+)")


_THROUGHPUT = re.compile(r"Throughput:\s*(?P<rps>[0-9.]+) requests/s,\s*(?P<tps>[0-9.]+) total tokens/s"
                         r"(?:,\s*(?P<out>[0-9.]+) output tokens/s)?")
_COMMAND = re.compile(r"(?:bench (?:serve|throughput)|benchmark_(?:serving|throughput)\.py)\b(?P<args>.*)$")


def sniff_console(text: str) -> tuple[str | None, str]:
    head = text[:5_000_000]
    if _BLOCK_START.search(head) or _THROUGHPUT.search(head):
        return "vllm-console", ""
    return None, "no `Serving Benchmark Result` block or `Throughput: ... requests/s` line"


def _flag(args: str, name: str) -> str | None:
    m = re.search(rf"--{name}[ =](\S+)", args)
    return m.group(1).strip("'\"") if m else None


def _logical_lines(text: str) -> list[str]:
    """Lines with shell continuations (`\\` at the end, `# ` comment prefixes) joined."""
    out: list[str] = []
    pending = ""
    for line in strip_ansi(text).splitlines():
        bare = re.sub(r"^\s*#\s?", "", line) if pending else line
        if bare.rstrip().endswith("\\"):
            pending += bare.rstrip()[:-1] + " "
            continue
        out.append(pending + bare)
        pending = ""
    if pending:
        out.append(pending)
    return out


def parse_console(text: str, default_time: datetime) -> list[ParsedRun]:
    context: dict = {}
    runs = []
    lines = _logical_lines(text)
    i = 0
    while i < len(lines):
        line = lines[i]
        if "Namespace(" in line:
            context = {}
            for key, pattern in (("model", _NS_MODEL), ("backend", _NS_BACKEND),
                                 ("max_concurrency", _NS_CONCURRENCY), ("request_rate", _NS_RATE)):
                m = pattern.search(line)
                if m:
                    context[key] = m.group("v")
        m = _COMMAND.search(line)
        if m and "--" in m.group("args"):
            args = m.group("args")  # a new command: what came before was another run's
            context = {k: v for k, v in (("model", _flag(args, "model")), ("backend", _flag(args, "backend")),
                                         ("max_concurrency", _flag(args, "max-concurrency")),
                                         ("request_rate", _flag(args, "request-rate")),
                                         ("num_prompts", _flag(args, "num-prompts"))) if v}
        m = re.search(r"Maximum request concurrency:\s*(\d+)", line)
        if m:
            context["max_concurrency"] = m.group(1)
        m = re.search(r"Traffic request rate:\s*([\w.]+)", line)
        if m:
            context["request_rate"] = m.group(1)
        m = _THROUGHPUT.search(line)
        if m:
            tail = "\n".join(lines[i + 1:i + 3])
            runs.append(_console_throughput(m, tail, dict(context), default_time))
        if not _BLOCK_START.search(line):
            i += 1
            continue
        fields: dict[str, str] = {}
        i += 1
        while i < len(lines) and not re.match(r"^\s*(?:#\s*)?={10,}\s*$", lines[i]):
            m = _FIELD.match(lines[i])
            if m:
                fields[m.group("label").strip()] = m.group("value")
            i += 1
        runs.append(_console_run(fields, dict(context), default_time))
        i += 1
    if not runs:
        raise RunRejected("no `Serving Benchmark Result` block", "no_samples")
    return runs


def _console_throughput(m: re.Match, tail: str, context: dict, default_time: datetime) -> ParsedRun:
    """`vllm bench throughput`'s console lines: the batch throughput of all requests together."""
    tps = finite(m.group("tps"), "total tokens/s", hi=MAX_PROMPT_TPS, lo_open=True)
    n = finite(context.get("num_prompts"), "--num-prompts", hi=MAX_REQUESTS * 100, integer=True)
    prompt = re.search(r"Total num prompt tokens:\s*(\d+)", tail)
    output = re.search(r"Total num output tokens:\s*(\d+)", tail)
    s = Sample(test_name="", test_index=0, sample_index=0, is_test_mean=True, throughput_tps=tps,
               n_prompt=round(int(prompt.group(1)) / n) if prompt and n else None,
               n_gen=round(int(output.group(1)) / n) if output and n else None)
    name = f"throughput n{n}" if n else "throughput"
    key = {"line": m.group(0), "tail": tail, "context": context}
    return _run(key, [s], name, None, default_time, context.get("model"), RunConfig(request_rate="inf"),
                "vllm-throughput")


def _num(fields: dict, label: str, hi: float, integer: bool = False):
    return finite(fields.get(label), label, hi=hi, integer=integer)


def _console_run(fields: dict, context: dict, default_time: datetime) -> ParsedRun:
    done = _num(fields, "Successful requests", MAX_REQUESTS, integer=True)
    if not done:
        raise RunRejected("vLLM result block has no successful requests", "no_samples")
    if fields.get("Backend"):
        context["backend"] = fields["Backend"]
    if fields.get("Maximum request concurrency"):
        context["max_concurrency"] = fields["Maximum request concurrency"]
    if fields.get("Traffic request rate"):
        context["request_rate"] = fields["Traffic request rate"]
    s = _aggregate_sample(
        done, _num(fields, "Total input tokens", MAX_TOKENS * 1000, integer=True),
        _num(fields, "Total generated tokens", MAX_TOKENS * 1000, integer=True),
        _num(fields, "Median TTFT (ms)", MAX_MS), finite(fields.get("Median TPOT (ms)"), "Median TPOT (ms)",
                                                          hi=MAX_MS, lo_open=True),
        _num(fields, "Median E2EL (ms)", MAX_MS),
        _num(fields, "Total Token throughput (tok/s)", MAX_PROMPT_TPS)
        or _num(fields, "Total token throughput (tok/s)", MAX_PROMPT_TPS))
    if s.gen_tps is not None:
        finite(s.gen_tps, "1000 / Median TPOT", hi=MAX_GEN_TPS)
    concurrency = _concurrency(context.get("max_concurrency")) if context.get("max_concurrency") not in (
        None, "None") else None
    config = RunConfig(concurrency=concurrency, request_rate=_rate_text(context.get("request_rate")),
                       client_api=short_str(context.get("backend"), "backend"))
    name = _serve_name([s], concurrency)
    key = {"fields": fields, "context": context}
    return _run(key, [s], name, None, default_time, context.get("model"), config, name)
