"""Local benchmark runs (DESIGN §4, §6): signed run files and common tool outputs.

No network fetch: files arrive through `benchwh runs add` and the inbox sensor, which store
each received file in the raw store as an intake wrapper (ingest/sources/runs/intake.py) and land it.
parse() reads only that wrapper, so replaying the raw store rebuilds the same rows. Trust is
decided when a file is added (the trusted keys that matched are kept in its wrapper).

Entities:
  runs            one row per run (a run file, or one model x build of a tool output)
  samples         one row per repetition of one test (the repetition-level samples of §7)
  context_recall  one row per context size a run's recall walk tried
  capabilities    one row per capability check of a run
"""
from __future__ import annotations

from datetime import datetime

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from ingest.landing.schema import LandingSchema
from ingest.raw_store import RawEntry, parse_iso
from ingest.source import Entity, FetchContext, Source
from ingest.sources.runs.intake import parse_intake
from ingest.sources.runs.model import SOURCES
from ingest.sources.runs.payload import (MAX_BYTES, MAX_ENERGY_J, MAX_GB, MAX_GEN_TPS, MAX_MS, MAX_PROMPT_TPS,
                                         MAX_TOKENS, MAX_WATTS)

TRUST = ["signed", "unverified"]


class RunsRunsSchema(LandingSchema):
    """One row per run."""

    source: Series[str] = pa.Field(isin=list(SOURCES), description="runfile | llama-bench | ollama | llama-server | vllm.")
    source_run_id: Series[str] = pa.Field(
        description="A run file's submission_id; for tool outputs a sha256 of the canonical parsed records "
                    "(the same output re-serialized gets the same id).")
    submission_id: Series[str] = pa.Field(nullable=True, description="UUID of a signed run file.")
    file_name: Series[str] = pa.Field(description="The received file's name (archive members as `archive!member`).")
    file_sha256: Series[str] = pa.Field(str_length={"min_value": 64, "max_value": 64},
                                        description="sha256 of the received file's bytes.")
    created_at: Series[pd.Timestamp] = pa.Field(description="When the run was made (naive UTC).")
    trust: Series[str] = pa.Field(isin=TRUST, description="signed (valid signature by a trusted key) or unverified.")
    keyid: Series[str] = pa.Field(nullable=True, description="Signing key id (hex sha256 of the raw public key).")
    contributor: Series[str] = pa.Field(nullable=True, description="Name of the trusted key's owner.")
    gpu: Series[str] = pa.Field(description="GPU name as given (raw, resolved in dbt).")
    gpu_count: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=1, le=1024, description="Number of GPUs.")
    gpu_memory_gb: Series[float] = pa.Field(nullable=True, ge=0, le=MAX_GB, description="GPU memory, GB.")
    cpu: Series[str] = pa.Field(nullable=True, description="CPU name as given.")
    ram_gb: Series[float] = pa.Field(nullable=True, ge=0, le=MAX_GB, description="System memory, GB.")
    os: Series[str] = pa.Field(nullable=True, description="Operating system as given.")
    country: Series[str] = pa.Field(nullable=True, str_matches=r"^[A-Z]{2}$",
                                    description="ISO 3166 alpha-2 country of the machine (grid carbon).")
    engine_name: Series[str] = pa.Field(nullable=True, description="llama.cpp, ollama, vllm, ...")
    engine_version: Series[str] = pa.Field(nullable=True, description="Engine version or build.")
    engine_backend: Series[str] = pa.Field(nullable=True, description="CUDA, ROCm, Vulkan, Metal, ...")
    model_name: Series[str] = pa.Field(nullable=True, description="Model name as given (raw).")
    model_repo: Series[str] = pa.Field(nullable=True, description="Hugging Face repo when given.")
    model_file: Series[str] = pa.Field(nullable=True, description="Model file name (basename), e.g. a .gguf.")
    model_quant: Series[str] = pa.Field(nullable=True, description="Quantization as given (raw).")
    model_file_size_bytes: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, le=MAX_BYTES,
                                                            description="Model file size, bytes.")
    model_sha256: Series[str] = pa.Field(nullable=True, description="sha256 of the model file when given.")
    model_params: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, description="Parameter count when reported.")
    protocol_name: Series[str] = pa.Field(nullable=True, description="Benchmark protocol (e.g. gen-1k, llama-bench).")
    protocol_prompt_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, le=MAX_TOKENS, description="Prompt tokens of the protocol.")
    protocol_gen_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, le=MAX_TOKENS, description="Generated tokens of the protocol.")
    protocol_sampling: Series[str] = pa.Field(nullable=True, description="Sampling settings (JSON text).")
    protocol_repetitions: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=1, description="Repetitions per test.")
    power_method: Series[str] = pa.Field(nullable=True, isin=["sensor", "modelled"], description="sensor | modelled.")
    power_avg_watts: Series[float] = pa.Field(nullable=True, ge=0, le=MAX_WATTS, description="Average power during the run, W.")
    power_energy_j: Series[float] = pa.Field(nullable=True, ge=0, le=MAX_ENERGY_J, description="Energy of the run, J.")
    memory_peak_bytes: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, le=MAX_BYTES, description="Peak memory measured, bytes.")
    recall_stop_reason: Series[str] = pa.Field(
        nullable=True, isin=["forgot", "could_not_hold", "reached_trained_context"],
        description="Why the run's recall walk ended (context_recall_stopped.reason); null when the file does not say.")
    recall_stop_at_tokens: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=1, le=MAX_TOKENS,
                                                             description="Context size the walk stopped at, tokens.")
    n_samples: Series[int] = pa.Field(ge=1, description="Samples landed for this run.")
    measured_at: Series[pd.Timestamp] = pa.Field(
        nullable=True, description="When the file says the run was made (naive UTC); null when it does not say "
                                   "(then created_at is only the time it was received).")
    received_at: Series[pd.Timestamp] = pa.Field(nullable=True, description="When the file was added (naive UTC).")
    # the run's configuration (DESIGN §5 dim_run_config): runs that differ here are never pooled
    config_key: Series[str] = pa.Field(nullable=True, description="Hash of engine, version and every config_* value "
                                                                  "below: the source of config_id.")
    devices: Series[str] = pa.Field(nullable=True, description="Devices used as the tool names them (CUDA0, "
                                                               "Vulkan0+2 RPC, none).")
    offload: Series[str] = pa.Field(nullable=True, isin=["full", "partial", "none"],
                                    description="Model layers on the GPU: full | partial | none.")
    n_gpu_layers: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=-1, description="GPU layers as given (-1: all).")
    flash_attn: Series[str] = pa.Field(nullable=True, isin=["on", "off", "auto"], description="Flash attention.")
    n_batch: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, description="Logical batch size.")
    n_ubatch: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, description="Physical (micro) batch size.")
    n_threads: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, description="CPU threads.")
    type_k: Series[str] = pa.Field(nullable=True, description="KV cache type of K (f16, q8_0, ...).")
    type_v: Series[str] = pa.Field(nullable=True, description="KV cache type of V.")
    split_mode: Series[str] = pa.Field(nullable=True, description="Multi-GPU split mode (layer, row, none).")
    tensor_split: Series[str] = pa.Field(nullable=True, description="Tensor split across GPUs as given.")
    n_cpu_moe: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, description="MoE expert layers kept on the CPU.")
    concurrency: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=1, description="Requests in flight at once.")
    request_rate: Series[str] = pa.Field(nullable=True, description="Requests per second sent (inf: all at once).")
    client_api: Series[str] = pa.Field(nullable=True, description="Benchmark client's API (vLLM `backend`: openai, "
                                                                  "openai-chat, vllm); not the engine's backend.")
    is_cpu_fallback: Series[bool] = pa.Field(nullable=True, description="A GPU backend failed to start: the run "
                                                                        "went to the CPU.")
    is_partial_offload: Series[bool] = pa.Field(nullable=True, description="Only part of the model was on the GPU.")
    extra_fields: Series[str] = pa.Field(nullable=True, description="Fields of the tool output no parser maps yet "
                                                                    "(JSON), kept rather than refused.")



class RunsSamplesSchema(LandingSchema):
    """One row per repetition of one test of one run."""

    source: Series[str] = pa.Field(isin=list(SOURCES), description="As in runs.")
    source_run_id: Series[str] = pa.Field(description="The run this sample belongs to.")
    test_name: Series[str] = pa.Field(description="pp512, tg128, pp512+tg128 @ d4096, or the run file's protocol name.")
    test_index: Series[int] = pa.Field(ge=0, description="Order of the test within the run.")
    sample_index: Series[int] = pa.Field(ge=0, description="Repetition number within the test, from 0.")
    n_prompt: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, le=MAX_TOKENS, description="Prompt tokens.")
    n_gen: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, le=MAX_TOKENS, description="Generated tokens.")
    n_depth: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, le=MAX_TOKENS, description="Context already filled (llama-bench -d).")
    ttft_ms: Series[float] = pa.Field(nullable=True, ge=0, le=MAX_MS, description="Time to first token, ms.")
    prompt_tps: Series[float] = pa.Field(nullable=True, gt=0, le=MAX_PROMPT_TPS, description="Prompt processing, tokens/s.")
    gen_tps: Series[float] = pa.Field(nullable=True, gt=0, le=MAX_GEN_TPS, description="Generation, tokens/s.")
    turn_time_ms: Series[float] = pa.Field(nullable=True, ge=0, le=MAX_MS, description="Request to last token, ms (as measured).")
    is_test_mean: Series[bool] = pa.Field(description="The tool reported only the mean of its repetitions.")
    power_w: Series[float] = pa.Field(nullable=True, ge=0, le=MAX_WATTS, description="Average power during this test, W.")
    energy_j: Series[float] = pa.Field(nullable=True, ge=0, le=MAX_ENERGY_J, description="Energy of this test, J.")
    peak_memory_bytes: Series[pd.Int64Dtype] = pa.Field(nullable=True, ge=0, le=MAX_BYTES, description="Peak memory during this test, bytes.")
    measured_at: Series[pd.Timestamp] = pa.Field(nullable=True, description="When the test ran (naive UTC).")
    test_key: Series[str] = pa.Field(nullable=True, description="Hash of the test's canonical record: equal keys are the same measurement.")
    config_key: Series[str] = pa.Field(nullable=True, description="The run's configuration (runs.config_key).")
    load_duration_ms: Series[float] = pa.Field(nullable=True, ge=0, le=MAX_MS,
                                               description="Model load before the request (Ollama), ms; not in ttft_ms.")
    is_turn_time_derived: Series[bool] = pa.Field(nullable=True, description="turn_time_ms worked out from ttft and "
                                                                             "TPOT, not measured.")
    throughput_tps: Series[float] = pa.Field(nullable=True, ge=0, le=MAX_PROMPT_TPS,
                                             description="Tokens/s of all requests together (batch throughput).")



class RunsContextRecallSchema(LandingSchema):
    """One row per context size tried by a run's recall walk."""

    source: Series[str] = pa.Field(isin=list(SOURCES), description="As in runs.")
    source_run_id: Series[str] = pa.Field(description="The run.")
    step_index: Series[int] = pa.Field(ge=0, description="Order in the walk as reported.")
    context_tokens: Series[int] = pa.Field(ge=1, le=MAX_TOKENS, description="Context size tried, tokens.")
    is_recalled: Series[bool] = pa.Field(description="The planted fact was recalled at this size.")



class RunsCapabilitiesSchema(LandingSchema):
    """One row per capability check of a run."""

    source: Series[str] = pa.Field(isin=list(SOURCES), description="As in runs.")
    source_run_id: Series[str] = pa.Field(description="The run.")
    capability: Series[str] = pa.Field(description="Check name as given (e.g. tool_calling, json_mode).")
    has_passed: Series[bool] = pa.Field(description="The check passed.")



def _naive(ts: datetime | None):
    return None if ts is None else pd.Timestamp(ts).tz_convert("UTC").tz_localize(None)


class RunsSource(Source):
    name = "runs"
    kind = "incremental"
    scheduled = False
    license = "Contributed by the people who ran them (run files and tool outputs)"
    attribution = "Local benchmark runs contributed to Bench Warehouse"
    parser_version = "1"
    entities = (
        Entity("runs", RunsRunsSchema, "One row per local benchmark run (run files and tool outputs)."),
        Entity("samples", RunsSamplesSchema, "One row per repetition of one test of a local run."),
        Entity("context_recall", RunsContextRecallSchema, "Context sizes a run's recall walk tried."),
        Entity("capabilities", RunsCapabilitiesSchema, "Capability checks of a run."),
    )

    def fetch(self, ctx: FetchContext) -> None:
        """Nothing to fetch: files come from `benchwh runs add` and the inbox sensor."""

    def parse(self, body: bytes, entry: RawEntry) -> dict[str, pd.DataFrame]:
        received = parse_iso(entry.fetched_at)
        doc, runs = parse_intake(body, received)
        return runs_to_frames(doc, runs, received)

    def parse_rows(self, body: bytes, entry: RawEntry) -> dict[str, list[dict]]:
        received = parse_iso(entry.fetched_at)
        doc, runs = parse_intake(body, received)
        return runs_to_rows(doc, runs, received)


def _columns(model) -> list[str]:
    return list(model.to_schema().columns)


def runs_to_frames(doc: dict, runs: list, received_at: datetime | None = None) -> dict[str, pd.DataFrame]:
    rows = runs_to_rows(doc, runs, received_at)
    return {ent.name: pd.DataFrame(rows[ent.name], columns=_columns(ent.model)) for ent in RunsSource.entities}


def runs_to_rows(doc: dict, runs: list, received_at: datetime | None = None) -> dict[str, list[dict]]:
    run_rows, sample_rows, recall_rows, cap_rows = [], [], [], []
    for run in runs:
        key = {"source": run.source, "source_run_id": run.source_run_id}
        config = run.config
        config_key = config.key(run.engine_name, run.engine_version)
        run_rows.append({
            **key, "submission_id": run.submission_id, "file_name": doc.get("name") or "",
            "file_sha256": doc["file_sha256"], "created_at": _naive(run.created_at),
            "trust": run.trust, "keyid": run.keyid, "contributor": run.contributor,
            "gpu": run.gpu, "gpu_count": run.gpu_count, "gpu_memory_gb": run.gpu_memory_gb, "cpu": run.cpu,
            "ram_gb": run.ram_gb, "os": run.os, "country": run.country,
            "engine_name": run.engine_name, "engine_version": run.engine_version,
            "engine_backend": run.engine_backend, "model_name": run.model_name, "model_repo": run.model_repo,
            "model_file": run.model_file, "model_quant": run.model_quant,
            "model_file_size_bytes": run.model_file_size_bytes, "model_sha256": run.model_sha256,
            "model_params": run.model_params, "protocol_name": run.protocol_name,
            "protocol_prompt_tokens": run.protocol_prompt_tokens, "protocol_gen_tokens": run.protocol_gen_tokens,
            "protocol_sampling": run.protocol_sampling, "protocol_repetitions": run.protocol_repetitions,
            "power_method": run.power_method, "power_avg_watts": run.power_avg_watts,
            "power_energy_j": run.power_energy_j, "memory_peak_bytes": run.memory_peak_bytes,
            "recall_stop_reason": run.recall_stop_reason, "recall_stop_at_tokens": run.recall_stop_at_tokens,
            "n_samples": len(run.samples),
            "measured_at": _naive(run.measured_at), "received_at": _naive(received_at), "config_key": config_key,
            "devices": config.devices, "offload": config.offload, "n_gpu_layers": config.n_gpu_layers,
            "flash_attn": config.flash_attn, "n_batch": config.n_batch, "n_ubatch": config.n_ubatch,
            "n_threads": config.n_threads, "type_k": config.type_k, "type_v": config.type_v,
            "split_mode": config.split_mode, "tensor_split": config.tensor_split, "n_cpu_moe": config.n_cpu_moe,
            "concurrency": config.concurrency, "request_rate": config.request_rate,
            "client_api": config.client_api, "is_cpu_fallback": config.is_cpu_fallback,
            "is_partial_offload": config.is_partial_offload, "extra_fields": run.extra_fields,
        })
        for s in run.samples:
            sample_rows.append({
                **key, "test_name": s.test_name, "test_index": s.test_index, "sample_index": s.sample_index,
                "n_prompt": s.n_prompt, "n_gen": s.n_gen, "n_depth": s.n_depth, "ttft_ms": s.ttft_ms,
                "prompt_tps": s.prompt_tps, "gen_tps": s.gen_tps, "turn_time_ms": s.turn_time_ms,
                "is_test_mean": s.is_test_mean, "power_w": s.power_w, "energy_j": s.energy_j,
                "peak_memory_bytes": s.peak_memory_bytes, "measured_at": _naive(s.measured_at),
                "test_key": s.test_key, "config_key": config_key, "load_duration_ms": s.load_duration_ms,
                "is_turn_time_derived": s.is_turn_time_derived, "throughput_tps": s.throughput_tps,
            })
        for i, r in enumerate(run.context_recall):
            recall_rows.append({**key, "step_index": i, "context_tokens": r["context_tokens"],
                                "is_recalled": r["recalled"]})
        for c in run.capabilities:
            cap_rows.append({**key, "capability": c["name"], "has_passed": c["passed"]})
    return {"runs": run_rows, "samples": sample_rows, "context_recall": recall_rows, "capabilities": cap_rows}
