"""Write the example run files in docs/examples/ (rerun after changing the payload):
    .venv/bin/python docs/examples/_make_examples.py

run-payload.json is what you write (or `benchwh bench` measures); run.dsse.json is what
`benchwh runs sign run-payload.json --key example_ed25519.pem` makes of it. The key is a demo
key, published here and trusted by nobody: generate your own with `benchwh keys generate`.
"""
from __future__ import annotations

import base64
import json
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ingest.sources.runs import dsse

HERE = Path(__file__).resolve().parent
DEMO_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))

PAYLOAD = {
    "schema": "benchwh.run/1",
    "submission_id": "0b6a3f1e-5c2d-4e8f-9a71-3d2c1b0a9e87",
    "created_at": "2026-11-20T09:30:00Z",
    "machine": {"gpu": "NVIDIA GeForce RTX 4090", "gpu_count": 1, "gpu_memory_gb": 24,
                "cpu": "AMD Ryzen 9 7950X", "ram_gb": 64, "os": "Ubuntu 24.04", "country": "DE"},
    "engine": {"name": "llama.cpp", "version": "b6200", "backend": "CUDA"},
    "model": {"name": "Llama 3.1 8B Instruct", "repo": "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
              "file": "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "quant": "Q4_K_M",
              "file_size_bytes": 4920734016},
    # the gen-1k protocol as `benchwh bench` runs it: 1 warm-up (not recorded), 10 repetitions
    "protocol": {"name": "gen-1k", "prompt_tokens": 1000, "gen_tokens": 200,
                 "sampling": {"temperature": 0.0, "seed": 42}, "repetitions": 10},
    "samples": [
        {"prompt_tokens": 1004, "gen_tokens": 200, "ttft_ms": round(161.0 + 0.7 * i, 1),
         "prompt_tps": round(6200.0 - 9.5 * i, 1), "gen_tps": round(127.2 + 0.1 * i, 1),
         "turn_time_ms": round(1725.0 + 1.3 * i, 1)}
        for i in range(10)
    ],
    "power": {"method": "sensor", "avg_watts": 331.0, "energy_j": 5715.4},
    "memory": {"peak_bytes": 6012954214},
}


def main() -> None:
    body = (json.dumps(PAYLOAD, indent=2) + "\n").encode()
    (HERE / "run-payload.json").write_bytes(body)
    # the exact bytes of the file are signed, as `benchwh runs sign` does
    envelope = dsse.sign_payload(body, DEMO_KEY)
    (HERE / "run.dsse.json").write_text(json.dumps(envelope, indent=2) + "\n")
    pem = DEMO_KEY.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
    (HERE / "example_ed25519.pem").write_bytes(pem)
    public = dsse.public_key_of(DEMO_KEY)
    trusted = {"keys": [{"keyid": dsse.keyid_for(public),
                         "public_key": base64.b64encode(public).decode("ascii"),
                         "contributor": "example"}]}
    (HERE / "trusted_keys.json").write_text(json.dumps(trusted, indent=2) + "\n")


if __name__ == "__main__":
    main()
