"""The corpus of tool outputs in tests/data/real/ (PROVENANCE.md says where each comes from): one
test per file, its outcome written down by reading the file. Either the exact values it imports
with (speeds, model, quant, hardware, configuration, measured_at), or the named reason it is
rejected for. The flags are what the person adding the file would give (`runs add --gpu ...`).

Then the whole corpus is added to a real warehouse home, as `benchwh runs add` does: at least 90%
of the files land, and the configuration columns land with them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest

from ingest.sources.runs.add import add_paths
from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.model import CONFIG_FIELDS
from tests.helpers.runs import parse_text

REAL = Path(__file__).parent / "data" / "real"
MIB = 1024 * 1024


@dataclass
class Expect:
    """What one file gives: per run (in the file's order) its attributes and its tests as
    (test name, sample field, [one value per sample])."""

    flags: dict = field(default_factory=dict)
    runs: list[dict] = field(default_factory=list)
    tests: list[list[tuple]] = field(default_factory=list)
    reject: tuple[str, str] | None = None  # (check, words of the reason)


def run(**attrs) -> dict:
    return attrs


# llama.cpp's own README of September 2023 (build 1275) and of 2025 (build 5163), MIT
RTX3090TI = {"gpu": "NVIDIA GeForce RTX 3090 Ti", "cpu": "13th Gen Intel(R) Core(TM) i9-13900K"}
README_2023 = run(gpu="NVIDIA GeForce RTX 3090 Ti", cpu="13th Gen Intel(R) Core(TM) i9-13900K",
                  engine_version="b1275 (3469684)", model_name="ggml-model-q4_0", model_file="ggml-model-q4_0.gguf",
                  model_quant="Q4_0", model_params=6738415616, measured_at="2023-09-23T12:09:57+00:00",
                  backend="CUDA,GPU BLAS,BLAS", offload="full", n_gpu_layers=99, n_batch=512, n_threads=16,
                  type_k="f16", type_v="f16", flash_attn=None, is_cpu_fallback=False)
README_2023_TESTS = [("pp512", "prompt_tps", [2394.34, 2419.25, 2411.36, 2422.75, 2407.16]),
                     ("tg128", "gen_tps", [130.019, 131.295, 129.362, 131.86, 132.293])]
MD_2023 = dict(model_name="llama 7B mostly Q4_0", model_quant="Q4_0", model_params=6_740_000_000, engine_version=None,
               measured_at=None)
MD_2023_BATCH = [(128, 1436.51), (256, 1932.43), (512, 2254.45), (1024, 2498.61)]
MD_2023_THREADS = [(1, 6.17, 4.05), (2, 12.31, 7.80), (4, 23.18, 12.22), (8, 32.29, 16.71), (16, 33.52, 15.32),
                   (32, 59.00, 16.41)]
MD_2023_NGL = [(10, 373.36, 13.45), (20, 472.65, 21.36), (30, 631.87, 40.04), (31, 657.89, 48.19),
               (32, 688.26, 54.78), (33, 704.27, 60.62), (34, 881.34, 71.76), (35, 2400.01, 131.66)]

STRIX = dict(gpu="Radeon 8060S Graphics", cpu="AMD Eng Sample: 100-000001243-50_Y", engine_version="b6865 (1c1409e1)",
             backend="ROCm", devices="auto", offload="full", n_gpu_layers=99, flash_attn="on", n_threads=16,
             n_batch=2048, n_ubatch=512, type_k="f16", type_v="f16", split_mode="layer", n_cpu_moe=0)
LLAMA2_AMD = dict(gpu="AMD Radeon Graphics", cpu="AMD RYZEN AI MAX+ 395 w/ Radeon 8060S",
                  engine_version="b6077 (83bc2f28)", model_name="llama-2-7b.Q4_0", model_file="llama-2-7b.Q4_0.gguf",
                  model_quant="Q4_0", measured_at="2025-08-04T10:37:05+00:00", backend="ROCm", offload="full",
                  n_gpu_layers=99, flash_attn="off", n_threads=16, devices=None)
LLAMA2_AMD_TESTS = [("pp1", "prompt_tps", [50.0253, 49.9249, 50.1562, 50.0306, 50.0722]),
                    ("pp2", "prompt_tps", [98.2242, 98.6843, 98.8877, 98.8261, 99.2876]),
                    ("pp4", "prompt_tps", [189.188, 188.891, 189.402, 189.902, 188.946]),
                    ("pp8", "prompt_tps", [308.894, 312.998, 311.801, 307.77, 310.109])]
RPC = dict(gpu="Radeon 8060S Graphics", engine_version="b6097 (9515c613)", model_quant="F16", backend="Vulkan,RPC",
           n_gpu_layers=99, offload="full")


def vllm_console(n_prompt, n_gen, ttft, tpot, throughput, concurrency):
    """A console block's one sample: the medians; TPOT excludes the first token."""
    name = f"serve pp{n_prompt}+tg{n_gen} c{concurrency}"
    return [(name, "ttft_ms", [ttft]), (name, "gen_tps", [1000.0 / tpot]),
            (name, "turn_time_ms", [ttft + (n_gen - 1) * tpot]), (name, "is_turn_time_derived", [True]),
            (name, "throughput_tps", [throughput]), (name, "n_prompt", [n_prompt])]


CORPUS: dict[str, Expect] = {
    # ---- llama-bench, real files -------------------------------------------------------------
    "llama-bench/llamacpp_readme_2023_b1275.json": Expect(runs=[README_2023], tests=[README_2023_TESTS]),
    "llama-bench/llamacpp_readme_2023_b1275.jsonl": Expect(runs=[README_2023], tests=[README_2023_TESTS]),
    "llama-bench/llamacpp_readme_2023_b1275.csv": Expect(
        reject=("malformed_payload", "row 1 has 27 values but the header names 26 columns")),
    "llama-bench/llamacpp_readme_2023_b1275.sql": Expect(
        reject=("malformed_payload", "INSERT has 27 values for 26 columns")),
    "llama-bench/llamacpp_readme_2023_b1275_examples_multi_table.md": Expect(
        flags=RTX3090TI,
        runs=[run(gpu="NVIDIA GeForce RTX 3090 Ti", backend="CUDA", n_gpu_layers=99, offload="full", n_batch=b, **MD_2023)
              for b, _ in MD_2023_BATCH]
        + [run(gpu="CPU only", cpu="13th Gen Intel(R) Core(TM) i9-13900K", backend="CPU", devices="none", offload="none",
               n_threads=t, is_partial_offload=False, **MD_2023) for t, _, _ in MD_2023_THREADS]
        + [run(gpu="NVIDIA GeForce RTX 3090 Ti", backend="CUDA", n_gpu_layers=n, offload="partial",
               is_partial_offload=True, **MD_2023) for n, _, _ in MD_2023_NGL],
        tests=[[("pp1024", "prompt_tps", [v])] for _, v in MD_2023_BATCH]
        + [[("pp64", "prompt_tps", [pp]), ("tg16", "gen_tps", [tg])] for _, pp, tg in MD_2023_THREADS]
        + [[("pp512", "prompt_tps", [pp]), ("tg128", "gen_tps", [tg])] for _, pp, tg in MD_2023_NGL]),
    "llama-bench/llamacpp_readme_2025_b5163.json": Expect(
        runs=[run(gpu="NVIDIA GeForce RTX 4080", cpu="AMD Ryzen 7 7800X3D 8-Core Processor",
                  engine_version="b5163 (8cf427ff)", model_file="Qwen2.5-7B-Instruct-Q4_K_M.gguf",
                  model_name="Qwen2.5-7B-Instruct-Q4_K_M", model_quant="Q4_K - Medium", model_params=7615616512,
                  measured_at="2025-04-24T11:58:50+00:00", backend="CUDA", devices="auto", n_gpu_layers=-1,
                  offload="full", flash_attn="auto", n_batch=2048, n_ubatch=512, n_threads=8, type_k="f16",
                  split_mode="layer", n_cpu_moe=0,
                  extra={"fit_min_ctx": 0, "fit_target": 0, "repack": True})],
        tests=[[("pp512", "prompt_tps", [6863.1, 7147.55, 7136.37, 7115.79, 7237.21]),
                ("tg128", "gen_tps", [119.03, 120.178, 119.43, 118.307, 117.464])]]),
    "llama-bench/llamacpp_readme_2025_b5163.csv": Expect(
        reject=("malformed_payload", "row 1 has 41 values but the header names 42 columns")),
    "llama-bench/llamacpp_readme_2025_depth.md": Expect(
        flags={"gpu": "NVIDIA GeForce RTX 4080"},
        runs=[run(gpu="NVIDIA GeForce RTX 4080", model_name="qwen2 7B Q4_K - Medium", model_quant="Q4_K - Medium",
                  model_params=7_620_000_000, backend="CUDA", n_gpu_layers=-1, offload="full", engine_version=None,
                  measured_at=None)],
        tests=[[("pp512", "prompt_tps", [7340.20]), ("tg128", "gen_tps", [120.60]),
                ("pp512 @ d512", "prompt_tps", [6425.91]), ("tg128 @ d512", "gen_tps", [116.71])]]),
    "llama-bench/lhl_gpt-oss-20b_hip_2025.jsonl": Expect(
        runs=[run(model_file="gpt-oss-20b-F16.gguf", model_quant="F16", measured_at="2025-10-28T18:04:31+00:00",
                  **STRIX)],
        tests=[[("pp512", "prompt_tps", [1472.01]), ("tg128", "gen_tps", [49.9242]),
                ("pp512 @ d1024", "prompt_tps", [1387.58]), ("tg128 @ d1024", "gen_tps", [49.2698])]]),
    "llama-bench/lhl_llama32-1b_hip_depth_2025.jsonl": Expect(
        runs=[run(model_file="Llama-3.2-1B-Instruct-Q4_K_M.gguf", model_quant="Q4_K - Medium",
                  measured_at="2025-10-28T12:54:10+00:00", **STRIX)],
        tests=[[("pp512", "prompt_tps", [4703.28]), ("tg128", "gen_tps", [195.653]),
                ("pp512 @ d1024", "prompt_tps", [4076.03]), ("tg128 @ d1024", "gen_tps", [188.791]),
                ("pp512 @ d4096", "prompt_tps", [2936.89]), ("tg128 @ d4096", "gen_tps", [173.362])]]),
    "llama-bench/lhl_llama2-7b_q4_0_raw_runs_head4.jsonl": Expect(runs=[run(**LLAMA2_AMD)], tests=[LLAMA2_AMD_TESTS]),
    "llama-bench/lhl_llama2-7b_q4_0_results_wrapper_head4.jsonl": Expect(
        runs=[run(power_method="sensor", power_avg_watts=(19.0275 + 22.7166666667 + 29.7825 + 30.0475) / 4,
                  memory_peak_bytes=(147 + 3789) * MIB, **LLAMA2_AMD)],
        tests=[LLAMA2_AMD_TESTS + [("pp1", "power_w", [19.0275] * 5),
                                   ("pp1", "peak_memory_bytes", [(147 + 3756) * MIB] * 5),
                                   ("pp8", "power_w", [30.0475] * 5)]]),
    "llama-bench/lhl_rpc_scaling_vulkan_multi_table.md": Expect(
        runs=[run(devices=d, model_name=m, model_params=p, **RPC) for d, m, p in (
            (None, "gpt-oss 116.83B F16", 116_830_000_000), ("Vulkan0+1 RPC", "gpt-oss 116.83B F16", 116_830_000_000),
            ("Vulkan0+2 RPC", "gpt-oss 116.83B F16", 116_830_000_000),
            ("Vulkan0+3 RPC", "gpt-oss 116.83B F16", 116_830_000_000),
            ("Vulkan0+3 RPC", "gpt-oss 20.91B F16", 20_910_000_000))],
        tests=[[("pp512", "prompt_tps", [pp]), ("tg128", "gen_tps", [tg])]
               for pp, tg in ((404.67, 33.50), (374.82, 28.87), (363.54, 23.02), (368.13, 21.61), (853.47, 27.95))]),
    # ---- llama-bench, written by us in the shape of published files --------------------------
    "llama-bench/ours_cpu_only_2026_new_fields.json": Expect(
        flags={"gpu": "NVIDIA GeForce RTX 4090"},  # the machine's GPU: the run never used it
        runs=[run(gpu="CPU only", gpu_count=None, cpu="AMD Ryzen 9 7950X 16-Core Processor",
                  engine_version="b7412 (b7e9c2a1)", model_quant="Q4_K - Medium", measured_at="2026-03-02T09:14:05+00:00",
                  backend="CPU", devices="none", offload="none", n_gpu_layers=0, flash_attn="auto", n_threads=16,
                  is_cpu_fallback=False, is_partial_offload=False,
                  extra={"load_mode": "mmap", "moe_cache": "auto", "n_gen_warmup": 1, "repack": True})],
        tests=[[("pp512", "prompt_tps", [137.102, 138.485, 137.734]),
                ("tg128", "gen_tps", [21.4545, 21.7414, 21.6443])]]),
    "llama-bench/ours_cuda_init_failed_cpu_fallback.md": Expect(
        runs=[run(gpu="CPU only", engine_version="b5890 (3f4fc97f)", model_name="llama 8B Q4_K - Medium",
                  backend="CUDA,BLAS", devices="none", offload="none", n_gpu_layers=99, is_cpu_fallback=True,
                  measured_at=None)],
        tests=[[("pp512", "prompt_tps", [61.25]), ("tg128", "gen_tps", [9.87])]]),
    "llama-bench/ours_metal_fa_off_on.md": Expect(
        runs=[run(gpu="Apple M4 Max", engine_version="b6890 (0a5a3b5c)", backend="Metal,BLAS", n_threads=12,
                  flash_attn=fa) for fa in ("off", "on")],
        tests=[[("pp512", "prompt_tps", [853.10]), ("tg128", "gen_tps", [62.40])],
               [("pp512", "prompt_tps", [912.55]), ("tg128", "gen_tps", [64.03])]]),
    "llama-bench/ours_two_gpus_then_one.md": Expect(
        runs=[run(gpu="NVIDIA GeForce RTX 3090", gpu_count=2, devices="CUDA0,CUDA1", offload="full"),
              run(gpu="NVIDIA GeForce RTX 3090", gpu_count=None, devices="CUDA0", offload="full")],
        tests=[[("pp512", "prompt_tps", [1312.64]), ("tg128", "gen_tps", [34.18])],
               [("pp512", "prompt_tps", [1205.37]), ("tg128", "gen_tps", [36.02])]]),
    "llama-bench/ours_vulkan_prose_two_models.md": Expect(
        runs=[run(gpu="AMD Radeon Graphics", model_name="llama 3B Q4_K - Medium", engine_version=None),
              run(gpu="AMD Radeon Graphics", model_name="qwen2 7B Q4_K - Medium", engine_version=None)],
        tests=[[("pp512", "prompt_tps", [301.77]), ("tg128", "gen_tps", [27.46])],
               [("pp512", "prompt_tps", [138.90]), ("tg128", "gen_tps", [12.71])]]),
    "llama-bench/ours_wrapper_cmd_rows.json": Expect(
        runs=[run(gpu="NVIDIA GeForce RTX 4070 SUPER", cpu="Intel(R) Core(TM) i7-14700K",
                  engine_version="b6315 (c8dedc99)", model_file="Mistral-7B-Instruct-v0.3-Q5_K_M.gguf",
                  model_quant="Q5_K - Medium", measured_at="2025-09-01T17:02:13+00:00", flash_attn="on",
                  type_k="q8_0", type_v="q8_0", offload="full")],
        tests=[[("pp512", "prompt_tps", [5012.16, 5059.23, 5068.83]),
                ("tg128", "gen_tps", [76.951, 77.146, 77.0566])]]),
    # ---- Ollama ------------------------------------------------------------------------------
    "ollama/attogram_generate_json_qwen2.5vl-7b.txt": Expect(
        flags={"gpu": "NVIDIA GeForce RTX 4070"},
        runs=[run(model_name="qwen2.5vl:7b", engine_name="ollama", measured_at="2025-07-27T14:17:32.514571+00:00")],
        tests=[[("pp28+tg63", "gen_tps", [63 / 1.9865275]), ("pp28+tg63", "prompt_tps", [28 / 0.1583361]),
                ("pp28+tg63", "ttft_ms", [(5454090300 - 3308717100 - 1986527500) / 1e6]),
                ("pp28+tg63", "turn_time_ms", [(5454090300 - 3308717100) / 1e6]),
                ("pp28+tg63", "load_duration_ms", [3308.7171])]]),
    "ollama/attogram_generate_stream_ndjson_dolphin3-8b.txt": Expect(
        flags={"gpu": "NVIDIA GeForce RTX 4070"},
        runs=[run(model_name="dolphin3:8b", measured_at="2025-07-27T14:17:52.540073+00:00")],
        tests=[[("pp31+tg47", "gen_tps", [47 / 2.1085086]), ("pp31+tg47", "prompt_tps", [31 / 0.2161589]),
                ("pp31+tg47", "ttft_ms", [(10515596300 - 8189916700 - 2108508600) / 1e6]),
                ("pp31+tg47", "load_duration_ms", [8189.9167])]]),
    "ollama/ours_api_chat_cold_start.json": Expect(
        flags={"gpu": "Apple M2 Pro"},
        runs=[run(model_name="deepseek-r1:8b", measured_at="2025-02-11T20:40:05.126583+00:00")],
        # 1,201 of the 1,368 ms were the model load: not time to first token
        tests=[[("pp9+tg14", "ttft_ms", [(1368012500 - 1201004583 - 129500000) / 1e6]),
                ("pp9+tg14", "turn_time_ms", [(1368012500 - 1201004583) / 1e6]),
                ("pp9+tg14", "load_duration_ms", [1201.004583]), ("pp9+tg14", "gen_tps", [14 / 0.1295])]]),
    "ollama/ours_verbose_ansi_capture.txt": Expect(
        flags={"gpu": "NVIDIA GeForce RTX 3060", "model": "llama3.2:3b", "measured_at": "2026-01-10T09:00:00Z"},
        runs=[run(model_name="llama3.2:3b", measured_at="2026-01-10T09:00:00+00:00")],
        tests=[[("pp15+tg98", "gen_tps", [98 / 1.932671]), ("pp15+tg98", "prompt_tps", [15 / 0.057812]),
                ("pp15+tg98", "turn_time_ms", [3204.516417 - 1201.883209]),
                ("pp15+tg98", "ttft_ms", [3204.516417 - 1201.883209 - 1932.671]),
                ("pp128+tg89", "gen_tps", [89 / 1.75391]), ("pp128+tg89", "load_duration_ms", [21.36])]]),
    "ollama/ours_verbose_plain_log.log": Expect(
        flags={"gpu": "Apple M1", "model": "gemma3:4b"},
        runs=[run(model_name="gemma3:4b", measured_at=None)],
        tests=[[("pp23+tg701", "gen_tps", [701 / 7.106311]),
                ("pp23+tg701", "ttft_ms", [8412.20513 - 988.11 - 7106.311]),
                ("pp34+tg1122", "gen_tps", [1122 / 11.81177]),
                ("pp34+tg1122", "turn_time_ms", [12088.41 - 20.51])]]),
    # ---- llama-server ------------------------------------------------------------------------
    "llama-server/ours_completion_response.json": Expect(
        flags={"gpu": "NVIDIA GeForce RTX 3060"},
        runs=[run(model_file="Llama-3.2-3B-Instruct-Q6_K.gguf", engine_name="llama.cpp", measured_at=None)],
        tests=[[("pp14+tg64", "prompt_tps", [651.0719434497512]), ("pp14+tg64", "gen_tps", [106.28051413198713]),
                ("pp14+tg64", "ttft_ms", [21.503]), ("pp14+tg64", "turn_time_ms", [21.503 + 602.18])]]),
    "llama-server/ours_openai_chat_with_timings.json": Expect(
        flags={"gpu": "NVIDIA GeForce RTX 4090"},
        runs=[run(model_name="gpt-oss-20b", measured_at="2025-10-15T10:05:11+00:00")],
        tests=[[("pp1024+tg256", "prompt_tps", [5465.939]), ("pp1024+tg256", "gen_tps", [155.9976]),
                ("pp1024+tg256", "turn_time_ms", [187.342 + 1641.052])]]),
    "llama-server/ours_server_log_metal.log": Expect(
        runs=[run(gpu="Apple M5 Max", engine_version="b7003 (a9f4b6e1)",
                  model_file="Qwen3-30B-A3B-Instruct-2507-Q4_K_M.gguf", backend="Metal", devices="MTL0",
                  n_gpu_layers=49, offload="full", measured_at=None)],
        tests=[[("pp2048+tg256", "gen_tps", [256 / 2.7319, 256 / 2.71833]),
                ("pp2048+tg256", "prompt_tps", [2048 / 0.41255, 2048 / 0.4051]),
                ("pp2048+tg256", "ttft_ms", [412.55, 405.10])]]),
    # ---- vLLM --------------------------------------------------------------------------------
    "vllm/lhl_vllm_serve_console_llama2-7b_c1_c8.txt": Expect(
        flags={"gpu": "Radeon 8060S Graphics"},
        runs=[run(model_name="meta-llama/Llama-2-7b-chat-hf", model_repo="meta-llama/Llama-2-7b-chat-hf",
                  concurrency=c, request_rate="inf", client_api="vllm", backend=None, measured_at=None)
              for c in (1, 8)],
        tests=[vllm_console(278, 174, 120.41, 115.68, 22.36, 1), vllm_console(278, 174, 484.12, 135.23, 128.28, 8)]),
    "vllm/lhl_vllm_bench_serve_console_against_llamacpp_q4km_c1.txt": Expect(
        flags={"gpu": "Radeon 8060S Graphics", "engine": "llama.cpp"},
        runs=[run(engine_name="llama.cpp", model_file="llama-2-7b.Q4_K_M.gguf", concurrency=1, client_api="vllm")],
        tests=[vllm_console(37, 163, 88.03, 39.35, 30.39, 1)]),
    "vllm/vllm_readme_benchmark_serving_console.md": Expect(
        flags={"gpu": "NVIDIA A100-SXM4-80GB"},
        runs=[run(model_repo="NousResearch/Hermes-3-Llama-3.1-8B", concurrency=None, request_rate=None,
                  client_api="vllm", measured_at=None)],
        tests=[vllm_console(137, 221, 73.88, 7.96, 619.85, "inf")]),
    "vllm/vllm_readme_benchmark_throughput_console.md": Expect(
        flags={"gpu": "NVIDIA A100-SXM4-80GB"},
        runs=[run(model_repo="NousResearch/Hermes-3-Llama-3.1-8B", protocol_name="vllm-throughput",
                  request_rate="inf")],
        tests=[[("throughput n10", "throughput_tps", [4656.00]), ("throughput n10", "n_prompt", [501]),
                ("throughput n10", "n_gen", [150])]]),
    "vllm/ours_bench_serve_save_result.json": Expect(
        flags={"gpu": "NVIDIA H100 80GB HBM3"},
        runs=[run(model_repo="Qwen/Qwen3-8B", measured_at="2025-11-03T14:25:12+00:00", concurrency=16,
                  request_rate="inf", client_api="openai-chat", backend=None)],
        tests=[[("serve pp1024+tg128 c16", "ttft_ms", [198.71]), ("serve pp1024+tg128 c16", "gen_tps", [1000 / 24.51]),
                ("serve pp1024+tg128 c16", "turn_time_ms", [3316.02]),
                ("serve pp1024+tg128 c16", "is_turn_time_derived", [False])]]),
    "vllm/ours_bench_sweep_concurrency.jsonl": Expect(
        flags={"gpu": "NVIDIA L40S"},
        runs=[run(model_repo="meta-llama/Llama-3.1-8B-Instruct", concurrency=c, client_api="vllm") for c in (1, 4, 16)],
        tests=[[(f"serve pp1024+tg128 c{c}", "ttft_ms", [ttft]), (f"serve pp1024+tg128 c{c}", "gen_tps", [1000 / tpot])]
               for c, ttft, tpot in ((1, 41.2, 11.83), (4, 55.9, 12.72), (16, 131.4, 16.05))]),
    "vllm/ours_bench_throughput.json": Expect(
        flags={"gpu": "NVIDIA A100-SXM4-80GB", "model": "meta-llama/Llama-3.1-8B-Instruct"},
        runs=[run(protocol_name="vllm-throughput", request_rate="inf")],
        tests=[[("throughput n1000 tokens1248391", "throughput_tps", [21441.06]),
                ("throughput n1000 tokens1248391", "gen_tps", [None])]]),
    "vllm/ours_bench_latency.json": Expect(
        flags={"gpu": "NVIDIA A100-SXM4-80GB", "model": "meta-llama/Llama-3.1-8B-Instruct"},
        runs=[run(protocol_name="vllm-latency")],
        tests=[[("latency", "turn_time_ms", [1651.2, 1644.8, 1645.9, 1647.0, 1647.6])]]),
    "vllm/ours_console_commented_block.sh": Expect(
        flags={"gpu": "NVIDIA H100 80GB HBM3"},
        runs=[run(model_repo="Qwen/Qwen2.5-7B-Instruct", concurrency=32, request_rate="inf", client_api=None)],
        tests=[vllm_console(2048, 2048, 6804.15, 66.58, 919.10, 32)]),
}


def _value(parsed, key: str):
    if key in CONFIG_FIELDS:
        return getattr(parsed.config, key)
    if key == "extra":
        return json.loads(parsed.extra_fields) if parsed.extra_fields else {}
    if key == "measured_at":
        return parsed.measured_at.isoformat() if parsed.measured_at else None
    return getattr(parsed, key)


def _same(got, want) -> bool:
    if isinstance(want, float) and got is not None:
        return got == pytest.approx(want, rel=1e-9, abs=1e-9)
    return got == want


def test_the_corpus_is_every_file_with_provenance():
    files = sorted(str(p.relative_to(REAL)) for p in REAL.glob("*/*"))
    assert files == sorted(CORPUS)
    assert len(files) >= 30
    provenance = (REAL / "PROVENANCE.md").read_text(encoding="utf-8")
    for name in files:
        assert f"`{name}`" in provenance, f"{name} has no line in PROVENANCE.md"


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_real_file(name):
    expect = CORPUS[name]
    text = (REAL / name).read_text(encoding="utf-8")
    if expect.reject:
        with pytest.raises(RunRejected) as exc:
            parse_text(text, expect.flags, name=name)
        check, words = expect.reject
        assert (exc.value.check, words in exc.value.reason) == (check, True), exc.value.reason
        return
    runs = parse_text(text, expect.flags, name=name)
    assert len(runs) == len(expect.runs), [(r.model_name, r.config) for r in runs]
    for parsed, want, tests in zip(runs, expect.runs, expect.tests):
        for key, value in want.items():
            got = _value(parsed, key)
            if key == "extra":
                assert {k: got.get(k) for k in value} == value
            else:
                assert _same(got, value), (key, got, value)
        for test_name, column, values in tests:
            got = [getattr(s, column) for s in parsed.samples if s.test_name == test_name]
            assert len(got) == len(values) and all(_same(g, v) for g, v in zip(got, values)), \
                (test_name, column, got, values)
        # no sample of a test the table does not list: nothing pooled from another run
        assert {s.test_name for s in parsed.samples} == {t for t, _, _ in tests}


def test_a_file_lacking_context_names_everything_missing_and_the_command_that_completes_it():
    text = (REAL / "ollama/ours_verbose_ansi_capture.txt").read_text(encoding="utf-8")
    with pytest.raises(RunRejected) as exc:
        parse_text(text)
    assert exc.value.check == "missing_context"
    assert exc.value.reason == ("lacks the GPU name (or CPU only) and the model name: add it with "
                                "`benchwh runs add FILE --gpu 'NAME' --model 'NAME'` or a FILE.meta.json sidecar")


def test_a_file_no_parser_takes_says_what_each_one_found_missing():
    with pytest.raises(RunRejected) as exc:
        parse_text("model,tokens_per_second\nllama3,42.0\n")
    assert exc.value.check == "unknown_format"
    for parser in ("llama-bench", "ollama --verbose", "ollama API", "llama-server JSON", "llama-server log",
                   "vLLM JSON", "vLLM console"):
        assert f"{parser}: " in exc.value.reason


def test_the_whole_corpus_lands_with_its_configuration(home):
    results = []
    for name, expect in CORPUS.items():
        results += add_paths([REAL / name], home, expect.flags)
    status = {r.name: r.status for r in results}
    assert sorted(n for n, s in status.items() if s == "rejected") == sorted(
        Path(n).name for n, e in CORPUS.items() if e.reject)
    # the README's jsonl holds the very measurements of its json: the same run, landed once
    assert [n for n, s in status.items() if s == "duplicate"] == ["llamacpp_readme_2023_b1275.jsonl"]
    imported = [n for n, s in status.items() if s != "rejected"]
    assert len(imported) >= 0.9 * len(CORPUS)
    landing = home / "landing" / "runs"
    con = duckdb.connect()
    runs = con.execute(f"select * from read_parquet('{landing}/runs/*.parquet', union_by_name=true)").fetchdf()
    samples = con.execute(f"select * from read_parquet('{landing}/samples/*.parquet', union_by_name=true)").fetchdf()
    assert len(runs) == sum(len(e.runs) for n, e in CORPUS.items() if not n.endswith("2023_b1275.jsonl"))
    # every sample carries its run's configuration
    by_run = dict(zip(runs["source_run_id"], runs["config_key"]))
    assert all(by_run[r] == c for r, c in zip(samples["source_run_id"], samples["config_key"]))
    cpu = runs[runs["gpu"] == "CPU only"]
    assert set(cpu["offload"]) == {"none"} and cpu["is_cpu_fallback"].sum() == 1
    fallback = runs[runs["is_cpu_fallback"]]
    assert list(fallback["engine_backend"]) == ["CUDA,BLAS"]
    # measured_at only from the files (or --measured-at); received_at beside it, never in its place
    assert runs["received_at"].notna().all()
    md = runs[runs["file_name"].str.endswith(".md")]
    assert len(md) > 20 and md["measured_at"].isna().all()
    dated = runs[runs["measured_at"].notna()]
    assert (dated["measured_at"] < dated["received_at"]).all() and len(dated) >= 15
