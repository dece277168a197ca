"""Writes ingest/snapshots/runs/: the runs recording, intake wrappers as `benchwh runs add` stores them (written by us).

The runs source is fed by files, not fetched; `refresh --offline` replays this recording like the
others, and its contract test parses it (tests/test_sources_contract.py). Deterministic: a fixed demo key (Ed25519 signatures are
deterministic), fixed ids and times, and the demo board's spread drawn from seeded random.Random
generators. Rerun after changing it:
    .venv/bin/python -m scripts.recordings.runs

Besides one signed run and one llama-bench output, the recording holds the demo board
(`board_payloads`): one machine's generation leaderboard of the 13 builds of
../shared/reference-pages/leaderboard-generation-1k.txt, each measured in 5 to 7 signed runs of 3
repetitions, so the offline demo shows what the leaderboard means (order-statistic intervals over
several runs, rank ranges where intervals overlap, measured turn times).
"""
from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from statistics import NormalDist

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ingest.config import snapshots_dir
from ingest.measure import protocols
from ingest.measure.stats import median_interval
from ingest.sources.runs import dsse
from ingest.sources.runs.intake import make_intake
from ingest.sources.runs.payload import build_payload, payload_bytes

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


# ---- the demo board -------------------------------------------------------------------------
# The machine and llama.cpp build of the signed run above: the demo contributor ran the board on it
# in the week after, with `benchwh bench --repetitions 3` (1 warm-up, 3 measured repetitions of the
# gen-1k prompt), which names the protocol `gen-1k/r3`: its own test profile, never pooled with
# gen-1k's 10-repetition runs.
BOARD_MACHINE = {"gpu": "NVIDIA GeForce RTX 4090", "gpu_count": 1, "gpu_memory_gb": 24,
                 "cpu": "AMD Ryzen 9 7950X", "ram_gb": 64, "os": "Ubuntu 24.04", "country": "DE"}
BOARD_ENGINE = {"name": "llama.cpp", "version": "b6200", "backend": "CUDA"}
BOARD_PROTOCOL = protocols.get("gen-1k").with_counts(repetitions=3)
BOARD_SEED = 54  # issue 54: the demo shows what the leaderboard means
BOARD_START = datetime(2026, 11, 22, 8, 0, tzinfo=timezone.utc)  # day 1 of the week of runs
BOARD_NAMESPACE = uuid.UUID("5d0b7a52-54de-4a0b-8a54-000000000054")  # submission ids: uuid5 in it


@dataclass(frozen=True)
class BoardBuild:
    """One row of the board: a build as the reference page lists it, and how its runs spread."""
    name: str
    quant: str
    repo: str  # GGUF repository, file and size as the Hugging Face recording lists them
    file: str
    file_size_bytes: int  # written by the contributor (`benchwh bench` does not know it)
    gen_tps: float  # centre of the generation speed (the page's median)
    run_sd: float  # spread between runs (tok/s): the machine's state from one run to the next
    rep_sd: float  # spread between the repetitions of one run (tok/s)
    prompt_tokens: int  # the server's count of the gen-1k prompt (the model's tokenizer)
    turn_s: float  # the page's turn time: sets the time to first token
    runs: int  # signed run files (submissions)


# The reference page's 13 builds, fastest first. Ling 3.0 Tiny (a mixture of experts) varies a lot
# from run to run: its interval overlaps those of Gemma 4 E2B and Llama 3.2 3B, which are steady
# but close to each other, so three rows get a rank range (#2-4, #2-3, #3-4 of 13) and the rest
# a single rank (BOARD_RANKS, checked when the payloads are made). Llama 3.1 8B is the file of the
# signed run above, on the same machine: it reports the same size.
BOARD = [
    BoardBuild("SmolLM2 1.7B Instruct", "Q4_K_M", "bartowski/SmolLM2-1.7B-Instruct-GGUF",
               "SmolLM2-1.7B-Instruct-Q4_K_M.gguf", 1055609824, 355.0, 4.0, 1.5, 1193, 0.69, 5),
    BoardBuild("Ling 3.0 Tiny", "Q4_K_M", "inclusionAI/Ling-3.0-Tiny-GGUF",
               "Ling-3.0-Tiny-Q4_K_M.gguf", 1613000000, 266.0, 18.0, 3.0, 1178, 1.00, 7),
    BoardBuild("Gemma 4 E2B Instruct QAT", "UD-Q4_K_XL", "unsloth/gemma-4-E2B-it-qat-GGUF",
               "gemma-4-E2B-it-qat-UD-Q4_K_XL.gguf", 3018000000, 259.5, 0.4, 0.3, 1124, 0.98, 5),
    BoardBuild("Llama 3.2 3B Instruct", "Q4_K_M", "bartowski/Llama-3.2-3B-Instruct-GGUF",
               "Llama-3.2-3B-Instruct-Q4_K_M.gguf", 2019377696, 256.5, 0.4, 0.3, 1163, 0.98, 6),
    BoardBuild("Bonsai 8B", "Q1_0", "prism-ml/Bonsai-8B-GGUF",
               "Bonsai-8B-Q1_0.gguf", 1163000000, 237.5, 0.5, 0.3, 1146, 1.13, 5),
    BoardBuild("Bonsai 8B", "Q2_0", "prism-ml/Bonsai-8B-GGUF",
               "Bonsai-8B-Q2_0.gguf", 2176000000, 221.0, 0.8, 0.4, 1146, 1.19, 5),
    BoardBuild("Granite 4.2 3B Instruct", "Q4_K_M", "ibm-granite/granite-4.2-3b-instruct-GGUF",
               "granite-4.2-3b-instruct-Q4_K_M.gguf", 2101000000, 199.5, 0.4, 0.3, 1169, 1.23, 5),
    BoardBuild("Ministral 3 3B Instruct", "Q4_K_M", "mistralai/Ministral-3-3B-Instruct-2512-GGUF",
               "Ministral-3-3B-Instruct-2512-Q4_K_M.gguf", 2147000000, 189.0, 1.2, 0.5, 1163, 1.62, 5),
    BoardBuild("Qwen 3.5 4B", "Q4_K_M", "unsloth/Qwen3.5-4B-GGUF",
               "Qwen3.5-4B-Q4_K_M.gguf", 2740000000, 174.0, 1.8, 0.6, 1156, 1.66, 6),
    BoardBuild("Gemma 4 E4B Instruct", "Q4_K_M", "ggml-org/gemma-4-E4B-it-GGUF",
               "gemma-4-E4B-it-Q4_K_M.gguf", 4977000000, 143.5, 0.8, 0.3, 1124, 1.72, 5),
    BoardBuild("Llama 3.1 8B Instruct", "Q4_K_M", "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
               "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", 4920734016, 133.5, 0.4, 0.2, 1163, 1.85, 7),
    BoardBuild("Granite 4.2 8B Instruct", "Q4_K_M", "ibm-granite/granite-4.2-8b-instruct-GGUF",
               "granite-4.2-8b-instruct-Q4_K_M.gguf", 4942000000, 111.5, 0.4, 0.2, 1169, 2.15, 5),
    BoardBuild("Ministral 3 8B Instruct", "Q4_K_M", "mistralai/Ministral-3-8B-Instruct-2512-GGUF",
               "Ministral-3-8B-Instruct-2512-Q4_K_M.gguf", 5200000000, 105.0, 0.8, 0.3, 1163, 2.42, 5),
]
BOARD_RANKS = ["1", "2-4", "2-3", "3-4", "5", "6", "7", "8", "9", "10", "11", "12", "13"]


def _run_offsets(build: BoardBuild, rng: random.Random) -> list[float]:
    """Each run's departure from the build's centre, stratified: run i of n draws from the i-th
    n-quantile band of Normal(0, run_sd), in shuffled order, so that five to seven runs span the
    spread instead of landing, by luck, on one side of it."""
    spread = NormalDist(0.0, build.run_sd) if build.run_sd > 0 else None
    offsets = [spread.inv_cdf((i + rng.random()) / build.runs) if spread else 0.0 for i in range(build.runs)]
    rng.shuffle(offsets)
    return offsets


def _board_samples(build: BoardBuild, offset: float, rng: random.Random) -> list[dict]:
    """One run's repetitions as `benchwh bench` records them (server-counted tokens, client timings)."""
    gen = BOARD_PROTOCOL.gen_tokens
    ttft_ms = 1000.0 * build.turn_s - 1000.0 * (gen - 1) / build.gen_tps
    samples = []
    for _ in range(BOARD_PROTOCOL.repetitions):
        gen_tps = build.gen_tps + offset + rng.gauss(0.0, build.rep_sd)
        ttft = ttft_ms * (1.0 + rng.gauss(0.0, 0.02))
        # the first token ends the prompt; the other gen-1 tokens arrive at gen_tps (measure.decode_rate)
        samples.append({"prompt_tokens": build.prompt_tokens, "gen_tokens": gen, "ttft_ms": round(ttft, 3),
                        "prompt_tps": round(build.prompt_tokens / (ttft / 1000.0), 3),
                        "gen_tps": round(gen_tps, 3),
                        "turn_time_ms": round(ttft + 1000.0 * (gen - 1) / gen_tps, 3),
                        "token_counts": "usage"})
    return samples


def board_payloads() -> list[tuple[str, dict]]:
    """The demo board's run payloads as (inbox file name, payload), in the order they were made.

    Day d of the week is round d: every build with more than d runs is measured once, one build
    after the other. Each build draws its spread from its own generator (seeded by BOARD_SEED and
    the build), so a row added to BOARD leaves the others' numbers as they were.
    """
    rngs = {b: random.Random(f"{BOARD_SEED}:{b.repo}/{b.file}") for b in BOARD}
    offsets = {b: _run_offsets(b, rngs[b]) for b in BOARD}
    out = []
    for day in range(max(b.runs for b in BOARD)):
        at = BOARD_START + timedelta(days=day)
        for slot, build in enumerate(b for b in BOARD if b.runs > day):
            created = at + timedelta(minutes=4 * slot)
            doc = build_payload(
                submission_id=str(uuid.uuid5(BOARD_NAMESPACE, f"{build.repo}/{build.file}#{day + 1}")),
                created_at=created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                machine=BOARD_MACHINE, engine=BOARD_ENGINE,
                model={"name": build.name, "repo": build.repo, "file": build.file, "quant": build.quant,
                       "file_size_bytes": build.file_size_bytes},
                protocol={"name": BOARD_PROTOCOL.name, "prompt_tokens": BOARD_PROTOCOL.prompt_tokens,
                          "gen_tokens": BOARD_PROTOCOL.gen_tokens, "sampling": BOARD_PROTOCOL.sampling,
                          "repetitions": BOARD_PROTOCOL.repetitions},
                samples=_board_samples(build, offsets[build][day], rngs[build]))
            stem = build.file.removesuffix(".gguf").lower()
            out.append((f"rtx4090-{stem}-run{day + 1}.run.json", doc))
    check_board(out)
    return out


def board_rank_labels(payloads: list[tuple[str, dict]]) -> list[str]:
    """The rank range of each BOARD row over the payloads' samples (DESIGN §7, as the marts compute it)."""
    speeds: dict[tuple[str, str], list[float]] = {}
    for _name, doc in payloads:
        key = (doc["model"]["repo"], doc["model"]["file"])
        speeds.setdefault(key, []).extend(s["gen_tps"] for s in doc["samples"])
    intervals = [median_interval(speeds[(b.repo, b.file)]) for b in BOARD]
    labels = []
    for i, me in enumerate(intervals):
        best = 1 + sum(other.low > me.high for other in intervals)
        worst = 1 + sum(other.high >= me.low for j, other in enumerate(intervals) if j != i)
        labels.append(str(best) if best == worst else f"{best}-{worst}")
    return labels


def check_board(payloads: list[tuple[str, dict]]) -> None:
    """The board still shows what it is for: a change to BOARD that loses a rank range fails here."""
    labels = board_rank_labels(payloads)
    assert labels == BOARD_RANKS, f"the demo board's rank ranges changed: {labels} (expected {BOARD_RANKS})"


def signed_envelope(doc: dict) -> bytes:
    """The run file as `benchwh bench` writes it: the DSSE envelope, signed with the demo key."""
    return (json.dumps(dsse.sign_payload(payload_bytes(doc), DEMO_KEY), indent=2) + "\n").encode()


def main() -> None:
    # The signed runs were added to a warehouse that trusted the demo key, so they land `signed`
    # and the offline site tables (context recall, the demo board) show them; the llama-bench
    # output stays `unverified`. Trust is decided when a file is added and travels in the stored wrapper.
    public_raw = DEMO_KEY.public_key().public_bytes_raw()
    demo = dsse.TrustedKey(keyid=dsse.keyid_for(public_raw), public_key=public_raw, contributor="benchwh demo")
    files = [
        ("run_signed.json", "rtx4090-llama31-8b.run.json", signed_run(), "2026-11-20T09:45:00Z"),
        ("llama_bench_m3max.json", "m3max-qwen25-7b.json", llama_bench_output(), "2026-11-21T18:10:00Z"),
    ]
    # the board's files reached the inbox three minutes after each run ended
    for received_name, doc in board_payloads():
        created = datetime.fromisoformat(doc["created_at"])
        received_at = (created + timedelta(minutes=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
        files.append((f"board_{received_name.removesuffix('.run.json')}.json", received_name,
                      signed_envelope(doc), received_at))
    for stale in HERE.glob("*.json"):  # a board row renamed or dropped leaves no file behind
        stale.unlink()
    index = []
    for out_name, received_name, body, received_at in sorted(files, key=lambda f: f[3]):
        wrapper, kind = make_intake(body, received_name, trusted_keys=[demo])
        assert kind != "unknown", out_name
        (HERE / out_name).write_bytes(wrapper)
        index.append({"url": f"file://inbox/{received_name}", "fetched_at": received_at, "status": 200,
                      "headers": {"content-type": "application/json"}, "file": out_name})
    (HERE / "index.json").write_text(json.dumps(index, indent=1) + "\n")


if __name__ == "__main__":
    main()
