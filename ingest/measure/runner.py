"""`benchwh bench`: measure a served model, describe the machine, sign and write the run file.

Nothing is written unless the whole run succeeded and its payload validated: a failed run
leaves no file behind for someone to submit by mistake.
"""
from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ingest.files import write_atomically
from ingest.measure import machine as machine_probe
from ingest.measure import protocols, text
from ingest.measure import recall as recall_walk
from ingest.measure.client import BenchError, ChatClient, UsageError
from ingest.measure.measure import Sample, run_repetition
from ingest.measure.power import PowerReading, PowerSampler
from ingest.measure.stats import median_interval


@dataclass
class BenchOptions:
    endpoint: str
    model: str
    key: Path | None = None
    country: str | None = None
    out: Path | None = None
    protocol: str = "gen-1k"
    recall: bool = False
    warmup: int | None = None  # None: the protocol's count
    repetitions: int | None = None
    gen_tokens: int | None = None
    api_key: str | None = None
    connect_timeout: float = 5.0
    read_timeout: float = 300.0
    ignore_eos: bool = True
    # what the server may not say about itself
    engine: str | None = None
    engine_version: str | None = None
    backend: str | None = None
    model_file: str | None = None
    model_repo: str | None = None
    quant: str | None = None
    context_limit: int | None = None
    recall_sizes: tuple[int, ...] = recall_walk.SIZES
    power: bool = True


@dataclass
class BenchResult:
    payload: dict
    envelope: dict
    path: Path
    samples: list[Sample]
    walk: recall_walk.RecallWalk | None = None
    power: PowerReading | None = None
    summary: list[str] = field(default_factory=list)


_COUNTRY = re.compile(r"^[A-Za-z]{2}$")


def check_options(opts: BenchOptions) -> None:
    """User mistakes found before anything is measured."""
    if opts.country is not None and not _COUNTRY.fullmatch(opts.country):
        raise UsageError(f"--country {opts.country!r}: expected an ISO 3166 alpha-2 code such as DE or US")
    if opts.key is None:
        raise UsageError("--key is required: the run file is signed (create a key with `benchwh keys generate`)")
    if not Path(opts.key).is_file():
        raise UsageError(f"--key {opts.key}: no such file (create one with `benchwh keys generate`)")
    try:
        protocols.get(opts.protocol)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    for name, flag, least in (("warmup", "--warmup", 0), ("repetitions", "--repetitions", 1),
                              ("gen_tokens", "--max-tokens", 2)):
        value = getattr(opts, name)
        if value is not None and value < least:
            raise UsageError(f"{flag} {value}: must be at least {least}")
    if opts.out is not None and Path(opts.out).is_dir():
        raise UsageError(f"--out {opts.out}: is a directory, expected a file name")


def _load_key(path: Path):
    from ingest.sources.runs.dsse import load_private_key
    try:
        return load_private_key(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"--key {path}: {exc.strerror}") from None


def _fmt(sample: Sample) -> str:
    counted = "" if sample.token_counts == "usage" else " (counted from the stream)"
    if sample.timed_over == "turn":
        counted += " (tokens arrived in one burst: tok/s over the whole turn)"
    return (f"ttft {sample.ttft_ms:8.1f} ms  gen {sample.gen_tps:8.2f} tok/s  turn {sample.turn_time_ms:8.1f} ms"
            f"  tokens {sample.prompt_tokens}+{sample.gen_tokens}{counted}")


def summarise(samples: list[Sample]) -> list[str]:
    lines = []
    for label, attr, unit in (("gen tok/s", "gen_tps", ""), ("ttft", "ttft_ms", " ms"),
                              ("turn time", "turn_time_ms", " ms"), ("prompt tok/s", "prompt_tps", "")):
        iv = median_interval([getattr(s, attr) for s in samples])
        how = "95% interval by order statistics" if iv.method == "order-statistic" \
            else "min-max: too few repetitions for a 95% interval"
        lines.append(f"  {label:<13} median {iv.median:10.2f}{unit}  [{iv.low:.2f}, {iv.high:.2f}]"
                     f"  ({how}, n={iv.n})")
    return lines


def _payload_accepts(section: str, key: str) -> bool:
    """Whether the run-file schema has an optional field (lets us write it once it exists)."""
    from ingest.sources.runs import payload as schema
    return key in getattr(schema, section, set())


def _model_section(opts: BenchOptions, client: ChatClient) -> dict:
    model_file = opts.model_file or machine_probe.probe_model_file(client)
    file_name = os.path.basename(model_file) if model_file else None
    model = {"name": opts.model, "repo": opts.model_repo, "file": file_name,
             "quant": opts.quant or machine_probe.quant_from_file(file_name or opts.model)}
    return {k: v for k, v in model.items() if v}


def _engine_section(opts: BenchOptions, client: ChatClient, fingerprint: str | None) -> dict:
    found = machine_probe.probe_engine(client, fingerprint)
    engine = {"name": opts.engine or found.get("name") or "unknown",
              "version": opts.engine_version or found.get("version"),
              "backend": opts.backend}
    return {k: v for k, v in engine.items() if v}


def default_out(submission_id: str) -> Path:
    return Path(f"run-{submission_id}.json")


def run_bench(opts: BenchOptions, log: Callable[[str], None] = print) -> BenchResult:
    check_options(opts)
    private_key = _load_key(Path(opts.key))
    protocol = protocols.get(opts.protocol).with_counts(opts.warmup, opts.repetitions, opts.gen_tokens)
    submission_id = str(uuid.uuid4())
    extra = {"ignore_eos": True} if opts.ignore_eos else None
    client = ChatClient(opts.endpoint, opts.model, api_key=opts.api_key,
                        connect_timeout=opts.connect_timeout, read_timeout=opts.read_timeout)
    try:
        log(f"benchwh bench: {opts.model} at {client.url}, protocol {protocol.name} "
            f"({protocol.warmup} warm-up + {protocol.repetitions} measured, max_tokens {protocol.gen_tokens})")
        fingerprint = None
        for i in range(1, protocol.warmup + 1):
            sample, res = run_repetition(client, protocol, log, f"warm-up {i}/{protocol.warmup}", extra)
            fingerprint = res.system_fingerprint or fingerprint
            log(f"  warm-up {i}/{protocol.warmup}: {_fmt(sample)}")

        sampler = PowerSampler() if opts.power and PowerSampler.available() else None
        if sampler:
            sampler.start()
        samples: list[Sample] = []
        try:
            for i in range(1, protocol.repetitions + 1):
                label = f"rep {i}/{protocol.repetitions}"
                sample, res = run_repetition(client, protocol, log, label, extra)
                fingerprint = res.system_fingerprint or fingerprint
                samples.append(sample)
                log(f"  {label}: {_fmt(sample)}")
        finally:
            power = sampler.stop() if sampler else None
        peak_memory = sampler.peak_memory_bytes if sampler else None

        walk = None
        if opts.recall:
            limit = opts.context_limit or recall_walk.context_limit(client)
            words = sum(text.word_count(m["content"]) for m in protocol.messages())
            measured = [s.prompt_tokens / words for s in samples if s.token_counts == "usage"]
            ratio = measured[0] if measured else text.DEFAULT_TOKENS_PER_WORD
            log(f"context recall walk ({'context ' + str(limit) + ' tokens' if limit else 'context size not reported'}):")
            walk = recall_walk.walk(client, ratio, seed=uuid.UUID(submission_id).int % 2**32, limit=limit,
                               sizes=opts.recall_sizes, log=log)

        machine = machine_probe.probe_machine(opts.country.upper() if opts.country else None)
        engine = _engine_section(opts, client, fingerprint)
        model = _model_section(opts, client)
    finally:
        client.close()

    from ingest.sources.runs import dsse
    from ingest.sources.runs.errors import RunRejected
    from ingest.sources.runs.payload import build_payload, payload_bytes

    keep_marker = _payload_accepts("SAMPLE", "token_counts")
    sample_rows = [{k: v for k, v in s.as_payload().items() if k != "token_counts" or keep_marker}
                   for s in samples]
    recall_rows = recall_stopped = None
    if walk is not None:
        recall_rows = [{"context_tokens": r.context_tokens, "recalled": r.recalled} for r in walk.results]
        recall_stopped = walk.stopped()
    try:
        payload = build_payload(
            submission_id=submission_id, machine=machine, engine=engine, model=model,
            protocol={"name": protocol.name, "prompt_tokens": protocol.prompt_tokens,
                      "gen_tokens": protocol.gen_tokens, "sampling": protocol.sampling,
                      "repetitions": len(samples)},
            samples=sample_rows, power=power.as_payload() if power else None,
            memory={"peak_bytes": peak_memory} if peak_memory else None,
            context_recall=recall_rows, context_recall_stopped=recall_stopped)
    except RunRejected as exc:
        raise BenchError(f"the measured run does not validate, no file written: {exc}") from None
    envelope = dsse.sign_payload(payload_bytes(payload), private_key)
    path = Path(opts.out) if opts.out else default_out(submission_id)
    try:
        write_atomically(path, (json.dumps(envelope, indent=2) + "\n").encode())
    except OSError as exc:
        raise BenchError(f"cannot write {path}: {exc.strerror or exc}") from None

    summary = summarise(samples)
    log(f"summary over {len(samples)} measured repetitions:")
    for line in summary:
        log(line)
    if power:
        log(f"  power (nvidia-smi)  {power.avg_watts:.1f} W average, {power.energy_j:.1f} J "
            f"over {power.seconds:.1f} s")
    if peak_memory:
        log(f"  GPU memory in use   {peak_memory / 1024**3:.2f} GiB at most")
    if walk is not None:
        largest = walk.largest_recalled
        log(f"  context recall: largest recalled {largest if largest else 'none'}"
            + (f"; stopped at {walk.stopped_at}: {walk.stop_reason}" if walk.stopped_at else ""))
    log(f"wrote {path} (submission {submission_id}, signed by key {envelope['signatures'][0]['keyid'][:12]})")
    return BenchResult(payload, envelope, path, samples, walk, power, summary)
