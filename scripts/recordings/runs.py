"""Writes ingest/snapshots/runs/: the runs recording, intake wrappers as `benchwh runs add` stores them (written by us).

The runs source is fed by files, not fetched; `refresh --offline` replays this recording like the
others, and its contract test parses it (tests/test_sources_contract.py). Deterministic: a fixed demo key (Ed25519 signatures are
deterministic), fixed ids and times. Rerun after changing it:
    .venv/bin/python -m scripts.recordings.runs
"""
from __future__ import annotations

import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ingest.config import snapshots_dir
from ingest.sources.runs import dsse
from ingest.sources.runs.intake import make_intake
from ingest.sources.runs.payload import payload_bytes

HERE = snapshots_dir() / "runs"
# a demo key for this recording only: trusted by nobody outside it
DEMO_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


def signed_run() -> bytes:
    doc = {
        "schema": "benchwh.run/1", "submission_id": "6f1c1d52-3b1e-4c39-9a53-0d6f1b7c2a10",
        "created_at": "2026-11-20T09:30:00Z",
        "machine": {"gpu": "NVIDIA GeForce RTX 4090", "gpu_count": 1, "gpu_memory_gb": 24,
                    "cpu": "AMD Ryzen 9 7950X", "ram_gb": 64, "os": "Ubuntu 24.04", "country": "DE"},
        "engine": {"name": "llama.cpp", "version": "b6200", "backend": "CUDA"},
        "model": {"name": "Llama 3.1 8B Instruct", "repo": "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
                  "file": "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "quant": "Q4_K_M",
                  "file_size_bytes": 4920734016},
        "protocol": {"name": "gen-1k", "prompt_tokens": 512, "gen_tokens": 1024, "repetitions": 3},
        "samples": [{"prompt_tokens": 512, "gen_tokens": 1024, "ttft_ms": 81.5 + i, "prompt_tps": 6120.0 - i,
                     "gen_tps": 127.4 + 0.3 * i, "turn_time_ms": 8120.0 + 7 * i} for i in range(3)],
        "power": {"method": "sensor", "avg_watts": 331.0, "energy_j": 8064.0},
        "memory": {"peak_bytes": 6012954214},
        "context_recall": [{"context_tokens": 4096, "recalled": True}, {"context_tokens": 32768, "recalled": True},
                           {"context_tokens": 131072, "recalled": False}],
        # why the walk ended (optional since DESIGN §6 gained it): the model lost the needle at 128K
        "context_recall_stopped": {"reason": "forgot", "at_tokens": 131072},
        "capabilities": [{"name": "json_output", "passed": True}, {"name": "tool_call", "passed": False}],
    }
    envelope = dsse.sign_payload(payload_bytes(doc), DEMO_KEY)
    return json.dumps(envelope, indent=1).encode()


def llama_bench_output() -> bytes:
    base = {"build_commit": "6a2bc8e0", "build_number": 6200, "cpu_info": "Apple M3 Max", "gpu_info": "Apple M3 Max",
            "backends": "Metal,BLAS", "model_filename": "/models/Qwen2.5-7B-Instruct-Q4_K_M.gguf",
            "model_type": "qwen2 7B Q4_K - Medium", "model_size": 4677120000, "model_n_params": 7615616512,
            "n_depth": 0, "test_time": "2026-11-21T18:02:11Z"}
    recs = [dict(base, n_prompt=512, n_gen=0, avg_ns=870412000, stddev_ns=2100000, avg_ts=588.2, stddev_ts=1.4,
                 samples_ns=[868000000, 872000000], samples_ts=[589.9, 586.5]),
            dict(base, n_prompt=0, n_gen=128, avg_ns=2915000000, stddev_ns=9000000, avg_ts=43.9, stddev_ts=0.1,
                 samples_ns=[2906000000, 2924000000], samples_ts=[44.0, 43.8])]
    return json.dumps(recs, indent=2).encode()


def main() -> None:
    # The signed run was added to a warehouse that trusted the demo key, so it lands `signed` and
    # the offline site tables (context recall among them) show it; the llama-bench output stays
    # `unverified`. Trust is decided when a file is added and travels in the stored wrapper.
    public_raw = DEMO_KEY.public_key().public_bytes_raw()
    demo = dsse.TrustedKey(keyid=dsse.keyid_for(public_raw), public_key=public_raw, contributor="benchwh demo")
    files = [
        ("run_signed.json", "rtx4090-llama31-8b.run.json", signed_run(), "2026-11-20T09:45:00Z"),
        ("llama_bench_m3max.json", "m3max-qwen25-7b.json", llama_bench_output(), "2026-11-21T18:10:00Z"),
    ]
    index = []
    for out_name, received_name, body, received_at in files:
        wrapper, kind = make_intake(body, received_name, trusted_keys=[demo])
        assert kind != "unknown", out_name
        (HERE / out_name).write_bytes(wrapper)
        index.append({"url": f"file://inbox/{received_name}", "fetched_at": received_at, "status": 200,
                      "headers": {"content-type": "application/json"}, "file": out_name})
    (HERE / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main()
