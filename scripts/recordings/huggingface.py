"""Writes ingest/snapshots/huggingface/: the offline recording of the Hugging Face Hub (output is stable).

    .venv/bin/python -m scripts.recordings.huggingface

Written by us in the Hub API's real shapes: tree entries are
`{"type": "file", "oid": <git blob sha1>, "size": n, "path": p, "lfs": {"oid": <sha256>, "size": n,
"pointerSize": k}}` and listings page with `Link: <next>; rel="next"`. Each repository lists only
the files whose exact size we could verify from published references (the real repos hold more
quantizations); sha256 values are given where published, and the git blob oid is then derived from
the LFS pointer exactly as git does. Config values are the models' real architecture numbers.
"""
from __future__ import annotations

import hashlib
import json

from ingest.config import snapshots_dir

HERE = snapshots_dir() / "huggingface"
BASE = "https://huggingface.co"
FETCHED_AT = "2026-11-28T06:00:00Z"

# repo -> [(path, size_bytes, sha256 or None)]
TREES = {
    "bartowski/Llama-3.2-1B-Instruct-GGUF": [
        ("Llama-3.2-1B-Instruct-f16.gguf", 2479595360, None),
        ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", 807694464,
         "6f85a640a97cf2bf5b8e764087b1e83da0fdb51d7c9fab7d0fece9385611df83"),
        ("Llama-3.2-1B-Instruct-Q8_0.gguf", 1321082528, None),
    ],
    "bartowski/Llama-3.2-3B-Instruct-GGUF": [
        ("Llama-3.2-3B-Instruct-Q4_K_M.gguf", 2019377696,
         "6c1a2b41161032677be168d354123594c0e6e67d2b9227c84f296ad037c728ff"),
    ],
    "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF": [
        ("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", 4920739232, None),
    ],
    "bartowski/Qwen2.5-3B-Instruct-GGUF": [("Qwen2.5-3B-Instruct-Q4_K_M.gguf", 1929903264, None)],
    "bartowski/Qwen2.5-7B-Instruct-GGUF": [("Qwen2.5-7B-Instruct-Q4_K_M.gguf", 4683074240, None)],
    "bartowski/Qwen2.5-14B-Instruct-GGUF": [("Qwen2.5-14B-Instruct-Q4_K_M.gguf", 8988110976, None)],
    "bartowski/Qwen2.5-32B-Instruct-GGUF": [("Qwen2.5-32B-Instruct-Q4_K_M.gguf", 19851336576, None)],
    "Qwen/Qwen2.5-0.5B-Instruct-GGUF": [
        ("qwen2.5-0.5b-instruct-q4_k_m.gguf", 491400032,
         "74a4da8c9fdbcd15bd1f6d01d621410d31c6fc00986f5eb687824e7b93d7a9db"),
    ],
    "Qwen/Qwen2.5-1.5B-Instruct-GGUF": [
        ("qwen2.5-1.5b-instruct-q4_k_m.gguf", 1117320736,
         "6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e"),
    ],
    "Qwen/Qwen2.5-3B-Instruct-GGUF": [
        ("qwen2.5-3b-instruct-q4_k_m.gguf", 2104932768,
         "626b4a6678b86442240e33df819e00132d3ba7dddfe1cdc4fbb18e0a9615c62d"),
    ],
    "ggml-org/gemma-3-1b-it-GGUF": [
        ("gemma-3-1b-it-Q4_K_M.gguf", 806058240,
         "8ccc5cd1f1b3602548715ae25a66ed73fd5dc68a210412eea643eb20eb75a135"),
    ],
    "ggml-org/gemma-3-4b-it-GGUF": [
        ("gemma-3-4b-it-Q4_K_M.gguf", 2489757856,
         "882e8d2db44dc554fb0ea5077cb7e4bc49e7342a1f0da57901c0802ea21a0863"),
    ],
    "bartowski/Mistral-7B-Instruct-v0.3-GGUF": [("Mistral-7B-Instruct-v0.3-Q4_K_M.gguf", 4372812000, None)],
    "bartowski/Phi-3.5-mini-instruct-GGUF": [("Phi-3.5-mini-instruct-Q4_K_M.gguf", 2393232672, None)],
}
# This repo's listing is recorded as two pages to exercise the Link header.
PAGED = {"bartowski/Llama-3.2-1B-Instruct-GGUF": 2}


def llama(layers, hidden, heads, kv, inter, head_dim=None, tie=False, factor=8.0, vocab=128256):
    cfg = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
           "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
           "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter,
           "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
           "num_attention_heads": heads, "num_hidden_layers": layers, "num_key_value_heads": kv,
           "pretraining_tp": 1, "rms_norm_eps": 1e-05,
           "rope_scaling": {"factor": factor, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                            "original_max_position_embeddings": 8192, "rope_type": "llama3"},
           "rope_theta": 500000.0, "tie_word_embeddings": tie, "torch_dtype": "bfloat16",
           "transformers_version": "4.45.0.dev0", "use_cache": True, "vocab_size": vocab}
    if head_dim:
        cfg["head_dim"] = head_dim
    return cfg


def qwen2(layers, hidden, heads, kv, inter, tie, vocab):
    return {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
            "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02,
            "intermediate_size": inter, "max_position_embeddings": 32768, "max_window_layers": layers,
            "model_type": "qwen2", "num_attention_heads": heads, "num_hidden_layers": layers,
            "num_key_value_heads": kv, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
            "sliding_window": 131072, "tie_word_embeddings": tie, "torch_dtype": "bfloat16",
            "transformers_version": "4.43.1", "use_cache": True, "use_sliding_window": False,
            "vocab_size": vocab}


CONFIGS = {
    "meta-llama/Llama-3.2-1B-Instruct": llama(16, 2048, 32, 8, 8192, head_dim=64, tie=True, factor=32.0),
    "meta-llama/Llama-3.2-3B-Instruct": llama(28, 3072, 24, 8, 8192, head_dim=128, tie=True, factor=32.0),
    "meta-llama/Llama-3.1-8B-Instruct": llama(32, 4096, 32, 8, 14336),
    "Qwen/Qwen2.5-0.5B-Instruct": qwen2(24, 896, 14, 2, 4864, True, 151936),
    "Qwen/Qwen2.5-1.5B-Instruct": qwen2(28, 1536, 12, 2, 8960, True, 151936),
    "Qwen/Qwen2.5-3B-Instruct": qwen2(36, 2048, 16, 2, 11008, True, 151936),
    "Qwen/Qwen2.5-7B-Instruct": qwen2(28, 3584, 28, 4, 18944, False, 152064),
    "Qwen/Qwen2.5-14B-Instruct": qwen2(48, 5120, 40, 8, 13824, False, 152064),
    "Qwen/Qwen2.5-32B-Instruct": qwen2(64, 5120, 40, 8, 27648, False, 152064),
    "google/gemma-3-1b-it": {
        "architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "attn_logit_softcapping": None, "bos_token_id": 2, "eos_token_id": [1, 106],
        "final_logit_softcapping": None, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 1152, "initializer_range": 0.02, "intermediate_size": 6912,
        "max_position_embeddings": 32768, "model_type": "gemma3_text", "num_attention_heads": 4,
        "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
        "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
        "rope_scaling": None, "rope_theta": 1000000, "sliding_window": 512,
        "sliding_window_pattern": 6, "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
        "use_cache": True, "vocab_size": 262144},
    # The language model of Gemma 3 4B sits in text_config (the real file leaves the defaults
    # num_attention_heads 8, num_key_value_heads 4, head_dim 256 and 131072 positions implicit;
    # we write them out).
    "google/gemma-3-4b-it": {
        "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
        "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
        "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
        "text_config": {"head_dim": 256, "hidden_size": 2560, "intermediate_size": 10240,
                        "max_position_embeddings": 131072, "model_type": "gemma3_text",
                        "num_attention_heads": 8, "num_hidden_layers": 34, "num_key_value_heads": 4,
                        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
        "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
        "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                          "model_type": "siglip_vision_model", "num_attention_heads": 16,
                          "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": False}},
    "mistralai/Mistral-7B-Instruct-v0.3": {
        "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
        "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
        "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": None,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.42.0.dev0",
        "use_cache": True, "vocab_size": 32768},
    "microsoft/Phi-3.5-mini-instruct": {
        "architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 32000, "hidden_act": "silu",
        "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 8192,
        "max_position_embeddings": 131072, "model_type": "phi3", "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
        "pad_token_id": 32000, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
        "sliding_window": 262144, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "transformers_version": "4.43.3", "use_cache": True, "vocab_size": 32064},
}


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


def git_blob_oid(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def tree_entry(path: str, size: int, sha256: str | None) -> dict:
    lfs = {"size": size, "pointerSize": 0}
    entry = {"type": "file", "size": size, "path": path}
    if sha256:
        pointer = lfs_pointer(sha256, size)
        lfs = {"oid": sha256, "size": size, "pointerSize": len(pointer)}
        entry = {"type": "file", "oid": git_blob_oid(pointer), "size": size, "path": path}
    else:
        # pointer length only depends on the size's digits
        lfs["pointerSize"] = len(lfs_pointer("0" * 64, size))
    entry["lfs"] = lfs
    return entry


def slug(text: str) -> str:
    return text.replace("/", "__")


def main() -> None:
    for old in HERE.glob("*.json"):
        old.unlink()
    index = []
    for repo, files in TREES.items():
        entries = [tree_entry(p, s, h) for p, s, h in files]
        first_url = f"{BASE}/api/models/{repo}/tree/main?recursive=true"
        cut = PAGED.get(repo)
        pages = [entries[:cut], entries[cut:]] if cut else [entries]
        url = first_url
        for n, page in enumerate(pages, 1):
            name = f"tree__{slug(repo)}__p{n}.json"
            (HERE / name).write_text(json.dumps(page, indent=1) + "\n", encoding="utf-8")
            headers = {"content-type": "application/json; charset=utf-8"}
            next_url = None
            if n < len(pages):
                next_url = f"{first_url}&cursor=ZXlKbWFXeGxYMjVoYldVaU9pSk1iR0Z0WVMwekxqSXRNVUl0U1c1emRISjFZM1F0VVRSZlMxOU5MbWRuZFdZaWZRPT0"
                headers["link"] = f'<{next_url}>; rel="next"'
            index.append({"url": url, "fetched_at": FETCHED_AT, "status": 200, "headers": headers, "file": name})
            url = next_url
    for repo, cfg in CONFIGS.items():
        name = f"config__{slug(repo)}.json"
        (HERE / name).write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
        index.append({"url": f"{BASE}/{repo}/resolve/main/config.json", "fetched_at": FETCHED_AT,
                      "status": 200, "headers": {"content-type": "text/plain; charset=utf-8"}, "file": name})
    hub_resolution_recordings(index)
    (HERE / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")



# ---- Hub model resolution (issue 15): model info of the repos runs name ----------------------
# SYNTHETIC recordings in the real shape of GET /api/models/<repo> (cardData.base_model,
# cardData.license, tags, safetensors.total, gguf.total/architecture/context_length, config):
# the generation leaderboard of ../shared/reference-pages/ names models newer than any
# published numbers we hold (Ling 3.0, Gemma 4, Bonsai, Granite 4.2, Ministral 3, Qwen 3.5), so
# their repos, cards, configs and file sizes are invented to be consistent with that page. The
# Llama and SmolLM2 entries carry their real architecture numbers and parameter counts.
HUB_FETCHED_AT = "2026-11-29T06:00:00Z"

# original model repo -> (licence, params, config, card base_model or None, relation, gated)
HUB_MODELS = {
    "HuggingFaceTB/SmolLM2-1.7B-Instruct": ("apache-2.0", 1711376384, {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
        "intermediate_size": 8192, "num_attention_heads": 32, "num_hidden_layers": 24,
        "num_key_value_heads": 32, "max_position_embeddings": 8192, "rms_norm_eps": 1e-05,
        "rope_theta": 130000, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "vocab_size": 49152},
        "HuggingFaceTB/SmolLM2-1.7B", "finetune", False),
    "meta-llama/Llama-3.2-3B-Instruct": ("llama3.2", 3212749824, None, None, None, True),
    "meta-llama/Llama-3.1-8B-Instruct": ("llama3.1", 8030261248, None, None, None, True),
    "mlabonne/Llama-3.2-3B-Instruct-abliterated": ("llama3.2", 3212749824, {
        **llama(28, 3072, 24, 8, 8192, head_dim=128, tie=True, factor=32.0)},
        "meta-llama/Llama-3.2-3B-Instruct", "finetune", False),
    "inclusionAI/Ling-3.0-Tiny": ("mit", 2610000000, {
        "architectures": ["BailingMoeV2ForCausalLM"], "model_type": "bailing_moe_v2", "hidden_size": 2048,
        "num_attention_heads": 16, "num_hidden_layers": 20, "num_key_value_heads": 4, "head_dim": 128,
        "num_experts": 64, "num_experts_per_tok": 4, "max_position_embeddings": 32768,
        "torch_dtype": "bfloat16", "vocab_size": 157184}, None, None, False),
    "google/gemma-4-E2B-it-qat": ("gemma", 5102000000, None, "google/gemma-4-E2B-it", "finetune", True),
    "google/gemma-4-E2B-it": ("gemma", 5102000000, {
        "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
        "text_config": {"model_type": "gemma4_text", "hidden_size": 2048, "num_attention_heads": 8,
                        "num_hidden_layers": 30, "num_key_value_heads": 2, "head_dim": 256,
                        "max_position_embeddings": 131072, "sliding_window": 512},
        "torch_dtype": "bfloat16"}, None, None, True),
    "google/gemma-4-E4B-it": ("gemma", 7940000000, {
        "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
        "text_config": {"model_type": "gemma4_text", "hidden_size": 2560, "num_attention_heads": 8,
                        "num_hidden_layers": 35, "num_key_value_heads": 2, "head_dim": 256,
                        "max_position_embeddings": 131072, "sliding_window": 512},
        "torch_dtype": "bfloat16"}, None, None, True),
    "prism-ml/Bonsai-8B": ("apache-2.0", 8190735360, {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
        "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8, "head_dim": 128,
        "max_position_embeddings": 65536, "torch_dtype": "bfloat16", "vocab_size": 151936}, None, None, False),
    "ibm-granite/granite-4.2-3b-instruct": ("apache-2.0", 3400000000, {
        "architectures": ["GraniteForCausalLM"], "model_type": "granite", "hidden_size": 2560,
        "num_attention_heads": 40, "num_hidden_layers": 40, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "torch_dtype": "bfloat16", "vocab_size": 100352}, None, None, False),
    "ibm-granite/granite-4.2-8b-instruct": ("apache-2.0", 8170000000, {
        "architectures": ["GraniteForCausalLM"], "model_type": "granite", "hidden_size": 4096,
        "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "torch_dtype": "bfloat16", "vocab_size": 100352}, None, None, False),
    "mistralai/Ministral-3-3B-Instruct-2512": ("apache-2.0", 3850000000, {
        "architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
        "text_config": {"model_type": "ministral3", "hidden_size": 3072, "num_attention_heads": 32,
                        "num_hidden_layers": 26, "num_key_value_heads": 8, "head_dim": 128,
                        "max_position_embeddings": 262144},
        "torch_dtype": "bfloat16"}, None, None, False),
    "mistralai/Ministral-3-8B-Instruct-2512": ("apache-2.0", 8920000000, {
        "architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
        "text_config": {"model_type": "ministral3", "hidden_size": 4096, "num_attention_heads": 32,
                        "num_hidden_layers": 34, "num_key_value_heads": 8, "head_dim": 128,
                        "max_position_embeddings": 262144},
        "torch_dtype": "bfloat16"}, None, None, False),
    "Qwen/Qwen3.5-4B": ("apache-2.0", 4510000000, {
        "architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5", "hidden_size": 2560,
        "num_attention_heads": 16, "num_hidden_layers": 32, "num_key_value_heads": 4, "head_dim": 256,
        "max_position_embeddings": 262144, "torch_dtype": "bfloat16", "vocab_size": 248320}, None, None, False),
}

# GGUF repo -> (the model it quantizes, gguf architecture, [(file, size_bytes)])
HUB_GGUF_REPOS = {
    "bartowski/SmolLM2-1.7B-Instruct-GGUF": ("HuggingFaceTB/SmolLM2-1.7B-Instruct", "llama",
                                             [("SmolLM2-1.7B-Instruct-Q4_K_M.gguf", 1055609824)]),
    "bartowski/Llama-3.2-3B-Instruct-GGUF": ("meta-llama/Llama-3.2-3B-Instruct", "llama", []),
    "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF": ("meta-llama/Llama-3.1-8B-Instruct", "llama", []),
    "mlabonne/Llama-3.2-3B-Instruct-abliterated-GGUF": (
        "mlabonne/Llama-3.2-3B-Instruct-abliterated", "llama",
        [("llama-3.2-3b-instruct-abliterated.Q4_K_M.gguf", 2019377824)]),
    "inclusionAI/Ling-3.0-Tiny-GGUF": ("inclusionAI/Ling-3.0-Tiny", "bailingmoe2",
                                       [("Ling-3.0-Tiny-Q4_K_M.gguf", 1613000000)]),
    "unsloth/gemma-4-E2B-it-qat-GGUF": ("google/gemma-4-E2B-it-qat", "gemma4",
                                        [("gemma-4-E2B-it-qat-UD-Q4_K_XL.gguf", 3018000000)]),
    "ggml-org/gemma-4-E4B-it-GGUF": ("google/gemma-4-E4B-it", "gemma4",
                                     [("gemma-4-E4B-it-Q4_K_M.gguf", 4977000000)]),
    "prism-ml/Bonsai-8B-GGUF": ("prism-ml/Bonsai-8B", "qwen3",
                                [("Bonsai-8B-Q1_0.gguf", 1163000000), ("Bonsai-8B-Q2_0.gguf", 2176000000)]),
    "ibm-granite/granite-4.2-3b-instruct-GGUF": ("ibm-granite/granite-4.2-3b-instruct", "granite",
                                                 [("granite-4.2-3b-instruct-Q4_K_M.gguf", 2101000000)]),
    "ibm-granite/granite-4.2-8b-instruct-GGUF": ("ibm-granite/granite-4.2-8b-instruct", "granite",
                                                 [("granite-4.2-8b-instruct-Q4_K_M.gguf", 4942000000)]),
    "mistralai/Ministral-3-3B-Instruct-2512-GGUF": ("mistralai/Ministral-3-3B-Instruct-2512", "mistral3",
                                                    [("Ministral-3-3B-Instruct-2512-Q4_K_M.gguf", 2147000000)]),
    "mistralai/Ministral-3-8B-Instruct-2512-GGUF": ("mistralai/Ministral-3-8B-Instruct-2512", "mistral3",
                                                    [("Ministral-3-8B-Instruct-2512-Q4_K_M.gguf", 5200000000)]),
    "unsloth/Qwen3.5-4B-GGUF": ("Qwen/Qwen3.5-4B", "qwen35", [("Qwen3.5-4B-Q4_K_M.gguf", 2740000000)]),
}


def _text_ctx(cfg: dict | None) -> int | None:
    if not cfg:
        return None
    return (cfg.get("text_config") or {}).get("max_position_embeddings") or cfg.get("max_position_embeddings")


def model_info_body(repo: str, *, license_: str, card_base: str | None, relation: str | None, tags: list[str],
                    library: str, gated: bool, config: dict | None, safetensors_total: int | None = None,
                    gguf: dict | None = None) -> dict:
    """GET /api/models/<repo> as the Hub answers it (fields this project reads, plus the usual ones)."""
    card = {"license": license_, "library_name": library, "pipeline_tag": "text-generation"}
    if card_base:
        card["base_model"] = card_base
        card["base_model_relation"] = relation
    body = {"_id": hashlib.sha1(repo.encode()).hexdigest()[:24], "id": repo, "modelId": repo,
            "author": repo.split("/")[0], "sha": hashlib.sha1(b"sha" + repo.encode()).hexdigest(),
            "lastModified": "2026-11-20T12:00:00.000Z", "private": False, "disabled": False,
            "gated": "manual" if gated else False, "downloads": 0, "likes": 0, "library_name": library,
            "tags": tags, "pipeline_tag": "text-generation", "createdAt": "2026-11-01T12:00:00.000Z",
            "cardData": card}
    if config:
        body["config"] = {"architectures": config.get("architectures", []), "model_type": config.get("model_type")}
    if safetensors_total:
        body["safetensors"] = {"parameters": {"BF16": safetensors_total}, "total": safetensors_total}
    if gguf:
        body["gguf"] = gguf
    return body


def hub_resolution_recordings(index: list[dict]) -> None:
    """Model infos (+ the listings and configs not recorded above) of the Hub-resolution repos."""
    def record(url: str, name: str, body: dict, content_type: str = "application/json; charset=utf-8") -> None:
        (HERE / name).write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        etag = 'W/"' + hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()[:20] + '"'
        index.append({"url": url, "fetched_at": HUB_FETCHED_AT, "status": 200,
                      "headers": {"content-type": content_type, "etag": etag}, "file": name})

    for repo, (license_, params, cfg, card_base, relation, gated) in HUB_MODELS.items():
        cfg = cfg or CONFIGS.get(repo)
        tags = ["transformers", "safetensors", (cfg or {}).get("model_type") or "llama", "text-generation",
                f"license:{license_}"]
        if card_base:
            tags.append(f"base_model:{card_base}")
            tags.append(f"base_model:{relation}:{card_base}")
        record(f"{BASE}/api/models/{repo}", f"info__{slug(repo)}.json",
               model_info_body(repo, license_=license_, card_base=card_base, relation=relation, tags=tags,
                               library="transformers", gated=gated, config=cfg, safetensors_total=params))
        if repo not in CONFIGS and cfg:
            record(f"{BASE}/{repo}/resolve/main/config.json", f"config__{slug(repo)}.json", cfg,
                   "text/plain; charset=utf-8")
    for repo, (base, arch, files) in HUB_GGUF_REPOS.items():
        license_, params, cfg, *_ = HUB_MODELS[base]
        cfg = cfg or CONFIGS.get(base)
        tags = ["gguf", arch, "text-generation", f"base_model:{base}", f"base_model:quantized:{base}",
                f"license:{license_}", "endpoints_compatible", "region:us", "conversational"]
        gguf = {"total": params, "architecture": arch, "context_length": _text_ctx(cfg),
                "bos_token": "<s>", "eos_token": "</s>"}
        record(f"{BASE}/api/models/{repo}", f"info__{slug(repo)}.json",
               model_info_body(repo, license_=license_, card_base=base, relation="quantized", tags=tags,
                               library="gguf", gated=False, config=None, gguf=gguf))
        if repo not in TREES and files:
            name = f"tree__{slug(repo)}__p1.json"
            entries = [tree_entry(p, s, None) for p, s in files]
            record(f"{BASE}/api/models/{repo}/tree/main?recursive=true", name, entries)


if __name__ == "__main__":
    main()
