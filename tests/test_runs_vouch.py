"""Vouching for a tool output (issue 52 item 7): `benchwh runs add FILE --key KEY` signs the runs
a real llama-bench output gives into DSSE run files (the one signer of `runs sign` and `benchwh
bench`), and those signed files are what is stored and landed: `signed` with a trusted key,
`unverified` without, rejected when tampered with."""
from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key

from cli.main import main
from ingest import config
from ingest.raw_store import RawStore
from ingest.sources.runs import dsse
from ingest.sources.runs.add import add_paths, vouch_paths
from ingest.sources.runs.intake import parse_intake, read_intake
from ingest.sources.runs.payload import validate_payload
from ingest.sources.runs.vouch import vouch
from tests.helpers.keys import trust
from tests.helpers.runs import parse_text

REAL = Path(__file__).parent / "data" / "real"
# a real llama-bench JSONL (gpu_info and test_time in every row), PROVENANCE.md
LLAMA_BENCH = REAL / "llama-bench" / "lhl_gpt-oss-20b_hip_2025.jsonl"
# `ollama run --verbose` output: no time in it
OLLAMA_VERBOSE = REAL / "ollama" / "ours_verbose_plain_log.log"
SIGNED_AT = datetime(2026, 1, 15, 12, 0, tzinfo=timezone.utc)
SAMPLE_COLUMNS = ["test_name", "test_index", "sample_index", "n_prompt", "n_gen", "n_depth", "gen_tps",
                  "prompt_tps", "ttft_ms", "turn_time_ms", "is_test_mean", "measured_at", "test_key", "config_key"]


@pytest.fixture
def key(tmp_path):
    dsse.write_private_key(tmp_path / "k.pem")
    return dsse.load_private_key(tmp_path / "k.pem")


def landed(home: Path, entity: str):
    glob = home / "landing" / "runs" / entity / "[0-9a-f]*.parquet"
    return duckdb.sql(f"select * from read_parquet('{glob}', union_by_name=true)").fetchdf()


def _rows(frame):
    return sorted(tuple(None if v != v else v for v in row)  # NaN (a null number) -> None
                  for row in frame[SAMPLE_COLUMNS].astype(object).itertuples(index=False))


def test_trusted_key_lands_signed_with_the_values_the_file_gives(home, key):
    trust(home, key)
    [res] = vouch_paths([LLAMA_BENCH], key, home)
    assert (res.status, res.trust, res.contributor) == ("accepted", "signed", "alice")
    runs = landed(home, "runs")
    assert len(runs) == 1
    run = runs.iloc[0]
    assert (run["source"], run["trust"], run["contributor"]) == ("runfile", "signed", "alice")
    assert run["keyid"] == dsse.keyid_for(dsse.public_key_of(key))
    # what the file says: the machine, model, configuration and the time of its first test
    assert (run["gpu"], run["engine_name"], run["model_file"]) == \
        ("Radeon 8060S Graphics", "llama.cpp", "gpt-oss-20b-F16.gguf")
    assert (run["offload"], run["n_gpu_layers"], run["flash_attn"]) == ("full", 99, "on")
    assert str(run["measured_at"]) == "2025-10-28 18:04:31"

    # the same samples, test names, times and configuration as the bare output's
    bare_home = home.parent / "bare"
    bare_home.mkdir()
    [bare] = add_paths([LLAMA_BENCH], bare_home)
    assert (bare.status, bare.trust) == ("accepted", "unverified")
    assert _rows(landed(home, "samples")) == _rows(landed(bare_home, "samples"))
    assert landed(bare_home, "runs").iloc[0]["config_key"] == run["config_key"]


def test_untrusted_key_stays_unverified(home, key, tmp_path):
    other = tmp_path / "other.pem"
    dsse.write_private_key(other)
    trust(home, dsse.load_private_key(other), "bob")  # someone else's key is trusted, not this one
    [res] = vouch_paths([LLAMA_BENCH], key, home)
    assert (res.status, res.trust) == ("accepted", "unverified")
    run = landed(home, "runs").iloc[0]
    assert (run["source"], run["trust"]) == ("runfile", "unverified")
    assert run["contributor"] is None


def test_envelope_verifies_and_names_the_original_bytes(key):
    body = LLAMA_BENCH.read_bytes()
    [envelope] = vouch(body, LLAMA_BENCH.name, {}, key, SIGNED_AT)
    env = json.loads(envelope)
    assert env["payloadType"] == dsse.PAYLOAD_TYPE
    raw = dsse.public_key_of(key)
    verified = dsse.verify_envelope(envelope, [dsse.TrustedKey(dsse.keyid_for(raw), raw, "alice")])
    assert verified.trust == "signed"
    payload = validate_payload(verified.payload_bytes)
    assert payload["schema"] == "benchwh.run/1"
    assert payload["source_file"]["sha256"] == hashlib.sha256(body).hexdigest()
    assert (payload["source_file"]["name"], payload["source_file"]["source"]) == (LLAMA_BENCH.name, "llama-bench")
    assert payload["created_at"] == "2026-01-15T12:00:00.000000Z"  # when it was signed
    assert payload["measured_at"] == datetime(2025, 10, 28, 18, 4, 31, tzinfo=timezone.utc)  # when it ran
    assert [s["test_name"] for s in payload["samples"]] == [s.test_name for s in parse_text(body.decode())[0].samples]
    # deterministic: the same output, key and time sign to the same bytes
    assert vouch(body, LLAMA_BENCH.name, {}, key, SIGNED_AT) == [envelope]


def test_the_signed_envelope_is_what_is_stored_and_rebuilt(home, key):
    trust(home, key)
    [res] = vouch_paths([LLAMA_BENCH], key, home)
    assert res.status == "accepted"
    store = RawStore(config.raw_dir(home))
    [entry] = list(store.payloads("runs"))
    wrapper = store.read(entry)
    doc = read_intake(wrapper)
    assert doc["kind"] == "runfile"
    env = json.loads(doc["content"])
    payload = json.loads(base64.b64decode(env["payload"]))
    assert payload["source_file"]["sha256"] == hashlib.sha256(LLAMA_BENCH.read_bytes()).hexdigest()
    # parsing the stored wrapper again gives the landed run: signed, by the key stored with it
    _, [run] = parse_intake(wrapper, datetime.now(timezone.utc))
    assert (run.trust, run.source_run_id) == ("signed", landed(home, "runs").iloc[0]["source_run_id"])


def test_vouching_twice_is_a_duplicate(home, key):
    trust(home, key)
    assert [r.status for r in vouch_paths([LLAMA_BENCH], key, home)] == ["accepted"]
    [again] = vouch_paths([LLAMA_BENCH], key, home)
    assert again.status == "duplicate"
    assert len(landed(home, "runs")) == 1


def test_tampered_signed_file_is_rejected(home, key, tmp_path):
    trust(home, key)
    [envelope] = vouch(LLAMA_BENCH.read_bytes(), LLAMA_BENCH.name, {}, key, SIGNED_AT)
    env = json.loads(envelope)
    payload = json.loads(base64.b64decode(env["payload"]))
    payload["samples"][1]["gen_tps"] = payload["samples"][1]["gen_tps"] * 2  # a faster GPU, on paper
    env["payload"] = base64.b64encode(json.dumps(payload).encode()).decode()
    tampered = tmp_path / "tampered.dsse.json"
    tampered.write_text(json.dumps(env))
    [res] = add_paths([tampered], home)
    assert (res.status, res.check) == ("rejected", "bad_signature")
    assert "does not verify" in res.reason


def test_a_file_without_a_time_keeps_measured_at_null(home, key, tmp_path):
    trust(home, key)
    [res] = vouch_paths([OLLAMA_VERBOSE], key, home, flags={"gpu": "NVIDIA GeForce RTX 4090",
                                                            "model": "llama3.1:8b"})
    assert (res.status, res.trust) == ("accepted", "signed")
    run = landed(home, "runs").iloc[0]
    assert run["measured_at"] is None or run["measured_at"] != run["measured_at"]  # null (NaT)
    assert run["received_at"] is not None and str(run["received_at"]) != "NaT"
    assert landed(home, "samples")["measured_at"].isna().all()


def test_measured_at_flag_is_signed_into_the_payload(key):
    [envelope] = vouch(OLLAMA_VERBOSE.read_bytes(), OLLAMA_VERBOSE.name,
                       {"gpu": "NVIDIA GeForce RTX 4090", "model": "llama3.1:8b",
                        "measured_at": "2025-02-14T09:30:00Z"}, key, SIGNED_AT)
    payload = json.loads(base64.b64decode(json.loads(envelope)["payload"]))
    assert payload["measured_at"] == "2025-02-14T09:30:00.000000Z"


def test_cli_vouches_and_says_so_in_one_line(home, key, tmp_path, capsys):
    trust(home, key)
    assert main(["runs", "add", str(LLAMA_BENCH), "--key", str(tmp_path / "k.pem"), "--no-publish"]) == 0
    out = capsys.readouterr().out
    assert f"{LLAMA_BENCH.name}: accepted as signed (key of alice)" in out


@pytest.mark.parametrize("case", ["missing", "directory", "not a key", "wrong type"])
def test_cli_key_errors_are_one_line(home, tmp_path, capsys, case):
    path = tmp_path / "key.pem"
    if case == "directory":
        path.mkdir()
    elif case == "not a key":
        path.write_text("hello\n")
    elif case == "wrong type":
        ec = generate_private_key(SECP256R1())
        path.write_bytes(ec.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    code = main(["runs", "add", str(LLAMA_BENCH), "--key", str(path), "--no-publish"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("benchwh: --key ")
    expected = {"missing": "no such key file", "directory": "cannot read it",
                "not a key": "not an Ed25519 private key", "wrong type": "not an Ed25519 private key"}[case]
    assert expected in err
    assert not (home / "landing" / "runs").exists() or landed_count(home) == 0


def landed_count(home: Path) -> int:
    folder = home / "landing" / "runs" / "runs"
    return len(list(folder.glob("*.parquet"))) if folder.exists() else 0


def test_cli_measured_at_is_validated_in_one_line(home, capsys):
    code = main(["runs", "add", str(OLLAMA_VERBOSE), "--measured-at", "last tuesday", "--no-publish"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "measured_at" in err
