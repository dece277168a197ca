"""docs/examples/: the sample run file verifies with the key shipped beside it, its payload validates."""
import json
import subprocess
import sys
from pathlib import Path

from ingest.sources.runs import dsse
from ingest.sources.runs.payload import validate_payload

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"


def test_example_envelope_verifies_with_the_shipped_key_and_holds_the_payload_file():
    keys = dsse.parse_trusted_keys(json.loads((EXAMPLES / "trusted_keys.json").read_text()))
    verified = dsse.verify_envelope((EXAMPLES / "run.dsse.json").read_bytes(), keys)
    assert verified.trust == "signed" and verified.contributor == "example"
    assert verified.payload_bytes == (EXAMPLES / "run-payload.json").read_bytes()


def test_example_payload_validates():
    doc = validate_payload((EXAMPLES / "run-payload.json").read_bytes())
    assert doc["protocol"]["name"] == "gen-1k" and len(doc["samples"]) == 10 == doc["protocol"]["repetitions"]


def test_runs_sign_of_the_example_payload_gives_the_example_envelope(tmp_path):
    out = tmp_path / "signed.json"
    proc = subprocess.run([sys.executable, "-m", "cli.main", "runs", "sign",
                           str(EXAMPLES / "run-payload.json"), "--key", str(EXAMPLES / "example_ed25519.pem"),
                           "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # Ed25519 signatures are deterministic: the same bytes and key give the same envelope
    assert json.loads(out.read_text()) == json.loads((EXAMPLES / "run.dsse.json").read_text())
