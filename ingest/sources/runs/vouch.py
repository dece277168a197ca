"""Vouching for a tool output: `benchwh runs add FILE --key KEY` (issue 52 item 7).

A tool output (anything `registry.PARSERS` takes) is parsed exactly as `runs add` parses it
(intake.py, with its sidecar and flags), and each run it gives becomes a `benchwh.run/1` payload
(DESIGN §6) signed into a DSSE envelope with `dsse.sign_payload`, the one signer `runs sign` and
`benchwh bench` use. The payload keeps what the parser read (test names, configuration, the
file's own times or none) and names the file it came from:

    "source_file": {"name", "sha256": <sha256 of the file's exact bytes>, "kind", "source",
                    "source_run_id"}

Its `created_at` is when it was signed; `measured_at` is what the file said (llama-bench
`test_time`, vLLM `date`, Ollama `created_at`, `--measured-at`), absent otherwise, and a
vouched run's measurement time is never its created_at (intake._runfile).

The envelopes, not the tool output, are what `runs add` stores in `raw/runs/` and lands, so a
rebuild from raw gives the same rows; trust is decided as for every run file (`signed` when the
key is in trusted_keys.json, else `unverified`). Pure but for the signature's key: the same
output, key and time give the same bytes (Ed25519 signatures are deterministic).
"""
from __future__ import annotations

import uuid
from datetime import datetime

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ingest.sources.runs import dsse
from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.intake import make_intake, parse_intake
from ingest.sources.runs.model import CONFIG_FIELDS, ParsedRun
from ingest.sources.runs.payload import SCHEMA, _drop_none, payload_bytes, validate_payload

# submission ids of vouched runs: uuid5(this, keyid + tool + the tool's run id), so vouching one
# output twice with one key names the same submission (a duplicate, never a second run)
VOUCH_NAMESPACE = uuid.UUID("6d1c6a52-3f0e-5b8e-9a57-0b1e2c3d4e5f")


def _iso(ts: datetime | None) -> str | None:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if ts is not None else None


def payload_for(run: ParsedRun, doc: dict, keyid: str, signed_at: datetime) -> dict:
    """The benchwh.run/1 payload of one parsed run of a tool output (doc: its intake wrapper)."""
    if run.source == "runfile":
        raise RunRejected("already a signed run file: add it without --key", "already_signed")
    config = {name: getattr(run.config, name) for name in CONFIG_FIELDS}
    samples = []
    for s in run.samples:
        samples.append({
            "test_name": s.test_name, "test_index": s.test_index, "sample_index": s.sample_index,
            "prompt_tokens": s.n_prompt, "gen_tokens": s.n_gen, "n_depth": s.n_depth,
            "ttft_ms": s.ttft_ms, "prompt_tps": s.prompt_tps, "gen_tps": s.gen_tps,
            "turn_time_ms": s.turn_time_ms, "is_test_mean": s.is_test_mean, "power_w": s.power_w,
            "energy_j": s.energy_j, "peak_memory_bytes": s.peak_memory_bytes,
            "measured_at": _iso(s.measured_at), "test_key": s.test_key,
            "load_duration_ms": s.load_duration_ms, "is_turn_time_derived": s.is_turn_time_derived,
            "throughput_tps": s.throughput_tps,
        })
    power = None
    if run.power_avg_watts is not None or run.power_energy_j is not None:
        power = {"method": run.power_method or "sensor", "avg_watts": run.power_avg_watts,
                 "energy_j": run.power_energy_j}
    body = _drop_none({
        "schema": SCHEMA,
        "submission_id": str(uuid.uuid5(VOUCH_NAMESPACE, f"{keyid}|{run.source}|{run.source_run_id}")),
        "created_at": _iso(signed_at),
        "measured_at": _iso(run.measured_at),
        "source_file": {"name": doc.get("name") or "", "sha256": doc["file_sha256"], "kind": doc["kind"],
                        "source": run.source, "source_run_id": run.source_run_id},
        "machine": {"gpu": run.gpu, "gpu_count": run.gpu_count, "gpu_memory_gb": run.gpu_memory_gb,
                    "cpu": run.cpu, "ram_gb": run.ram_gb, "os": run.os, "country": run.country},
        "engine": {"name": run.engine_name, "version": run.engine_version, "backend": run.engine_backend},
        "model": {"name": run.model_name, "repo": run.model_repo, "file": run.model_file,
                  "quant": run.model_quant, "file_size_bytes": run.model_file_size_bytes,
                  "sha256": run.model_sha256, "params": run.model_params},
        "protocol": {"name": run.protocol_name, "prompt_tokens": run.protocol_prompt_tokens,
                     "gen_tokens": run.protocol_gen_tokens, "sampling": run.protocol_sampling,
                     "repetitions": run.protocol_repetitions},
        "samples": samples,
        "power": power,
        "memory": {"peak_bytes": run.memory_peak_bytes} if run.memory_peak_bytes else None,
        "config": config,
        "extra_fields": run.extra_fields,
    })
    # booleans that are False are kept (_drop_none drops only None); an empty name is not sent
    if not body["source_file"]["name"]:
        body["source_file"]["name"] = "(unnamed)"
    validate_payload(body, signed_at)
    return body


def vouch(body: bytes, name: str, meta: dict, key: Ed25519PrivateKey, signed_at: datetime) -> list[bytes]:
    """Signed run files (envelope bytes), one per run the tool output gives, or RunRejected with
    the reason `runs add` would give for the file (unknown format, missing context, ...)."""
    wrapper, kind = make_intake(body, name, meta)
    if kind == "runfile":
        raise RunRejected("already a signed run file: add it without --key", "already_signed")
    doc, runs = parse_intake(wrapper, signed_at)
    keyid = dsse.keyid_for(dsse.public_key_of(key))
    out = []
    for run in runs:
        envelope = dsse.sign_payload(payload_bytes(payload_for(run, doc, keyid, signed_at)), key)
        out.append(payload_bytes(envelope))
    return out
