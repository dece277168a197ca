"""Issue #53 item 7: names and files. Control characters in a file name are escaped in `runs add`
output; temporaries are created with O_EXCL | O_NOFOLLOW beside their target (a planted link is
never written through: `write_atomically`, `runs sign`); a torn raw manifest is named with its
path and line (the store and `benchwh status`); a sample with 0 tokens at a positive speed is
rejected with the reason."""
from __future__ import annotations

import argparse
import json
import os
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from ingest.files import printable, tmp_name, write_atomically
from ingest.raw_store import ManifestError, RawStore
from ingest.sources.runs import dsse
from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.intake import make_intake, parse_intake
from ingest.sources.runs.payload import payload_bytes, validate_payload
from tests.helpers.hostile import good_payload
from tests.helpers.pipeline import run_benchwh

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def key(tmp_path):
    dsse.write_private_key(tmp_path / "k.pem")
    return dsse.load_private_key(tmp_path / "k.pem")


@pytest.fixture
def victim(tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("keep me")
    return target


def test_printable_escapes_what_could_forge_or_rewrite_a_line():
    assert printable("run-1.json") == "run-1.json"
    assert printable("a\nb\rc\x1b[2Jd\x7f\u202ee\u2028f") == "a\\nb\\rc\\x1b[2Jd\\x7f\\u202ee\\u2028f"
    assert printable("Grüße ü.json") == "Grüße ü.json"  # letters of any script stay as they are


def test_runs_add_prints_control_characters_escaped(home, tmp_path, capsys):
    from cli.runs import register

    name = "x\x1b[2K\rall files accepted\u202e.json"
    path = tmp_path / name
    path.write_text("not a run file")
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["runs", "add", "--no-publish", str(path)])
    assert args.func(args) == 1  # rejected
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    lines = out.splitlines()
    assert any(line.startswith("x\\x1b[2K\\rall files accepted\\u202e.json: rejected: ") for line in lines), lines


def test_write_atomically_never_writes_through_a_planted_link(tmp_path, victim):
    final = tmp_path / "trusted_keys.json"
    os.symlink(victim, tmp_name(final))  # where the temporary would have gone
    write_atomically(final, b'{"keys": []}')
    assert victim.read_text() == "keep me"
    assert final.read_bytes() == b'{"keys": []}' and not final.is_symlink()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["trusted_keys.json", "victim.txt", tmp_name(final).name])  # the link, untouched


def test_runs_sign_never_writes_through_a_planted_link(tmp_path, key, victim):
    from cli.runs import cmd_runs_sign

    dsse.write_private_key(tmp_path / "signing.pem")
    payload = tmp_path / "run.json"
    payload.write_bytes(payload_bytes(good_payload()))
    out = tmp_path / "run.dsse.json"
    # the fixed name the command used before, and the one write_atomically tries first
    os.symlink(victim, tmp_path / ".run.dsse.json.tmp")
    os.symlink(victim, tmp_name(out))
    args = SimpleNamespace(payload=str(payload), key=str(tmp_path / "signing.pem"), out=None, force=False)
    assert cmd_runs_sign(args) == 0
    assert victim.read_text() == "keep me"
    envelope = json.loads(out.read_text())
    assert envelope["payloadType"] == dsse.PAYLOAD_TYPE and not out.is_symlink()


def torn_manifest(root, source: str = "demo") -> tuple[RawStore, str]:
    store = RawStore(root)
    for i in range(3):
        store.put(source, f'{{"n": {i}}}'.encode(), url=f"http://x/{i}")
    path = store.manifest_path(source)
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # the last row cut short, as a crash mid-append leaves it
    return store, str(path)


def test_a_torn_raw_manifest_is_named_with_its_path_and_line(tmp_path):
    store, path = torn_manifest(tmp_path / "raw")
    with pytest.raises(ManifestError) as exc:
        RawStore(store.root).entries("demo")
    message = str(exc.value)
    assert f"raw manifest {path} line 3 is cut short" in message and "\n" not in message


def test_status_names_the_torn_manifest(home):
    torn_manifest(home / "raw", "openrouter")
    for args in (("status",), ("status", "--verify")):
        proc = run_benchwh(home, *args)
        assert proc.returncode != 0
        last = proc.stderr.strip().splitlines()[-1]
        assert "raw manifest" in last and "openrouter/manifest.jsonl line 3" in last, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr and "JSONDecodeError" not in proc.stderr


@pytest.mark.parametrize("field,rate", [("gen_tokens", "gen_tps"), ("prompt_tokens", "prompt_tps")])
def test_zero_tokens_at_a_positive_speed_is_rejected(key, field, rate):
    doc = good_payload(**{f"samples.1.{field}": 0})
    with pytest.raises(RunRejected) as exc:
        validate_payload(payload_bytes(doc), NOW)
    assert exc.value.reason.startswith(f"samples[1].{field}: is 0 at {rate} ")
    assert exc.value.check == "impossible_value"
    # the same through the parse a landing does: a signed file, rejected with the reason
    envelope = json.dumps(dsse.sign_payload(payload_bytes(doc), key)).encode()
    wrapper, kind = make_intake(envelope, "run.json")
    assert kind == "runfile"
    with pytest.raises(RunRejected, match=rf"samples\[1\]\.{field}: is 0 at {rate}"):
        parse_intake(wrapper, NOW)


def test_protocol_zero_tokens_counts_for_samples_without_their_own():
    doc = good_payload(**{"protocol.gen_tokens": 0})
    for sample in doc["samples"]:
        del sample["gen_tokens"]
    with pytest.raises(RunRejected, match=r"samples\[0\]\.gen_tokens: is 0 at gen_tps 120"):
        validate_payload(payload_bytes(doc), NOW)
