"""The pieces of `benchwh bench` that need no server: statistics, probes' parsers, power, text."""
from __future__ import annotations

import json

import pytest

from ingest.measure import machine, power, protocols, recall, text
from ingest.measure.client import base_url, chat_url
from ingest.measure.stats import median_interval, order_statistic_k


# ---- DESIGN §7 interval ------------------------------------------------------------------
@pytest.mark.parametrize("n,k", [(5, None), (6, 1), (8, 1), (9, 2), (10, 2), (11, 2), (12, 3), (20, 6)])
def test_order_statistic_k_matches_the_binomial_rule(n, k):
    assert order_statistic_k(n) == k


def test_interval_for_ten_samples_is_second_and_ninth():
    iv = median_interval([10, 1, 9, 2, 8, 3, 7, 4, 6, 5])
    assert (iv.median, iv.low, iv.high, iv.method) == (5.5, 2, 9, "order-statistic")


def test_interval_for_few_samples_is_min_max_and_marked():
    iv = median_interval([3.0, 1.0, 2.0])
    assert (iv.median, iv.low, iv.high, iv.method) == (2.0, 1.0, 3.0, "min-max")


# ---- endpoint forms ----------------------------------------------------------------------
@pytest.mark.parametrize("given", ["http://h:8080", "http://h:8080/", "http://h:8080/v1",
                                   "http://h:8080/v1/chat/completions"])
def test_endpoint_forms_all_reach_chat_completions(given):
    assert chat_url(given) == "http://h:8080/v1/chat/completions"
    assert base_url(given) == "http://h:8080"


# ---- machine probes: parsers over the tools' real output formats ---------------------------
def test_nvidia_smi_two_gpus():
    g = machine.parse_nvidia_smi("NVIDIA GeForce RTX 4090, 24564\nNVIDIA GeForce RTX 4090, 24564\n")
    assert (g.name, g.count, g.memory_gb) == ("NVIDIA GeForce RTX 4090", 2, 23.99)


def test_nvidia_smi_mixed_gpus_are_named_in_order():
    g = machine.parse_nvidia_smi("NVIDIA GeForce RTX 3090, 24576\nNVIDIA GeForce RTX 3060, 12288\n")
    assert g.name == "NVIDIA GeForce RTX 3090 + NVIDIA GeForce RTX 3060"
    assert g.count == 2 and g.memory_gb == 12.0


def test_rocm_smi_json():
    doc = {"card0": {"Card Series": "Radeon RX 7900 XTX", "Card Model": "0x744c",
                     "VRAM Total Memory (B)": "25753026560", "VRAM Total Used Memory (B)": "1000"},
           "system": {"Driver version": "6.7.0"}}
    g = machine.parse_rocm_smi(json.dumps(doc))
    assert (g.name, g.count, g.memory_gb) == ("Radeon RX 7900 XTX", 1, 23.98)


def test_system_profiler_apple_silicon_uses_unified_memory():
    doc = {"SPDisplaysDataType": [{"_name": "Apple M2 Max", "sppci_model": "Apple M2 Max",
                                   "sppci_cores": "38", "spdisplays_vendor": "sppci_vendor_Apple"}]}
    g = machine.parse_system_profiler(json.dumps(doc), ram_gb=64.0)
    assert (g.name, g.count, g.memory_gb) == ("Apple M2 Max", 1, 64.0)


def test_garbage_from_a_tool_is_no_gpu():
    assert machine.parse_nvidia_smi("") is None
    assert machine.parse_rocm_smi("not json") is None
    assert machine.parse_system_profiler("{}") is None


def test_this_machine_is_described(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no GPU tools: the CPU-only path
    m = machine.probe_machine("DE")
    assert m["gpu"] == machine.CPU_ONLY and "gpu_count" not in m
    assert m["country"] == "DE" and m["ram_gb"] > 0 and m["os"]


@pytest.mark.parametrize("file_name,quant", [
    ("Llama-3.1-8B-Instruct-Q4_K_M.gguf", "Q4_K_M"),
    ("/models/qwen2.5-7b-instruct-q8_0.gguf", "Q8_0"),
    ("Mistral-7B-Instruct-v0.3.IQ3_XS.gguf", "IQ3_XS"),
    ("gemma-2-9b-it-F16.gguf", "F16"),
    ("llama3.1:8b", None),
])
def test_quant_from_file_name(file_name, quant):
    assert machine.quant_from_file(file_name) == quant


def test_llama_server_fingerprint_names_the_engine():
    assert machine.engine_from_fingerprint("b4567-1a2b3c4") == ("llama.cpp", "b4567-1a2b3c4")
    assert machine.engine_from_fingerprint("fp_ollama") is None


# ---- power -------------------------------------------------------------------------------
def test_readings_sum_power_and_memory_over_gpus():
    assert power.parse_readings("150.25, 1000\n99.75, 3000\n") == (250.0, 4000 * 1024 * 1024)
    assert power.parse_readings("[N/A], 1000\n") == (None, 1000 * 1024 * 1024)
    assert power.parse_readings("") == (None, None)


def test_energy_is_the_area_under_the_readings():
    # 100 W from 0 to 2 s, then 300 W from 2 to 4 s
    r = power.summarise([(1.0, 100.0), (2.0, 300.0), (3.0, 300.0)], start=0.0, stop=4.0)
    assert r.energy_j == pytest.approx(800.0)
    assert r.avg_watts == pytest.approx(200.0)
    assert r.as_payload() == {"method": "sensor", "avg_watts": 200.0, "energy_j": 800.0}


def test_no_readings_no_power():
    assert power.summarise([], 0.0, 1.0) is None


# ---- prompts -----------------------------------------------------------------------------
def test_gen_1k_prompt_is_the_same_every_time_and_about_1000_tokens():
    p = protocols.get("gen-1k")
    assert p.messages() == p.messages()
    words = text.word_count(p.messages()[0]["content"])
    assert 0.9 * 1000 <= words * text.DEFAULT_TOKENS_PER_WORD <= 1.1 * 1000
    assert (p.gen_tokens, p.warmup, p.repetitions, p.temperature) == (200, 1, 10, 0.0)


def test_recall_prompt_holds_one_needle_at_the_planned_size():
    import random
    messages, code, depth = recall.build_prompt(8192, 1.0, random.Random(7))
    content = messages[0]["content"]
    assert content.count(code) == 1 and 0.0 <= depth <= 1.0
    assert 0.9 * 8192 <= text.word_count(content) <= 8192


def test_recall_walk_says_why_it_stopped():
    ok, lost = recall.RecallResult(4096, True), recall.RecallResult(8192, False)
    assert recall.RecallWalk([ok, lost], None, None).stopped() == {"reason": "forgot", "at_tokens": 8192}
    assert recall.RecallWalk([ok], 8192, "refused", server_failed=True).stopped() == {
        "reason": "could_not_hold", "at_tokens": 8192}
    assert recall.RecallWalk([ok], 8192, "the server's context is 5000 tokens").stopped() == {
        "reason": "could_not_hold", "at_tokens": 8192}
    assert recall.RecallWalk([ok, recall.RecallResult(8192, True)], None, None).stopped() == {
        "reason": "reached_trained_context", "at_tokens": 8192}
    assert recall.RecallWalk([], None, None).stopped() is None


def test_a_protocol_run_with_other_counts_is_named_for_what_was_run():
    p = protocols.get("gen-1k")
    assert p.with_counts().name == "gen-1k"
    assert p.with_counts(gen_tokens=200, repetitions=10, warmup=1).name == "gen-1k"
    assert p.with_counts(warmup=0, repetitions=3, gen_tokens=20).name == "gen-1k/tg20/r3/w0"
    assert p.with_counts(repetitions=5).name == "gen-1k/r5"
