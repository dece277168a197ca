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
    (HERE / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
