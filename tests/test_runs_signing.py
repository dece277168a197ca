"""DSSE + Ed25519 run files: PAE, key ids, signing, verification, trust, key files and the CLI."""
from __future__ import annotations

import base64
import hashlib
import json
import stat
from datetime import datetime, timezone

import pytest

from ingest.sources.runs import dsse
from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.payload import build_payload, payload_bytes, validate_payload
from cli.main import main
from tests.helpers.hostile import good_payload


@pytest.fixture
def key(tmp_path):
    dsse.write_private_key(tmp_path / "k.pem")
    return dsse.load_private_key(tmp_path / "k.pem")


def _trusted(key, name="alice"):
    raw = dsse.public_key_of(key)
    return [dsse.TrustedKey(dsse.keyid_for(raw), raw, name)]


def test_pae_matches_the_dsse_spec():
    assert dsse.pae("http://example.com/HelloWorld", b"hello world") == \
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    assert dsse.pae("", b"") == b"DSSEv1 0  0 "


def test_keyid_is_sha256_of_raw_public_key(key):
    raw = dsse.public_key_of(key)
    assert len(raw) == 32
    assert dsse.keyid_for(raw) == hashlib.sha256(raw).hexdigest()


def test_private_key_file_is_0600_and_not_overwritten(tmp_path):
    path = tmp_path / "keys" / "me.pem"
    raw, keyid = dsse.write_private_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert dsse.keyid_for(dsse.public_key_of(dsse.load_private_key(path))) == keyid
    with pytest.raises(FileExistsError):
        dsse.write_private_key(path)


def test_sign_then_verify_trusted_unknown_and_tampered(key, tmp_path):
    body = payload_bytes(good_payload())
    env = dsse.sign_payload(body, key)
    assert env["payloadType"] == "application/vnd.benchwh.run+json"
    assert base64.b64decode(env["payload"]) == body
    raw_env = json.dumps(env).encode()

    ok = dsse.verify_envelope(raw_env, _trusted(key))
    assert (ok.trust, ok.payload_bytes, ok.contributor) == ("signed", body, "alice")
    # a valid signature by a key nobody trusts proves nothing, but is not tampering
    other = dsse.load_private_key(_new_key(tmp_path))
    unknown = dsse.verify_envelope(raw_env, _trusted(other))
    assert unknown.trust == "unverified" and unknown.keyid == dsse.keyid_for(dsse.public_key_of(key))

    flipped = dict(env)
    sig = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
    sig[0] ^= 1
    flipped["signatures"] = [{**env["signatures"][0], "sig": base64.b64encode(bytes(sig)).decode()}]
    with pytest.raises(RunRejected) as exc:
        dsse.verify_envelope(json.dumps(flipped).encode(), _trusted(key))
    assert exc.value.check == "bad_signature"

    # whitespace in the envelope does not matter: the signature covers PAE(type, payload bytes)
    assert dsse.verify_envelope(json.dumps(env, indent=4).encode(), _trusted(key)).trust == "signed"


def _new_key(tmp_path):
    path = tmp_path / f"other{len(list(tmp_path.iterdir()))}.pem"
    dsse.write_private_key(path)
    return path


def test_trusted_keys_file_round_trip(home, key):
    raw = dsse.public_key_of(key)
    dsse.trust_key(home, base64.b64encode(raw).decode(), "alice")
    dsse.trust_key(home, base64.b64encode(raw).decode(), "alice b.")  # renaming keeps one entry
    doc = json.loads((home / "trusted_keys.json").read_text())
    assert doc == {"keys": [{"keyid": dsse.keyid_for(raw), "public_key": base64.b64encode(raw).decode(),
                             "contributor": "alice b."}]}
    assert dsse.load_trusted_keys(home)[0].contributor == "alice b."
    with pytest.raises(ValueError):
        dsse.trust_key(home, base64.b64encode(b"short").decode(), "x")


def test_payload_validation_normalises_and_refuses():
    p = validate_payload(payload_bytes(good_payload()), datetime(2026, 2, 1, tzinfo=timezone.utc))
    assert p["machine"]["gpu_count"] == 1 and p["power"] is None and p["context_recall"] == []
    with pytest.raises(RunRejected, match="future"):
        validate_payload(payload_bytes(good_payload()), datetime(2026, 1, 1, tzinfo=timezone.utc))
    with pytest.raises(RunRejected, match="power.method"):
        build_payload(machine={"gpu": "x"}, engine={"name": "e"}, model={"name": "m"},
                      protocol={"name": "p"}, samples=[{"gen_tps": 1.0}], power={"method": "guess", "avg_watts": 1})
    built = build_payload(machine={"gpu": "x"}, engine={"name": "e"}, model={"name": "m"},
                          protocol={"name": "p"}, samples=[{"gen_tps": 1.0}] * 4,
                          context_recall=[{"context_tokens": 1024, "recalled": True}])
    assert built["protocol"]["repetitions"] == 4 and "power" not in built


def test_cli_keys_and_sign(home, tmp_path, capsys):
    key_path = tmp_path / "me.pem"
    assert main(["keys", "generate", "--out", str(key_path)]) == 0
    out = capsys.readouterr().out
    public = out.split("public key:")[1].split()[0]
    keyid = out.split("keyid:")[1].split()[0]
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert main(["keys", "generate", "--out", str(key_path)]) == 2  # never overwrites
    assert "already exists" in capsys.readouterr().err

    assert main(["keys", "trust", public, "--contributor", "me"]) == 0
    assert json.loads((home / "trusted_keys.json").read_text())["keys"][0]["keyid"] == keyid
    assert main(["keys", "trust", "not-base64!", "--contributor", "me"]) == 2
    capsys.readouterr()
    # a key file where the key is expected: named as such, nothing trusted
    assert main(["keys", "trust", str(key_path), "--contributor", "me"]) == 2
    assert capsys.readouterr().err.strip().endswith("is a file: give the public key itself, in base64 "
                                                   "(the `public key:` line `benchwh keys generate` printed; "
                                                   "a key file stays with its owner)")
    assert len(json.loads((home / "trusted_keys.json").read_text())["keys"]) == 1

    payload = tmp_path / "run.json"
    payload.write_bytes(payload_bytes(good_payload()))
    assert main(["runs", "sign", str(payload), "--key", str(key_path)]) == 0
    env_path = tmp_path / "run.dsse.json"
    verified = dsse.verify_envelope(env_path.read_bytes(), dsse.load_trusted_keys(home))
    assert verified.trust == "signed" and verified.payload_bytes == payload.read_bytes()

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(good_payload(schema="benchwh.run/0")))
    capsys.readouterr()
    assert main(["runs", "sign", str(bad), "--key", str(key_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown schema" in err and len(err.strip().splitlines()) == 1
    assert main(["runs", "sign", str(payload), "--key", str(tmp_path / "missing.pem")]) == 2


def test_context_recall_stopped_is_optional_and_checked():
    old = validate_payload(payload_bytes(good_payload()))
    assert old["context_recall_stopped"] is None  # files without it stay valid (read as `unknown`)
    said = validate_payload(payload_bytes(good_payload(
        context_recall=[{"context_tokens": 4096, "recalled": False}],
        context_recall_stopped={"reason": "forgot", "at_tokens": 4096})))
    assert said["context_recall_stopped"] == {"reason": "forgot", "at_tokens": 4096}
    with pytest.raises(RunRejected, match="context_recall_stopped.reason"):
        validate_payload(payload_bytes(good_payload(context_recall_stopped={"reason": "bored"})))
    with pytest.raises(RunRejected, match="context_recall_stopped"):
        validate_payload(payload_bytes(good_payload(context_recall_stopped={"reason": "forgot", "why": 1})))
