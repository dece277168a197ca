"""Imports of tool outputs: the real llama-bench files in ../shared/data/local_runs (skipped when
absent) and Ollama / llama-server / vLLM / csv / md outputs written here in their real formats."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest

from ingest.sources.runs.add import add_paths
from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.textutil import go_duration_ms
from tests.helpers.runs import parse_text

REAL = {
    # file -> (format, meta needed)
    "llamabench_json_reserialized__orion-zhen__7900xtx_vulkan-radv_gpt-oss-20b.json": "json",
    "llamabench_json_reserialized__orion-zhen__8060s_rocm-7.12_gpt-oss.json": "json",
    "llamabench_jsonl__lhl_strix-halo__llama-2-7b.Q4_0.raw_runs.head40.jsonl": "jsonl",
    "llamabench_jsonl__lhl_strix-halo__llama32-1b.default-hip.jsonl": "jsonl",
    "wrapped_power_vram__lhl_strix-halo__llama-2-7b.Q4_0.results.head40.jsonl": "wrapped",
}
MD_FILE = "llamabench_md__kyuz0_strix-halo__GLM-4.5-Air_rocm6_4_4.log"
FLASH = {True: "on", False: "off", -1: "auto", None: None}  # 1 and 0 hash as True and False


def records_of(path: Path, fmt: str) -> list[dict]:
    """Read the file independently of the importer: the llama-bench objects it holds."""
    if fmt == "json":
        return json.loads(path.read_text())
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip().startswith("{")]
    return [r["bench_raw"] for r in rows] if fmt == "wrapped" else rows


def _test_name(r: dict) -> str:
    if r["n_prompt"] and r["n_gen"]:
        name = f"pp{r['n_prompt']}+tg{r['n_gen']}"
    else:
        name = f"tg{r['n_gen']}" if r["n_gen"] else f"pp{r['n_prompt']}"
    return name + (f" @ d{r['n_depth']}" if r.get("n_depth") else "")


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_llama_bench_files_import_with_their_values(shared_data, name, home):
    path = shared_data / "local_runs" / name
    if not path.exists():
        pytest.skip(f"{name} absent")
    records = records_of(path, REAL[name])
    results = add_paths([path], home)
    assert [r.status for r in results] == ["accepted"], [r.line() for r in results]

    con = duckdb.connect()
    landing = home / "landing" / "runs"
    runs = con.execute(f"select * from read_parquet('{landing}/runs/[0-9a-f]*.parquet')").fetchdf()
    samples = con.execute(f"""select * from read_parquet('{landing}/samples/[0-9a-f]*.parquet')
                              order by source_run_id, test_index, sample_index""").fetchdf()
    # one run per configuration: records made with flash attention on and off are two runs
    groups: dict[str, list[dict]] = {}
    for rec in records:
        groups.setdefault(FLASH[rec.get("flash_attn")], []).append(rec)
    assert sorted(runs["flash_attn"]) == sorted(groups)
    assert runs["config_key"].nunique() == len(groups)
    for _, run in runs.iterrows():
        group = groups[run["flash_attn"]]
        assert run["source"] == "llama-bench" and run["trust"] == "unverified"
        assert run["model_file"] == group[0]["model_filename"].split("/")[-1]
        assert run["engine_version"] == f"b{group[0]['build_number']} ({group[0]['build_commit']})"
        assert run["gpu"] == group[0]["gpu_info"].split(",")[0].strip()
        assert (run["n_gpu_layers"], run["offload"], run["n_threads"]) == (99, "full", group[0]["n_threads"])
        assert run["measured_at"] == min(datetime.fromisoformat(r["test_time"].replace("Z", "")) for r in group)
        got_run = samples[samples["source_run_id"] == run["source_run_id"]]
        assert set(got_run["config_key"]) == {run["config_key"]}
        # one test per record, one sample per repetition, with the file's values
        assert got_run["test_index"].nunique() == len(group)
        assert len(got_run) == sum(len(r["samples_ts"]) for r in group) == run["n_samples"]
        for i, rec in enumerate(group):
            got = got_run[got_run["test_index"] == i]
            assert set(got["test_name"]) == {_test_name(rec)}
            column = "gen_tps" if rec["n_prompt"] == 0 else "prompt_tps"
            assert list(got[column]) == [float(v) for v in rec["samples_ts"]]
            assert got["measured_at"].iloc[0] == datetime.fromisoformat(rec["test_time"].replace("Z", ""))
    if REAL[name] == "wrapped":
        rows = [json.loads(l) for l in path.read_text().splitlines()]
        first = samples[samples["test_key"] == samples["test_key"].iloc[0]]
        first_row = next(r for r in rows if r["bench_raw"]["test_time"] == records[0]["test_time"]
                         and r["bench_raw"]["n_prompt"] == records[0]["n_prompt"])
        assert first_row["avg_power_w"] in set(samples["power_w"])
        assert (first_row["vram_peak_mib"] + first_row["gtt_peak_mib"]) * 1024 * 1024 in set(samples["peak_memory_bytes"])
        assert len(first) >= 1 and set(runs["power_method"]) == {"sensor"}


def test_real_md_output_reads_the_gpu_from_its_banner_and_keeps_the_table_values(shared_data, home):
    path = shared_data / "local_runs" / MD_FILE
    if not path.exists():
        pytest.skip("md file absent")
    accepted = add_paths([path], home, {"country": "DE"})
    assert accepted[0].status == "accepted", accepted[0].line()
    run, = parse_text(path.read_text())
    # `ggml_cuda_init: found 1 ROCm devices:` / `Device 0: Radeon 8060S Graphics, gfx1151 ...`
    assert run.gpu == "Radeon 8060S Graphics" and run.gpu_count is None
    assert run.engine_version == "b6609 (4807e8f9)" and run.engine_backend == "ROCm"
    assert (run.config.n_gpu_layers, run.config.offload) == (99, "full")
    assert json.loads(run.extra_fields) == {"mmap": "0"}  # a column no mapping knows is kept
    assert run.model_name == "glm4moe 106B.A12B Q4_K - Medium" and run.model_quant == "Q4_K - Medium"
    assert [(s.test_name, s.prompt_tps, s.gen_tps, s.is_test_mean) for s in run.samples] == [
        ("pp512", 126.30, None, True), ("tg128", None, 19.83, True)]
    assert run.measured_at is None  # md has no time: never the time it was added


def test_reserialized_output_counts_once(shared_data, home, tmp_path):
    """The same llama-bench output as jsonl and as a pretty JSON array is one run."""
    src = shared_data / "local_runs" / "llamabench_jsonl__lhl_strix-halo__llama32-1b.default-hip.jsonl"
    if not src.exists():
        pytest.skip("absent")
    records = [json.loads(l) for l in src.read_text().splitlines() if l.strip()]
    pretty = tmp_path / "same-run-pretty.json"
    pretty.write_text("main: loading model\n" + json.dumps(records, indent=4) + "\nllama_perf: done\n")
    first = add_paths([src], home)
    second = add_paths([pretty], home)
    assert first[0].status == "accepted"
    assert second[0].status == "duplicate", second[0].line()
    assert first[0].runs == parse_text(pretty.read_text())[0].source_run_id.split() 


def test_llama_bench_csv_and_old_md_generations():
    csv_text = (
        "build_commit,build_number,cuda,metal,gpu_blas,blas,cpu_info,gpu_info,model_filename,model_type,"
        "model_size,model_n_params,n_batch,n_threads,f16_kv,n_gpu_layers,main_gpu,mul_mat_q,tensor_split,"
        "n_prompt,n_gen,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts\n"
        '"3469684","1275","1","0","1","1","13th Gen Intel(R) Core(TM) i9-13900K","NVIDIA GeForce RTX 3090 Ti",'
        '"models/7B/ggml-model-q4_0.gguf","llama 7B mostly Q4_0","3825065984","6738415616","512","16","1","99",'
        '"0","1","0.00","512","0","2023-09-23T12:09:01Z","212155977","732372","2413.341687","8.305961"\n'
        '"3469684","1275","1","0","1","1","13th Gen Intel(R) Core(TM) i9-13900K","NVIDIA GeForce RTX 3090 Ti",'
        '"models/7B/ggml-model-q4_0.gguf","llama 7B mostly Q4_0","3825065984","6738415616","512","16","1","99",'
        '"0","1","0.00","0","128","2023-09-23T12:09:03Z","972932104","2103254","131.561571","0.284349"\n'
    )
    run, = parse_text("ggml_init_cublas: found 1 CUDA devices\n" + csv_text)
    assert run.engine_backend == "CUDA,GPU BLAS,BLAS" and run.model_quant == "Q4_0"
    assert run.gpu == "NVIDIA GeForce RTX 3090 Ti" and run.engine_version == "b1275 (3469684)"
    assert [(s.test_name, s.prompt_tps, s.gen_tps, s.is_test_mean) for s in run.samples] == [
        ("pp512", 2413.341687, None, True), ("tg128", None, 131.561571, True)]

    md = ("| model                          |       size |     params | backend    | ngl | test       |              t/s |\n"
          "| ------------------------------ | ---------: | ---------: | ---------- | --: | ---------- | ---------------: |\n"
          "| llama 7B mostly Q4_0           |   3.56 GiB |     6.74 B | CUDA       |  99 | pp 512     |  2368.80 ± 93.24 |\n"
          "| llama 7B mostly Q4_0           |   3.56 GiB |     6.74 B | CUDA       |  99 | tg 128     |    131.42 ± 0.59 |\n"
          "| llama 7B mostly Q4_0           |   3.56 GiB |     6.74 B | CUDA       |  99 | pp512 @ d4096 |  1500.00 ± 1.00 |\n"
          "\nbuild: 3469684 (1275)\n")
    run, = parse_text(md, {"gpu": "RTX 3090 Ti"})
    assert [s.test_name for s in run.samples] == ["pp512", "tg128", "pp512 @ d4096"]
    assert run.model_params == 6_740_000_000 and run.gpu == "RTX 3090 Ti"


def test_go_durations():
    assert go_duration_ms("2m43.589s") == pytest.approx(163589.0)
    assert go_duration_ms("97.885315ms") == pytest.approx(97.885315)
    assert go_duration_ms("850µs") == pytest.approx(0.85)
    assert go_duration_ms("1h2m3s") == pytest.approx(3723000.0)
    assert go_duration_ms("120ns") == pytest.approx(0.00012)
    with pytest.raises(RunRejected):
        go_duration_ms("5 parsecs")
    with pytest.raises(RunRejected):
        go_duration_ms("-3s")


OLLAMA_FINAL = {
    "model": "llama3.2:3b", "created_at": "2026-01-15T11:22:45.499127+01:00", "response": "", "done": True,
    "done_reason": "stop", "context": [1, 2, 3], "total_duration": 5_043_500_667, "load_duration": 5_025_959,
    "prompt_eval_count": 26, "prompt_eval_duration": 325_953_000, "eval_count": 290,
    "eval_duration": 4_709_213_000,
}


def test_ollama_api_final_responses_each_a_repetition():
    second = {**OLLAMA_FINAL, "eval_duration": 4_800_000_000, "created_at": "2026-01-15T10:23:00Z"}
    stream = "\n".join(json.dumps(x) for x in (
        {"model": "llama3.2:3b", "created_at": "2026-01-15T10:22:40Z", "response": "The", "done": False},
        OLLAMA_FINAL, second))
    run, = parse_text(stream, {"gpu": "Apple M2 Max"})
    assert run.source == "ollama" and run.model_name == "llama3.2:3b"
    assert run.created_at == datetime(2026, 1, 15, 10, 22, 45, 499127, tzinfo=timezone.utc)
    a, b = run.samples
    assert a.test_name == b.test_name == "pp26+tg290" and (a.sample_index, b.sample_index) == (0, 1)
    assert a.gen_tps == pytest.approx(290 / 4.709213)
    assert a.prompt_tps == pytest.approx(26 / 0.325953)
    # the model load is kept apart, out of TTFT and turn time
    assert a.ttft_ms == pytest.approx((5_043_500_667 - 5_025_959 - 4_709_213_000) / 1e6)
    assert a.turn_time_ms == pytest.approx((5_043_500_667 - 5_025_959) / 1e6)
    assert a.load_duration_ms == pytest.approx(5.025959)
    with pytest.raises(RunRejected) as exc:
        parse_text(json.dumps(OLLAMA_FINAL))
    assert exc.value.check == "missing_gpu"


def test_ollama_verbose_text():
    text = """>>> why is the sky blue?
The sky appears blue because of Rayleigh scattering.

total duration:       2m43.589s
load duration:        850µs
prompt eval count:    26 token(s)
prompt eval duration: 97.885315ms
prompt eval rate:     265.62 tokens/s
eval count:           298 token(s)
eval duration:        2m43.4s
eval rate:            1.82 tokens/s
>>> again
total duration:       1.5s
load duration:        1ms
prompt eval count:    26 token(s)
prompt eval duration: 100ms
prompt eval rate:     260.00 tokens/s
eval count:           298 token(s)
eval duration:        1.3s
eval rate:            229.23 tokens/s
"""
    with pytest.raises(RunRejected) as exc:
        parse_text(text, {"gpu": "RTX 4090"})
    assert exc.value.check == "missing_model"
    run, = parse_text(text, {"gpu": "RTX 4090", "model": "llama3.2:3b", "created_at": "2026-01-15T10:00:00Z"})
    assert run.source == "ollama" and len(run.samples) == 2
    s0 = run.samples[0]
    assert s0.gen_tps == pytest.approx(298 / 163.4)
    assert s0.prompt_tps == pytest.approx(26 / 0.097885315)
    assert s0.turn_time_ms == pytest.approx(163589.0 - 0.85)  # load duration 850µs kept apart
    assert s0.ttft_ms == pytest.approx(163589.0 - 0.85 - 163400.0) and s0.load_duration_ms == pytest.approx(0.85)
    assert run.measured_at == datetime(2026, 1, 15, 10, 0, tzinfo=timezone.utc)


def test_llama_server_timings():
    responses = [
        {"id": "chatcmpl-1", "object": "chat.completion", "created": 1768471200,
         "model": "/models/Qwen2.5-7B-Instruct-Q4_K_M.gguf",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "length"}],
         "usage": {"completion_tokens": 128, "prompt_tokens": 512, "total_tokens": 640},
         "timings": {"prompt_n": 512, "prompt_ms": 95.2, "prompt_per_token_ms": 0.186,
                     "prompt_per_second": 5378.15, "predicted_n": 128, "predicted_ms": 1012.5,
                     "predicted_per_token_ms": 7.91, "predicted_per_second": 126.42}},
    ]
    run, = parse_text(json.dumps(responses[0], indent=2), {"gpu": "RTX 4070"})
    assert run.source == "llama-server" and run.model_file == "Qwen2.5-7B-Instruct-Q4_K_M.gguf"
    s, = run.samples
    assert (s.test_name, s.n_prompt, s.n_gen) == ("pp512+tg128", 512, 128)
    assert (s.prompt_tps, s.gen_tps, s.ttft_ms) == (5378.15, 126.42, 95.2)
    assert s.turn_time_ms == pytest.approx(95.2 + 1012.5)
    assert run.created_at == datetime(2026, 1, 15, 10, 0, tzinfo=timezone.utc)


def test_vllm_bench_serve_result_detailed_and_aggregate():
    detailed = {"date": "20260115-100000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
                "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 3, "request_rate": "inf",
                "max_concurrency": 1, "duration": 4.2, "completed": 2, "total_input_tokens": 2048,
                "total_output_tokens": 256, "request_throughput": 0.47, "output_throughput": 61.0,
                "total_token_throughput": 548.0, "mean_ttft_ms": 55.0, "median_ttft_ms": 55.0,
                "median_tpot_ms": 10.0, "median_e2el_ms": 1325.0,
                "input_lens": [1024, 1024, 1024], "output_lens": [128, 128, 0], "ttfts": [0.05, 0.06, 0.0],
                "itls": [[0.01] * 127, [0.02] * 127, []], "generated_texts": ["a", "b", ""],
                "errors": ["", "", "Timeout"]}
    run, = parse_text(json.dumps(detailed), {"gpu": "H100 80GB", "country": "US"})
    assert run.source == "vllm" and run.model_repo == "meta-llama/Llama-3.1-8B-Instruct"
    assert len(run.samples) == 2  # the failed request has no timing
    a, b = run.samples
    assert a.test_name == "serve pp1024+tg128 c1"
    assert a.gen_tps == pytest.approx(127 / 1.27) and b.gen_tps == pytest.approx(127 / 2.54)
    assert a.ttft_ms == pytest.approx(50.0) and a.turn_time_ms == pytest.approx(50.0 + 1270.0)
    assert run.country == "US"

    aggregate = {k: v for k, v in detailed.items() if k not in ("input_lens", "output_lens", "ttfts", "itls",
                                                                  "generated_texts", "errors")}
    run, = parse_text(json.dumps(aggregate), {"gpu": "H100 80GB"})
    s, = run.samples
    assert s.is_test_mean and s.gen_tps == pytest.approx(100.0) and s.ttft_ms == 55.0
    assert s.turn_time_ms == 1325.0 and (s.n_prompt, s.n_gen) == (1024, 128)


def test_sql_looking_names_are_stored_verbatim(home, tmp_path):
    name = "'); DROP TABLE runs; --"
    body = json.dumps({**OLLAMA_FINAL, "model": name})
    path = tmp_path / "ollama.json"
    path.write_text(body)
    (tmp_path / "ollama.json.meta.json").write_text(json.dumps({"gpu": "x\" OR 1=1 --", "country": "FR"}))
    res = add_paths([path], home)
    assert res[0].status == "accepted", res[0].line()
    got = duckdb.sql(f"select model_name, gpu, country from read_parquet('{home}/landing/runs/runs/[0-9a-f]*.parquet')").fetchall()
    assert got == [(name, "x\" OR 1=1 --", "FR")]
