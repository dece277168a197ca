"""The raw payload of the `runs` source: one received file wrapped with what came beside it.

    {"format": "benchwh.intake/1", "kind": "runfile" | "llama-bench-json" | ... ,
     "name": "<original file name>", "file_sha256": "<sha256 of the file bytes>",
     "meta": {...sidecar <file>.meta.json merged with CLI flags...},
     "trusted_keys": [{"keyid", "public_key", "contributor"}],   # runfiles only
     "content": "<the file's text>"}            # or "content_b64" when it is not UTF-8

Parsing a wrapper is pure, so replaying the raw store gives the same rows. Trust is decided at
landing time: the trusted keys that matched a run file's signatures when it was added are
stored in its wrapper, so a later change of trusted_keys.json does not rewrite history. A file
added before its key was trusted stays `unverified` (adding it again is a duplicate).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
from datetime import datetime

from ingest.measure.machine import CPU_ONLY
from ingest.sources.runs import dsse, registry
from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.model import ParsedRun, Sample, check_run, finite
from ingest.sources.runs.payload import (MAX_GB, MAX_WATTS, check_name_text, check_not_future,
                                         parse_rfc3339_utc, validate_payload)
from ingest.sources.runs.textutil import decode_text, json_values

FORMAT = "benchwh.intake/1"
MAX_FILE_BYTES = 10 * 1024 * 1024

# sidecar / CLI metadata a tool output may lack; anything else in a sidecar is refused
META_STR = ("gpu", "cpu", "os", "country", "engine", "engine_version", "backend", "model", "quant", "repo",
            "protocol", "created_at", "measured_at")
META_NUM = {"gpu_count": (1, 1024, True), "gpu_memory_gb": (0, MAX_GB, False),
            "ram_gb": (0, MAX_GB, False), "avg_watts": (0, MAX_WATTS, False)}


def validate_meta(meta: dict, where: str = "meta") -> dict:
    if not isinstance(meta, dict):
        raise RunRejected(f"{where} is not a JSON object", "bad_meta")
    unknown = sorted(set(meta) - set(META_STR) - set(META_NUM))
    if unknown:
        raise RunRejected(f"{where}: unknown field {unknown[0][:40]!r} (known: "
                          f"{', '.join(sorted(META_STR + tuple(META_NUM)))})", "bad_meta")
    out = {}
    for k, v in meta.items():
        if v is None:
            continue
        if k in META_STR:
            if not isinstance(v, str):
                raise RunRejected(f"{where}.{k} is not a short one-line string", "bad_meta")
            check_name_text(v, f"{where}.{k}")  # the one rule for names (payload.check_name_text)
            if k == "country" and not (len(v) == 2 and v.isascii() and v.isalpha() and v.isupper()):
                raise RunRejected(f"{where}.country {v!r} is not an ISO 3166 alpha-2 code", "bad_meta")
            if k in ("created_at", "measured_at"):
                parse_rfc3339_utc(v, f"{where}.{k}")
            out[k] = v
        else:
            lo, hi, integer = META_NUM[k]
            out[k] = finite(v, f"{where}.{k}", lo=lo, hi=hi, integer=integer, lo_open=not integer)
    return out


def detect_kind(text: str) -> tuple[str, list | None]:
    """The format of a received file, from its content (never from its name)."""
    stripped = text.lstrip()
    if stripped.startswith("{") and '"payloadType"' in text[:100_000] and '"signatures"' in text:
        return "runfile", None
    try:
        _, kind = registry.choose(text)
    except RunRejected:
        values = json_values(text)
        if values and isinstance(values[0], dict) and "schema" in values[0] and "samples" in values[0]:
            raise RunRejected("an unsigned run payload: sign it first (benchwh runs sign)", "unsigned") from None
        raise
    return kind, None


def make_intake(body: bytes, name: str, meta: dict | None = None,
                trusted_keys: list[dsse.TrustedKey] = ()) -> tuple[bytes, str]:
    """Wrap a received file. Returns (wrapper bytes, kind); kind "unknown" when undetectable.

    Never raises for bad content: the wrapper of a bad file is stored too and its parse
    rejects it with the reason (so the quarantine is rebuilt from raw like everything else).
    """
    doc = {"format": FORMAT, "name": name[-300:], "file_sha256": hashlib.sha256(body).hexdigest(),
           "meta": meta or {}, "trusted_keys": []}
    try:
        text = body.decode("utf-8")
        doc["content"] = text
    except UnicodeDecodeError:
        doc["content_b64"] = base64.b64encode(body).decode("ascii")
        text = None
    kind = "unknown"
    if text is not None and len(body) <= MAX_FILE_BYTES:
        try:
            kind, _ = detect_kind(text)
        except RunRejected:
            kind = "unknown"
    doc["kind"] = kind
    if kind == "runfile":
        doc["trusted_keys"] = _keys_for(text, trusted_keys)
    return json.dumps(doc, sort_keys=True, ensure_ascii=False).encode("utf-8"), kind


def _keys_for(envelope_text: str, trusted_keys) -> list[dict]:
    try:
        env = json.loads(envelope_text)
        ids = {str(s.get("keyid", "")).lower() for s in env.get("signatures", []) if isinstance(s, dict)}
    except (ValueError, AttributeError, TypeError):
        ids = set()
    keys = [k for k in trusted_keys if k.keyid in ids or "" in ids]
    return [{"keyid": k.keyid, "public_key": base64.b64encode(k.public_key).decode("ascii"),
             "contributor": k.contributor} for k in keys]


def read_intake(wrapper: bytes) -> dict:
    try:
        doc = json.loads(wrapper.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise RunRejected("raw payload is not a benchwh intake wrapper", "malformed_payload") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RunRejected("raw payload is not a benchwh intake wrapper", "malformed_payload")
    return doc


def content_bytes(doc: dict) -> bytes:
    if "content" in doc:
        return doc["content"].encode("utf-8")
    try:
        return base64.b64decode(doc.get("content_b64", ""), validate=True)
    except (binascii.Error, ValueError):
        raise RunRejected("raw payload content is not base64", "malformed_payload") from None


def parse_intake(wrapper: bytes, received_at: datetime) -> tuple[dict, list[ParsedRun]]:
    """Pure: a wrapper (+ when it was received) -> its runs, or RunRejected with the reason."""
    doc = read_intake(wrapper)
    body = content_bytes(doc)
    if len(body) > MAX_FILE_BYTES:
        raise RunRejected(f"file larger than {MAX_FILE_BYTES // (1024 * 1024)} MB", "too_large")
    text = decode_text(body, "file")
    if "\x00" in text:
        raise RunRejected("file contains NUL bytes (binary, not a text output)", "malformed_payload")
    kind, values = detect_kind(text)
    meta = validate_meta(doc.get("meta") or {}, "meta")
    default_time = received_at
    stated = meta.get("measured_at") or meta.get("created_at")  # --measured-at (--created-at: its old name)
    measured_at = None
    if stated:
        measured_at = default_time = parse_rfc3339_utc(stated, "meta.measured_at")
        check_not_future(default_time, received_at, "meta.measured_at")
    if kind == "runfile":
        runs = [_runfile(body, doc, received_at)]
    else:
        runs = registry.parser_for(kind).parse(text, kind, default_time)
        for run in runs:
            _apply_meta(run, meta)
            if run.measured_at is None and measured_at is not None:
                run.measured_at = measured_at
    for run in runs:
        check_run(run, received_at)
    return doc, runs


def _apply_meta(run: ParsedRun, meta: dict) -> None:
    """What the person said about the machine wins over what the tool guessed."""
    mapping = {"gpu": "gpu", "cpu": "cpu", "os": "os", "country": "country", "gpu_count": "gpu_count",
               "gpu_memory_gb": "gpu_memory_gb", "ram_gb": "ram_gb", "engine": "engine_name",
               "engine_version": "engine_version", "backend": "engine_backend", "model": "model_name",
               "quant": "model_quant", "repo": "model_repo", "protocol": "protocol_name"}
    on_cpu = run.gpu == CPU_ONLY
    for key, attr in mapping.items():
        if meta.get(key) is not None:
            if key in ("gpu", "gpu_count", "gpu_memory_gb") and on_cpu:
                continue  # a run the file shows on the CPU stays the CPU's, whatever GPU the machine has
            setattr(run, attr, meta[key])
    if meta.get("backend") is not None:
        run.config.backend = meta["backend"]
    if meta.get("avg_watts") is not None and run.power_avg_watts is None:
        run.power_method, run.power_avg_watts = "sensor", meta["avg_watts"]


def _runfile(body: bytes, doc: dict, received_at: datetime) -> ParsedRun:
    try:
        keys = dsse.parse_trusted_keys({"keys": doc.get("trusted_keys") or []})
    except ValueError as exc:
        raise RunRejected(f"stored trusted key invalid: {exc}", "malformed_payload") from None
    verified = dsse.verify_envelope(body, keys)
    p = validate_payload(verified.payload_bytes, received_at)
    m, e, md, pr = p["machine"], p["engine"], p["model"], p["protocol"]
    run = ParsedRun(
        source="runfile", source_run_id=p["submission_id"], submission_id=p["submission_id"],
        created_at=parse_rfc3339_utc(p["created_at"], "created_at"),
        gpu=m["gpu"], gpu_count=m["gpu_count"], gpu_memory_gb=m["gpu_memory_gb"], cpu=m["cpu"],
        ram_gb=m["ram_gb"], os=m["os"], country=m["country"],
        engine_name=e["name"], engine_version=e["version"], engine_backend=e["backend"],
        model_name=md["name"], model_repo=md["repo"], model_file=md["file"], model_quant=md["quant"],
        model_file_size_bytes=md["file_size_bytes"], model_sha256=md["sha256"],
        protocol_name=pr["name"], protocol_prompt_tokens=pr["prompt_tokens"],
        protocol_gen_tokens=pr["gen_tokens"], protocol_sampling=pr["sampling"],
        protocol_repetitions=pr["repetitions"] or len(p["samples"]),
        trust=verified.trust, keyid=verified.keyid, contributor=verified.contributor,
        context_recall=p["context_recall"], capabilities=p["capabilities"],
    )
    run.model_params = md["params"]
    vouched = p["source_file"] is not None
    if vouched:
        run.protocol_repetitions = pr["repetitions"]
    # a run file's created_at is when benchwh bench ran it; a vouched tool output's is when it was
    # signed, so its measurement time is only what the tool output said (else null)
    run.measured_at = p["measured_at"] if vouched else run.created_at
    run.config.backend = e["backend"]
    if p["config"]:
        for name, value in p["config"].items():
            setattr(run.config, name, value)
    run.extra_fields = p["extra_fields"]
    if vouched:
        run.source_file = p["source_file"]
    if p["context_recall_stopped"]:
        run.recall_stop_reason = p["context_recall_stopped"]["reason"]
        run.recall_stop_at_tokens = p["context_recall_stopped"]["at_tokens"]
    if p["power"]:
        run.power_method = p["power"]["method"]
        run.power_avg_watts = p["power"]["avg_watts"]
        run.power_energy_j = p["power"]["energy_j"]
    if p["memory"]:
        run.memory_peak_bytes = p["memory"]["peak_bytes"]
    for i, s in enumerate(p["samples"]):
        sample = Sample(
            test_name=pr["name"], test_index=0, sample_index=i,
            n_prompt=s["prompt_tokens"] if s["prompt_tokens"] is not None else pr["prompt_tokens"],
            n_gen=s["gen_tokens"] if s["gen_tokens"] is not None else pr["gen_tokens"],
            ttft_ms=s["ttft_ms"], prompt_tps=s["prompt_tps"], gen_tps=s["gen_tps"],
            turn_time_ms=s["turn_time_ms"], measured_at=run.created_at,
        )
        if vouched:
            # what the tool output's parser read, as signed (vouch.py); its time or none
            sample.measured_at = None
            for name in VOUCHED_SAMPLE_FIELDS:
                if name in s:
                    setattr(sample, name, s[name])
        run.samples.append(sample)
    return run


VOUCHED_SAMPLE_FIELDS = ("test_name", "test_index", "sample_index", "n_depth", "measured_at", "is_test_mean",
                         "power_w", "energy_j", "peak_memory_bytes", "test_key", "load_duration_ms",
                         "is_turn_time_derived", "throughput_tps")
