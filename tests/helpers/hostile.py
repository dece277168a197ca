"""A generated corpus of hostile inputs for `benchwh runs add` (DESIGN §6, issue 4 part 6).

Each case writes its file(s) into a folder and names the check its rejection must carry.
Generated rather than stored: the corpus holds symlinks, FIFOs, archives with device members
and multi-megabyte bombs that do not belong in git. `python -m tests.helpers.hostile DIR`
writes the corpus (signed cases use a fresh key, printed so it can be trusted).
"""
from __future__ import annotations

import base64
import io
import json
import os
import sys
import tarfile
import uuid
import zipfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from ingest.sources.runs import dsse
from ingest.sources.runs.payload import payload_bytes

MB = 1024 * 1024


@dataclass
class Case:
    name: str
    check: str  # the RunRejected / Refused check the rejection must carry
    make: Callable[[Path, object], Path]  # (folder, private key) -> path to add
    note: str = ""


def good_payload(**over) -> dict:
    doc = {
        "schema": "benchwh.run/1", "submission_id": str(uuid.uuid4()),
        "created_at": "2026-01-15T10:00:00Z",
        "machine": {"gpu": "NVIDIA GeForce RTX 4090", "gpu_count": 1, "gpu_memory_gb": 24, "country": "DE"},
        "engine": {"name": "llama.cpp", "version": "b5000", "backend": "CUDA"},
        "model": {"name": "Llama 3.1 8B Instruct", "file": "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "quant": "Q4_K_M"},
        "protocol": {"name": "gen-1k", "prompt_tokens": 512, "gen_tokens": 1024, "repetitions": 3},
        "samples": [{"prompt_tokens": 512, "gen_tokens": 1024, "ttft_ms": 80.0 + i, "prompt_tps": 6000.0,
                     "gen_tps": 120.0 + i, "turn_time_ms": 8600.0 + i} for i in range(3)],
    }
    for path, value in over.items():
        target = doc
        keys = path.split(".")
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        last = keys[-1]
        if isinstance(target, list):
            target[int(last)] = value
        elif value is _DELETE:
            target.pop(last, None)
        else:
            target[last] = value
    return doc


_DELETE = object()


def envelope(body: bytes, key, payload_type: str = dsse.PAYLOAD_TYPE) -> dict:
    return dsse.sign_payload(body, key, payload_type)


def _write(folder: Path, name: str, data: bytes | str) -> Path:
    path = folder / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def signed_raw(name: str, text: str):
    """A payload given as raw JSON text (to carry NaN, duplicates, ...) signed by the key."""
    def make(folder: Path, key) -> Path:
        return _write(folder, name, json.dumps(envelope(text.encode("utf-8"), key)))
    return make


def signed(name: str, **over):
    def make(folder: Path, key) -> Path:
        return _write(folder, name, json.dumps(envelope(payload_bytes(good_payload(**over)), key)))
    return make


def _payload_text(**over) -> str:
    return json.dumps(good_payload(**over))


def tampered(name: str, what: str):
    def make(folder: Path, key) -> Path:
        env = envelope(payload_bytes(good_payload()), key)
        if what == "payload":
            raw = bytearray(base64.b64decode(env["payload"]))
            raw[40] ^= 0x01  # one flipped bit
            env["payload"] = base64.b64encode(bytes(raw)).decode()
        elif what == "signature":
            raw = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
            raw[10] ^= 0x80
            env["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode()
        elif what == "short_signature":
            env["signatures"][0]["sig"] = base64.b64encode(base64.b64decode(env["signatures"][0]["sig"])[:63]).decode()
        elif what == "bad_base64":
            env["payload"] = "not*base64!" + env["payload"]
        elif what == "bad_sig_base64":
            env["signatures"][0]["sig"] = "%%%"
        elif what == "no_signatures":
            env["signatures"] = []
        elif what == "payload_type":
            env["payloadType"] = "application/vnd.in-toto+json"
        elif what == "truncated":
            return _write(folder, name, json.dumps(env)[:-40])
        elif what == "array_payload":
            env["payload"] = 12345
        return _write(folder, name, json.dumps(env))
    return make


def wrong_type_signed(name: str):
    """Signed correctly, but over another payloadType than the one the envelope states."""
    def make(folder: Path, key) -> Path:
        body = payload_bytes(good_payload())
        env = envelope(body, key, "application/json")
        env["payloadType"] = dsse.PAYLOAD_TYPE
        return _write(folder, name, json.dumps(env))
    return make


def plain(name: str, data: bytes | str):
    return lambda folder, key: _write(folder, name, data)


def lb_record(**over) -> dict:
    rec = {"build_commit": "abc1234", "build_number": 5000, "cpu_info": "AMD Ryzen 9 7950X",
           "gpu_info": "NVIDIA GeForce RTX 4090", "backends": "CUDA",
           "model_filename": "/models/llama-2-7b.Q4_0.gguf", "model_type": "llama 7B Q4_0",
           "model_size": 3825065984, "model_n_params": 6738415616, "n_prompt": 512, "n_gen": 0,
           "n_depth": 0, "test_time": "2026-01-15T10:00:00Z", "avg_ns": 100000000, "stddev_ns": 1000,
           "avg_ts": 5120.0, "stddev_ts": 10.0, "samples_ns": [100000000, 100000000],
           "samples_ts": [5120.0, 5120.0]}
    for k, v in over.items():
        if v is _DELETE:
            rec.pop(k)
        else:
            rec[k] = v
    return rec


def llama_bench(name: str, text: str | None = None, **over):
    body = text if text is not None else json.dumps([lb_record(**over)], indent=2)
    return plain(name, body)


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _info(name: str, kind=tarfile.REGTYPE, size: int = 0, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname, info.mode = kind, size, linkname, 0o644
    return info


def tar_case(name: str, member: str, kind=tarfile.REGTYPE, linkname: str = ""):
    def make(folder: Path, key) -> Path:
        ok = b"[]"
        members = [(_info("ok.json", size=len(ok)), ok)]
        data = b"x" if kind == tarfile.REGTYPE else None
        members.append((_info(member, kind, len(data) if data else 0, linkname), data))
        return _write(folder, name, _tar(members))
    return make


def tar_many(name: str, n: int):
    def make(folder: Path, key) -> Path:
        return _write(folder, name, _tar([(_info(f"f{i}.txt", size=1), b"x") for i in range(n)]))
    return make


def tar_big_member(name: str):
    def make(folder: Path, key) -> Path:
        data = b"\0" * (11 * MB)
        return _write(folder, name, _tar([(_info("big.json", size=len(data)), data)]))
    return make


def _zip(members: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in members:
            zf.writestr(info, data)
    return buf.getvalue()


def zip_case(name: str, member: str, data: bytes = b"{}", mode: int | None = None):
    def make(folder: Path, key) -> Path:
        info = zipfile.ZipInfo(member)
        if mode is not None:
            info.external_attr = mode << 16
        return _write(folder, name, _zip([(info, data)]))
    return make


def zip_many(name: str, n: int):
    def make(folder: Path, key) -> Path:
        return _write(folder, name, _zip([(f"f{i}.txt", b"x") for i in range(n)]))
    return make


def zip_bomb(name: str):
    def make(folder: Path, key) -> Path:
        return _write(folder, name, _zip([("zeros.json", b"\0" * (8 * MB))]))
    return make


def zip_nested(name: str):
    def make(folder: Path, key) -> Path:
        inner = _zip([("run.json", b"{}")])
        return _write(folder, name, _zip([("inner.zip", inner)]))
    return make


def oversized(name: str):
    def make(folder: Path, key) -> Path:
        path = folder / name
        with path.open("wb") as fh:
            fh.truncate(10 * MB + 1)  # sparse: the cap is checked before reading
        return path
    return make


def symlink(name: str):
    def make(folder: Path, key) -> Path:
        target = folder / "outside-target.json"
        target.write_text("[]")
        path = folder / name
        os.symlink(target, path)
        return path
    return make


def fifo(name: str):
    def make(folder: Path, key) -> Path:
        path = folder / name
        os.mkfifo(path)
        return path
    return make


def with_sidecar(name: str, body: str, meta: str):
    def make(folder: Path, key) -> Path:
        path = _write(folder, name, body)
        _write(folder, name + ".meta.json", meta)
        return path
    return make


FUTURE = (datetime.now(timezone.utc) + timedelta(days=400)).strftime("%Y-%m-%dT%H:%M:%SZ")
NESTED = "[" * 100_000 + "]" * 100_000

OLLAMA_OK = {"model": "llama3.2:1b", "created_at": "2026-01-15T10:00:00.123456789Z", "response": "", "done": True,
             "done_reason": "stop", "total_duration": 2_000_000_000, "load_duration": 10_000_000,
             "prompt_eval_count": 26, "prompt_eval_duration": 100_000_000, "eval_count": 300,
             "eval_duration": 1_500_000_000}

VLLM_OK = {"date": "20260115-100000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
           "num_prompts": 2, "duration": 10.0, "completed": 2, "total_input_tokens": 2048,
           "total_output_tokens": 256, "request_throughput": 0.2, "output_throughput": 25.6,
           "median_ttft_ms": 50.0, "median_tpot_ms": 10.0, "median_e2el_ms": 1320.0,
           "input_lens": [1024, 1024], "output_lens": [128, 128], "ttfts": [0.05, 0.06],
           "itls": [[0.01] * 127, [0.01] * 127], "errors": ["", ""]}


def cases() -> list[Case]:
    c = [
        # --- files themselves
        Case("oversized.json", "too_large", oversized("oversized.json"), "10 MB + 1 byte"),
        Case("link.json", "link", symlink("link.json"), "a symbolic link"),
        Case("fifo.json", "not_regular", fifo("fifo.json"), "a FIFO (would block a reader)"),
        Case("empty.json", "unknown_format", plain("empty.json", b"")),
        Case("binary.bin", "malformed_payload", plain("binary.bin", bytes(range(256)) * 4), "not UTF-8"),
        Case("nul.txt", "malformed_payload", plain("nul.txt", '{"payloadType": "x", "signatures": []}\x00')),
        Case("nested.json", "unknown_format", plain("nested.json", NESTED), "100k nested arrays"),
        Case("random.txt", "unknown_format", plain("random.txt", "hello\nworld\n")),
        # --- archives
        Case("traversal.zip", "archive_path_traversal", zip_case("traversal.zip", "../../evil.json")),
        Case("absolute.zip", "archive_absolute_path", zip_case("absolute.zip", "/etc/evil.json")),
        Case("windows.zip", "archive_absolute_path", zip_case("windows.zip", "C:\\evil.json")),
        Case("zip_link.zip", "archive_link", zip_case("zip_link.zip", "link.json", b"/etc/passwd", 0o120777)),
        Case("zip_device.zip", "archive_special", zip_case("zip_device.zip", "dev", b"", 0o020644)),
        Case("zip_many.zip", "archive_too_many_members", zip_many("zip_many.zip", 1001)),
        Case("bomb.zip", "archive_ratio", zip_bomb("bomb.zip"), "8 MB of zeros in a few kB"),
        Case("nested.zip", "archive_nested", zip_nested("nested.zip")),
        Case("corrupt.zip", "archive_corrupt", plain("corrupt.zip", b"PK\x03\x04garbage")),
        Case("traversal.tar.gz", "archive_path_traversal", tar_case("traversal.tar.gz", "a/../../evil.json")),
        Case("absolute.tar.gz", "archive_absolute_path", tar_case("absolute.tar.gz", "/tmp/evil.json")),
        Case("symlink.tar.gz", "archive_link", tar_case("symlink.tar.gz", "l.json", tarfile.SYMTYPE, "/etc/passwd")),
        Case("hardlink.tar.gz", "archive_link", tar_case("hardlink.tar.gz", "h.json", tarfile.LNKTYPE, "ok.json")),
        Case("chardev.tar.gz", "archive_special", tar_case("chardev.tar.gz", "null", tarfile.CHRTYPE)),
        Case("fifo.tar.gz", "archive_special", tar_case("fifo.tar.gz", "pipe", tarfile.FIFOTYPE)),
        Case("many.tar.gz", "archive_too_many_members", tar_many("many.tar.gz", 1001)),
        Case("big_member.tar.gz", "archive_member_too_large", tar_big_member("big_member.tar.gz")),
        Case("corrupt.tar.gz", "archive_corrupt", plain("corrupt.tar.gz", b"\x1f\x8b\x08\x00garbage")),
        # --- envelopes
        Case("flipped_payload.json", "bad_signature", tampered("flipped_payload.json", "payload")),
        Case("flipped_sig.json", "bad_signature", tampered("flipped_sig.json", "signature")),
        Case("short_sig.json", "bad_signature", tampered("short_sig.json", "short_signature")),
        Case("bad_base64.json", "bad_base64", tampered("bad_base64.json", "bad_base64")),
        Case("bad_sig_base64.json", "bad_base64", tampered("bad_sig_base64.json", "bad_sig_base64")),
        Case("no_signatures.json", "unsigned", tampered("no_signatures.json", "no_signatures")),
        Case("payload_type.json", "wrong_payload_type", tampered("payload_type.json", "payload_type")),
        Case("signed_other_type.json", "bad_signature", wrong_type_signed("signed_other_type.json")),
        Case("truncated.json", "malformed_envelope", tampered("truncated.json", "truncated")),
        Case("payload_not_string.json", "bad_base64", tampered("payload_not_string.json", "array_payload")),
        Case("unsigned_payload.json", "unsigned", plain("unsigned_payload.json", _payload_text())),
        # --- payload values
        Case("nan.json", "non_finite", signed_raw("nan.json", _payload_text().replace('"gen_tps": 120.0', '"gen_tps": NaN'))),
        Case("infinity.json", "non_finite", signed_raw("infinity.json", _payload_text().replace('"ttft_ms": 80.0', '"ttft_ms": Infinity'))),
        Case("overflow.json", "non_finite", signed_raw("overflow.json", _payload_text().replace('"gen_tps": 120.0', '"gen_tps": 1e999'))),
        Case("negative_tps.json", "negative", signed("negative_tps.json", **{"samples.0.gen_tps": -5.0})),
        Case("impossible_tps.json", "impossible_value", signed("impossible_tps.json", **{"samples.1.gen_tps": 150000.0})),
        Case("negative_ttft.json", "negative", signed("negative_ttft.json", **{"samples.2.ttft_ms": -1.0})),
        Case("future.json", "future_timestamp", signed("future.json", created_at=FUTURE)),
        Case("not_utc.json", "bad_timestamp", signed("not_utc.json", created_at="2026-01-15T10:00:00+02:00")),
        Case("unknown_schema.json", "unknown_schema", signed("unknown_schema.json", schema="benchwh.run/2")),
        Case("bad_uuid.json", "bad_submission_id", signed("bad_uuid.json", submission_id="1; DROP TABLE runs")),
        Case("unknown_field.json", "unknown_field", signed("unknown_field.json", extra_field=1)),
        Case("duplicate_key.json", "malformed_payload", signed_raw("duplicate_key.json", _payload_text().replace('"schema": "benchwh.run/1"', '"schema": "benchwh.run/1", "schema": "benchwh.run/1"'))),
        Case("zero_gpus.json", "impossible_value", signed("zero_gpus.json", **{"machine.gpu_count": 0})),
        Case("bool_tokens.json", "wrong_type", signed("bool_tokens.json", **{"samples.0.gen_tokens": True})),
        Case("reps_mismatch.json", "inconsistent", signed("reps_mismatch.json", **{"protocol.repetitions": 10})),
        Case("country.json", "invalid_value", signed("country.json", **{"machine.country": "Germany"})),
        Case("control_chars.json", "invalid_value", signed("control_chars.json", **{"machine.gpu": "RTX\x1b[2J4090"})),
        Case("no_gpu.json", "missing_field", signed("no_gpu.json", **{"machine.gpu": _DELETE})),
        Case("no_samples.json", "missing_field", signed("no_samples.json", samples=[])),
        Case("huge_tokens.json", "impossible_value", signed("huge_tokens.json", **{"samples.0.prompt_tokens": 10**12})),
        # --- tool outputs
        Case("lb_nan.json", "non_finite", llama_bench("lb_nan.json", text=json.dumps([lb_record()]).replace("5120.0", "NaN", 1))),
        Case("lb_negative.json", "negative", llama_bench("lb_negative.json", avg_ts=-3.0)),
        Case("lb_impossible.json", "impossible_value", llama_bench("lb_impossible.json", n_prompt=0, n_gen=128, avg_ts=250000.0, samples_ts=[250000.0])),
        Case("lb_missing.json", "missing_field", llama_bench("lb_missing.json", build_commit=_DELETE)),
        Case("lb_future.json", "future_timestamp", llama_bench("lb_future.json", test_time=FUTURE)),
        Case("lb_no_gpu.json", "missing_gpu", llama_bench("lb_no_gpu.json", gpu_info=_DELETE)),
        Case("lb_zero_tokens.json", "impossible_value", llama_bench("lb_zero_tokens.json", n_prompt=0, n_gen=0)),
        Case("ollama_negative.json", "negative", plain("ollama_negative.json", json.dumps({**OLLAMA_OK, "eval_duration": -1}))),
        Case("ollama_verbose_bad.txt", "bad_duration", plain("ollama_verbose_bad.txt", "eval count: 10 token(s)\neval duration: 5 parsecs\neval rate: 2.00 tokens/s\n")),
        Case("vllm_negative.json", "negative", plain("vllm_negative.json", json.dumps({**VLLM_OK, "ttfts": [-0.05, 0.06]}))),
        Case("sidecar_unknown.json", "bad_meta", with_sidecar("sidecar_unknown.json", json.dumps([lb_record()]), '{"gpu": "x", "shell": "rm -rf /"}')),
        Case("sidecar_country.json", "bad_meta", with_sidecar("sidecar_country.json", json.dumps([lb_record()]), '{"country": "Deutschland"}')),
    ]
    return c


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tests.helpers.hostile DIR", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    pem, public_raw = dsse.generate_keypair()
    from cryptography.hazmat.primitives import serialization
    key = serialization.load_pem_private_key(pem, password=None)
    for case in cases():
        case.make(folder, key)
    print(f"wrote {len(cases())} hostile inputs to {folder}; signed with public key "
          f"{base64.b64encode(public_raw).decode()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
