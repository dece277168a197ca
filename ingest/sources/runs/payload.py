"""The `benchwh.run/1` payload (DESIGN §6): strict validation and a builder.

Strict means: unknown fields, wrong types, NaN/inf, negative or physically impossible values
and timestamps in the future are refused with a one-line reason naming the field. Strings are
kept verbatim (a model called `'; DROP TABLE runs; --` is data, nothing else).
"""
from __future__ import annotations

import json
import math
import re
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

from ingest.sources.runs.errors import RunRejected

SCHEMA = "benchwh.run/1"
# Physical limits: beyond these a value is a bug or a lie, not a measurement.
MAX_GEN_TPS = 100_000.0
MAX_PROMPT_TPS = 10_000_000.0
MAX_MS = 7 * 24 * 3600 * 1000.0  # a week
MAX_TOKENS = 100_000_000
MAX_SAMPLES = 10_000
MAX_LIST = 1_000
MAX_WATTS = 100_000.0
MAX_ENERGY_J = 1e12
MAX_BYTES = 10**15
MAX_GPU_COUNT = 1024
MAX_GB = 100_000.0
MAX_STR = 500
# created_at may lead the receiving clock by this much (clock skew), no more
FUTURE_SKEW = timedelta(minutes=5)

# Names (machine, engine, model, protocol, test, capability) are one line of visible text:
# every C0/C1 control character (tab, newline and carriage return included) and the
# bidirectional marks that reorder how a name is displayed (U+202E and friends) are refused.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def check_name_text(value: str, field: str, max_len: int = MAX_STR) -> str:
    """The one rule for every name a run carries, whatever its format: at most MAX_STR characters,
    no control characters, no bidirectional marks."""
    if len(value) > max_len:
        raise _reject(field, f"longer than {max_len} characters", "too_long")
    if _CONTROL.search(value):
        raise _reject(field, "contains control characters or bidirectional marks", "invalid_value")
    return value
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _reject(field: str, why: str, check: str = "invalid_value") -> RunRejected:
    return RunRejected(f"{field}: {why}", check)


def loads_strict(text: bytes | str, what: str = "payload") -> Any:
    """json.loads that refuses NaN/Infinity literals, duplicate keys and deep nesting."""
    def no_constant(name):
        raise _reject(what, f"{name} is not a number JSON allows", "non_finite")

    def no_dupes(pairs):
        out = {}
        for k, v in pairs:
            if k in out:
                raise _reject(what, f"duplicate key {k!r}", "malformed_payload")
            out[k] = v
        return out

    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text, parse_constant=no_constant, object_pairs_hook=no_dupes)
    except UnicodeDecodeError:
        raise _reject(what, "not UTF-8", "malformed_payload") from None
    except json.JSONDecodeError as exc:
        raise _reject(what, f"not valid JSON ({exc.msg} at line {exc.lineno})", "malformed_payload") from None
    except RecursionError:
        raise _reject(what, "JSON nested too deeply", "malformed_payload") from None


# ---- field checkers ----------------------------------------------------------------------
def _str(obj: dict, key: str, path: str, required: bool = False, max_len: int = MAX_STR) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise _reject(f"{path}.{key}", "missing", "missing_field")
        return None
    if not isinstance(value, str):
        raise _reject(f"{path}.{key}", f"expected a string, got {type(value).__name__}", "wrong_type")
    if required and not value.strip():
        raise _reject(f"{path}.{key}", "empty", "missing_field")
    return check_name_text(value, f"{path}.{key}", max_len)


def _num(obj: dict, key: str, path: str, *, lo: float = 0.0, hi: float, required: bool = False,
         integer: bool = False, lo_open: bool = False) -> float | int | None:
    value = obj.get(key)
    name = f"{path}.{key}"
    if value is None:
        if required:
            raise _reject(name, "missing", "missing_field")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _reject(name, f"expected a number, got {type(value).__name__}", "wrong_type")
    if isinstance(value, float) and not math.isfinite(value):
        raise _reject(name, f"{value} is not finite", "non_finite")
    if integer:
        if isinstance(value, float):
            if not value.is_integer():
                raise _reject(name, f"{value} is not a whole number", "wrong_type")
            value = int(value)
    if value < lo or (lo_open and value == lo):
        raise _reject(name, f"{value} is {'not positive' if lo == 0 and lo_open else 'negative' if value < 0 else f'below {lo}'}",
                      "negative" if value < 0 else "impossible_value")
    if value > hi:
        raise _reject(name, f"{value} is impossible (above {hi:g})", "impossible_value")
    return value


def _bool(obj: dict, key: str, path: str) -> bool:
    value = obj.get(key)
    if not isinstance(value, bool):
        raise _reject(f"{path}.{key}", "expected true or false", "wrong_type")
    return value


def _obj(parent: dict, key: str, allowed: set[str], required: bool = True) -> dict | None:
    value = parent.get(key)
    if value is None:
        if required:
            raise _reject(key, "missing", "missing_field")
        return None
    if not isinstance(value, dict):
        raise _reject(key, "expected an object", "wrong_type")
    _no_unknown(value, allowed, key)
    return value


def _list(parent: dict, key: str, required: bool, max_items: int) -> list:
    value = parent.get(key)
    if value is None:
        if required:
            raise _reject(key, "missing", "missing_field")
        return []
    if not isinstance(value, list):
        raise _reject(key, "expected a list", "wrong_type")
    if len(value) > max_items:
        raise _reject(key, f"more than {max_items} items", "too_many")
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise _reject(f"{key}[{i}]", "expected an object", "wrong_type")
    return value


def _no_unknown(obj: dict, allowed: set[str], path: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        shown = ", ".join(repr(u[:40]) for u in unknown[:3])
        raise _reject(path, f"unknown field {shown}", "unknown_field")


def parse_rfc3339_utc(value: str, field: str) -> datetime:
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        raise _reject(field, "not an RFC 3339 timestamp", "bad_timestamp")
    text = value.replace("z", "Z").replace("t", "T").replace(" ", "T")
    frac = re.search(r"\.(\d+)", text)
    if frac and len(frac.group(1)) > 6:  # Python keeps microseconds
        text = text.replace(frac.group(0), "." + frac.group(1)[:6])
    try:
        ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _reject(field, "not a valid date/time", "bad_timestamp") from None
    if ts.utcoffset() != timedelta(0):
        raise _reject(field, "must be UTC (Z or +00:00)", "bad_timestamp")
    if ts.year < 2000:
        raise _reject(field, f"{ts.year} is before any LLM benchmark", "impossible_value")
    return ts.astimezone(timezone.utc)


def check_not_future(ts: datetime, received_at: datetime | None, field: str) -> None:
    if received_at is not None and ts > received_at + FUTURE_SKEW:
        raise _reject(field, f"{ts.isoformat()} is in the future (received {received_at.isoformat()})",
                      "future_timestamp")


# ---- the payload -------------------------------------------------------------------------
TOP = {"schema", "submission_id", "created_at", "machine", "engine", "model", "protocol", "samples",
       "power", "memory", "context_recall", "context_recall_stopped", "capabilities",
       # a vouched tool output (`benchwh runs add FILE --key KEY`, vouch.py): all optional
       "source_file", "measured_at", "config", "extra_fields"}
MACHINE = {"gpu", "gpu_count", "gpu_memory_gb", "cpu", "ram_gb", "os", "country"}
ENGINE = {"name", "version", "backend"}
MODEL = {"name", "repo", "file", "quant", "file_size_bytes", "sha256", "params"}
PROTOCOL = {"name", "prompt_tokens", "gen_tokens", "sampling", "repetitions"}
# token_counts: "usage" when the server reported the counts, "stream" when the client counted them
SAMPLE = {"prompt_tokens", "gen_tokens", "ttft_ms", "prompt_tps", "gen_tps", "turn_time_ms", "token_counts",
          # a vouched tool output's samples keep what its parser read (vouch.py)
          "test_name", "test_index", "sample_index", "n_depth", "measured_at", "is_test_mean", "power_w",
          "energy_j", "peak_memory_bytes", "test_key", "load_duration_ms", "is_turn_time_derived",
          "throughput_tps"}
# the tool output a vouched payload was parsed from: its name, the sha256 of its exact bytes,
# the parser's kind, and the tool's own source name and run id
SOURCE_FILE = {"name", "sha256", "kind", "source", "source_run_id"}
TOOL_SOURCES = ("llama-bench", "ollama", "llama-server", "vllm")
CONFIG_STR = {"backend", "devices", "offload", "flash_attn", "type_k", "type_v", "split_mode", "tensor_split",
              "request_rate", "client_api"}
CONFIG_INT = {"n_gpu_layers", "n_batch", "n_ubatch", "n_threads", "n_cpu_moe", "concurrency"}
CONFIG_BOOL = {"is_cpu_fallback", "is_partial_offload"}
POWER = {"method", "avg_watts", "energy_j"}
MEMORY = {"peak_bytes"}
RECALL = {"context_tokens", "recalled"}
RECALL_STOPPED = {"reason", "at_tokens"}
# why a recall walk ended (DESIGN §6); files without the field read as `unknown` in the marts
RECALL_STOP_REASONS = ("forgot", "could_not_hold", "reached_trained_context")
CAPABILITY = {"name", "passed"}


def validate_payload(data: bytes | str | dict, received_at: datetime | None = None) -> dict:
    """Strictly validate a benchwh.run/1 payload; return it normalised.

    `received_at` (UTC) is when the file reached us: created_at may not lie after it. It is
    passed in, not read from the clock, so a replay of the raw store gives the same verdict.
    """
    doc = data if isinstance(data, dict) else loads_strict(data)
    if not isinstance(doc, dict):
        raise _reject("payload", "not a JSON object", "malformed_payload")
    schema = doc.get("schema")
    if schema != SCHEMA:
        shown = repr(schema)[:60]
        raise _reject("schema", f"unknown schema {shown} (expected {SCHEMA!r})", "unknown_schema")
    _no_unknown(doc, TOP, "payload")
    # a vouched tool output says what its file said: no model name when it named only the file
    vouched = doc.get("source_file") is not None

    sid = doc.get("submission_id")
    try:
        if not isinstance(sid, str) or len(sid) > 64:
            raise ValueError
        submission_id = str(uuid.UUID(sid))
    except ValueError:
        raise _reject("submission_id", "not a UUID", "bad_submission_id") from None
    created = parse_rfc3339_utc(doc.get("created_at"), "created_at")
    check_not_future(created, received_at, "created_at")

    m = _obj(doc, "machine", MACHINE)
    machine = {
        "gpu": _str(m, "gpu", "machine", required=True),
        "gpu_count": _num(m, "gpu_count", "machine", lo=1, hi=MAX_GPU_COUNT, integer=True),
        "gpu_memory_gb": _num(m, "gpu_memory_gb", "machine", hi=MAX_GB, lo_open=True),
        "cpu": _str(m, "cpu", "machine"),
        "ram_gb": _num(m, "ram_gb", "machine", hi=MAX_GB, lo_open=True),
        "os": _str(m, "os", "machine"),
        "country": _str(m, "country", "machine"),
    }
    if machine["gpu_count"] is None and not vouched:
        machine["gpu_count"] = 1
    if machine["country"] is not None and not _COUNTRY.fullmatch(machine["country"]):
        raise _reject("machine.country", "not an ISO 3166 alpha-2 code (two capital letters)")

    e = _obj(doc, "engine", ENGINE)
    engine = {"name": _str(e, "name", "engine", required=True), "version": _str(e, "version", "engine"),
              "backend": _str(e, "backend", "engine")}

    md = _obj(doc, "model", MODEL)
    model = {
        "name": _str(md, "name", "model", required=not (vouched and md.get("file"))),
        "repo": _str(md, "repo", "model"),
        "file": _str(md, "file", "model"), "quant": _str(md, "quant", "model"),
        "file_size_bytes": _num(md, "file_size_bytes", "model", hi=MAX_BYTES, integer=True, lo_open=True),
        "sha256": _str(md, "sha256", "model"),
        "params": _num(md, "params", "model", hi=MAX_BYTES, integer=True, lo_open=True),
    }
    if model["sha256"] is not None:
        model["sha256"] = model["sha256"].lower()
        if not _SHA256.fullmatch(model["sha256"]):
            raise _reject("model.sha256", "not 64 hex digits")

    p = _obj(doc, "protocol", PROTOCOL)
    sampling = p.get("sampling")
    if sampling is not None and not isinstance(sampling, (dict, str)):
        raise _reject("protocol.sampling", "expected an object or a string", "wrong_type")
    sampling_text = None
    if sampling is not None:
        sampling_text = sampling if isinstance(sampling, str) else json.dumps(sampling, sort_keys=True)
        if len(sampling_text) > 2000:
            raise _reject("protocol.sampling", "longer than 2000 characters", "too_long")
    protocol = {
        "name": _str(p, "name", "protocol", required=True),
        "prompt_tokens": _num(p, "prompt_tokens", "protocol", hi=MAX_TOKENS, integer=True),
        "gen_tokens": _num(p, "gen_tokens", "protocol", hi=MAX_TOKENS, integer=True),
        "sampling": sampling_text,
        "repetitions": _num(p, "repetitions", "protocol", lo=1, hi=MAX_SAMPLES, integer=True),
    }

    samples = []
    raw_samples = _list(doc, "samples", True, MAX_SAMPLES)
    if not raw_samples:
        raise _reject("samples", "empty: a run needs at least one repetition", "missing_field")
    for i, s in enumerate(raw_samples):
        path = f"samples[{i}]"
        _no_unknown(s, SAMPLE, path)
        row = {
            "prompt_tokens": _num(s, "prompt_tokens", path, hi=MAX_TOKENS, integer=True),
            "gen_tokens": _num(s, "gen_tokens", path, hi=MAX_TOKENS, integer=True),
            "ttft_ms": _num(s, "ttft_ms", path, hi=MAX_MS),
            "prompt_tps": _num(s, "prompt_tps", path, hi=MAX_PROMPT_TPS, lo_open=True),
            "gen_tps": _num(s, "gen_tps", path, hi=MAX_GEN_TPS, lo_open=True),
            "turn_time_ms": _num(s, "turn_time_ms", path, hi=MAX_MS),
        }
        counts = _str(s, "token_counts", path)
        if counts is not None:
            if counts not in ("usage", "stream"):
                raise _reject(f"{path}.token_counts", f"{counts[:40]!r} is not usage or stream")
            row["token_counts"] = counts
        row.update(_vouched_sample(s, path))
        if (row["gen_tps"] is None and row["prompt_tps"] is None and row["turn_time_ms"] is None
                and row.get("throughput_tps") is None):
            raise _reject(path, "has none of gen_tps, prompt_tps, turn_time_ms", "missing_field")
        if (row["turn_time_ms"] is not None and row["ttft_ms"] is not None
                and row["turn_time_ms"] < row["ttft_ms"]):
            raise _reject(path, "turn_time_ms is shorter than ttft_ms", "impossible_value")
        # a speed is tokens over time: none generated (or read) cannot have a positive rate
        for tokens, rate in (("gen_tokens", "gen_tps"), ("prompt_tokens", "prompt_tps")):
            count = row[tokens] if row[tokens] is not None else protocol[tokens]
            if count == 0 and row[rate] is not None:
                raise _reject(f"{path}.{tokens}", f"is 0 at {rate} {row[rate]:g}: no tokens cannot give a speed",
                              "impossible_value")
        samples.append(row)
    # (a vouched llama-bench run counts repetitions per test, not samples of all its tests)
    if protocol["repetitions"] is not None and protocol["repetitions"] != len(samples) and not vouched:
        raise _reject("protocol.repetitions",
                      f"says {protocol['repetitions']} but there are {len(samples)} samples", "inconsistent")

    power = None
    pw = _obj(doc, "power", POWER, required=False)
    if pw is not None:
        method = _str(pw, "method", "power", required=True)
        if method not in ("sensor", "modelled"):
            raise _reject("power.method", f"{method[:40]!r} is not sensor or modelled")
        power = {"method": method,
                 "avg_watts": _num(pw, "avg_watts", "power", hi=MAX_WATTS, lo_open=True),
                 "energy_j": _num(pw, "energy_j", "power", hi=MAX_ENERGY_J)}
        if power["avg_watts"] is None and power["energy_j"] is None:
            raise _reject("power", "has neither avg_watts nor energy_j", "missing_field")

    memory = None
    mem = _obj(doc, "memory", MEMORY, required=False)
    if mem is not None:
        memory = {"peak_bytes": _num(mem, "peak_bytes", "memory", hi=MAX_BYTES, integer=True,
                                     required=True, lo_open=True)}

    recall = []
    for i, r in enumerate(_list(doc, "context_recall", False, MAX_LIST)):
        path = f"context_recall[{i}]"
        _no_unknown(r, RECALL, path)
        recall.append({"context_tokens": _num(r, "context_tokens", path, lo=1, hi=MAX_TOKENS,
                                               integer=True, required=True),
                       "recalled": _bool(r, "recalled", path)})
    if len({r["context_tokens"] for r in recall}) != len(recall):
        raise _reject("context_recall", "the same context_tokens appears twice", "inconsistent")

    recall_stopped = None
    st = _obj(doc, "context_recall_stopped", RECALL_STOPPED, required=False)
    if st is not None:
        reason = _str(st, "reason", "context_recall_stopped", required=True)
        if reason not in RECALL_STOP_REASONS:
            raise _reject("context_recall_stopped.reason",
                          f"{reason[:40]!r} is not one of {', '.join(RECALL_STOP_REASONS)}")
        recall_stopped = {"reason": reason,
                          "at_tokens": _num(st, "at_tokens", "context_recall_stopped", lo=1, hi=MAX_TOKENS,
                                            integer=True)}

    caps = []
    for i, c in enumerate(_list(doc, "capabilities", False, MAX_LIST)):
        path = f"capabilities[{i}]"
        _no_unknown(c, CAPABILITY, path)
        caps.append({"name": _str(c, "name", path, required=True), "passed": _bool(c, "passed", path)})
    if len({c["name"] for c in caps}) != len(caps):
        raise _reject("capabilities", "the same capability name appears twice", "inconsistent")

    source_file = None
    sf = _obj(doc, "source_file", SOURCE_FILE, required=False)
    if sf is not None:
        source_file = {k: _str(sf, k, "source_file", required=True) for k in ("name", "sha256", "kind", "source",
                                                                              "source_run_id")}
        source_file["sha256"] = source_file["sha256"].lower()
        if not _SHA256.fullmatch(source_file["sha256"]):
            raise _reject("source_file.sha256", "not 64 hex digits")
        if source_file["source"] not in TOOL_SOURCES:
            raise _reject("source_file.source", f"{source_file['source'][:40]!r} is not one of "
                          f"{', '.join(TOOL_SOURCES)}")
    measured = None
    if doc.get("measured_at") is not None:
        measured = parse_rfc3339_utc(doc["measured_at"], "measured_at")
        check_not_future(measured, received_at, "measured_at")
    config = None
    cf = _obj(doc, "config", CONFIG_STR | CONFIG_INT | CONFIG_BOOL, required=False)
    if cf is not None:
        config = {k: _str(cf, k, "config") for k in sorted(CONFIG_STR)}
        config.update({k: _num(cf, k, "config", lo=-1, hi=MAX_TOKENS, integer=True) for k in sorted(CONFIG_INT)})
        config.update({k: (_bool(cf, k, "config") if k in cf else False) for k in sorted(CONFIG_BOOL)})
        if config["offload"] is not None and config["offload"] not in ("full", "partial", "none"):
            raise _reject("config.offload", f"{config['offload'][:40]!r} is not full, partial or none")
    extra = _str(doc, "extra_fields", "payload", max_len=20_000)
    if (measured is not None or config is not None or extra is not None) and source_file is None:
        raise _reject("payload", "measured_at, config and extra_fields belong to a vouched tool output "
                      "(with source_file)", "inconsistent")

    return {
        "schema": SCHEMA, "submission_id": submission_id,
        "created_at": created.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "machine": machine, "engine": engine, "model": model, "protocol": protocol,
        "samples": samples, "power": power, "memory": memory,
        "context_recall": recall, "context_recall_stopped": recall_stopped, "capabilities": caps,
        "source_file": source_file, "measured_at": measured, "config": config, "extra_fields": extra,
    }


def _vouched_sample(s: dict, path: str) -> dict:
    """A vouched tool output's sample fields (only those present; DESIGN §6 samples have none)."""
    out: dict = {}
    if "test_name" in s:
        out["test_name"] = _str(s, "test_name", path)
    for key in ("test_index", "sample_index"):
        if key in s:
            out[key] = _num(s, key, path, hi=MAX_SAMPLES * MAX_LIST, integer=True)
    if "n_depth" in s:
        out["n_depth"] = _num(s, "n_depth", path, hi=MAX_TOKENS, integer=True)
    if s.get("measured_at") is not None:
        out["measured_at"] = parse_rfc3339_utc(s["measured_at"], f"{path}.measured_at")
    for key in ("is_test_mean", "is_turn_time_derived"):
        if key in s:
            out[key] = _bool(s, key, path)
    for key, hi in (("power_w", MAX_WATTS), ("energy_j", MAX_ENERGY_J), ("load_duration_ms", MAX_MS),
                    ("throughput_tps", MAX_PROMPT_TPS)):
        if key in s:
            out[key] = _num(s, key, path, hi=hi)
    if "peak_memory_bytes" in s:
        out["peak_memory_bytes"] = _num(s, "peak_memory_bytes", path, hi=MAX_BYTES, integer=True)
    if "test_key" in s:
        out["test_key"] = _str(s, "test_key", path, max_len=200)
    return out


def _drop_none(obj):
    if isinstance(obj, dict):
        return {k: _drop_none(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_drop_none(v) for v in obj]
    return obj


def build_payload(*, machine: dict, engine: dict, model: dict, protocol: dict, samples: list[dict],
                  power: dict | None = None, memory: dict | None = None,
                  context_recall: list[dict] | None = None, capabilities: list[dict] | None = None,
                  context_recall_stopped: dict | None = None, submission_id: str | None = None,
                  created_at: datetime | str | None = None) -> dict:
    """A valid benchwh.run/1 payload dict (None values dropped); raises RunRejected if invalid.

    `created_at` defaults to now (UTC), `submission_id` to a new UUID4, and
    protocol.repetitions to the number of samples.
    """
    if created_at is None:
        created_at = datetime.now(timezone.utc)
    if isinstance(created_at, datetime):
        if created_at.tzinfo is None:
            created_at = created_at.replace(tzinfo=timezone.utc)
        created_at = created_at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    protocol = dict(protocol)
    protocol.setdefault("repetitions", len(samples))
    doc = _drop_none({
        "schema": SCHEMA, "submission_id": submission_id or str(uuid.uuid4()), "created_at": created_at,
        "machine": machine, "engine": engine, "model": model, "protocol": protocol,
        "samples": samples, "power": power, "memory": memory,
        "context_recall": context_recall or None, "context_recall_stopped": context_recall_stopped,
        "capabilities": capabilities or None,
    })
    validate_payload(doc)
    return doc


def payload_bytes(doc: dict) -> bytes:
    """The bytes to sign: compact, key-sorted JSON (any bytes are fine; these are stable)."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
