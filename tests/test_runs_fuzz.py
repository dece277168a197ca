"""Mutated inputs (seeded, reproducible): the parsers either accept or raise RunRejected with a
reason, never another exception; and whatever they accept passes the landing models, so a
pandera failure can never turn a file the user was told is `accepted` into a failed payload."""
from __future__ import annotations

import json
import random
import re
from datetime import datetime, timezone

import pytest

from ingest.landing.validate import validate_pieces
from ingest.sources.runs import dsse
from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.intake import make_intake, parse_intake
from ingest.sources.runs.source import RunsSource, runs_to_frames
from tests.helpers.hostile import OLLAMA_OK, VLLM_OK, good_payload, lb_record

NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)
ODD_VALUES = ["-1", "1e400", "0", "99999999999999999999", '"x"', "null", "true", "[]", "{}", "-0.0",
              "1e-320", "0.5", '"NaN"', "1E5"]

SEEDS = [
    json.dumps(OLLAMA_OK), json.dumps(VLLM_OK), json.dumps([lb_record(), lb_record(n_prompt=0, n_gen=128)]),
    "\n".join(json.dumps(lb_record(n_depth=d)) for d in (0, 4096)),
    "total duration: 1.5s\nload duration: 1ms\nprompt eval count: 26 token(s)\nprompt eval duration: 100ms\n"
    "prompt eval rate: 260.00 tokens/s\neval count: 298 token(s)\neval duration: 1.3s\neval rate: 229.23 tokens/s\n",
    json.dumps({"timings": {"prompt_n": 5, "prompt_ms": 10.0, "predicted_n": 10, "predicted_ms": 100.0},
                "model": "x.gguf", "created": 1768471200}),
    "| model | size | params | backend | ngl | test | t/s |\n| --- | ---: | ---: | --- | --: | ---: | ---: |\n"
    "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | pp512 | 2368.80 ± 93.24 |\n\nbuild: 3469684 (1275)\n",
]
PAYLOAD = json.dumps(good_payload(power={"method": "sensor", "avg_watts": 100.0}, memory={"peak_bytes": 5},
                                  context_recall=[{"context_tokens": 512, "recalled": True}],
                                  capabilities=[{"name": "tools", "passed": False}]))


def mutate(rng: random.Random, text: str) -> bytes:
    op = rng.random()
    if op < 0.2:
        b = bytearray(text.encode())
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if op < 0.3:
        return text.encode()[: rng.randrange(len(text))]
    if op < 0.8:
        nums = list(re.finditer(r"\d+(\.\d+)?", text))
        if nums:
            m = rng.choice(nums)
            text = text[:m.start()] + rng.choice(ODD_VALUES) + text[m.end():]
        return text.encode()
    keys = list(re.finditer(r'"[a-z_]+"\s*:', text))
    if keys:
        m = rng.choice(keys)
        text = text[:m.start()] + '"zz":' + text[m.end():]
    return text.encode()


@pytest.mark.parametrize("seed", range(2))
def test_mutations_are_accepted_cleanly_or_rejected_with_a_reason(seed):
    pem, public = dsse.generate_keypair()
    from cryptography.hazmat.primitives import serialization
    key = serialization.load_pem_private_key(pem, None)
    trusted = [dsse.TrustedKey(dsse.keyid_for(public), public, "t")]
    rng = random.Random(seed)
    accepted = rejected = 0
    pieces: dict[str, list] = {entity.name: [] for entity in RunsSource.entities}  # what landing validates
    for i in range(200):
        if rng.random() < 0.4:
            data = json.dumps(dsse.sign_payload(mutate(rng, PAYLOAD), key)).encode()
        else:
            data = mutate(rng, rng.choice(SEEDS))
        wrapper, _ = make_intake(data, "f", {"gpu": "g", "model": "m"}, trusted)
        try:
            doc, runs = parse_intake(wrapper, NOW)
        except RunRejected as exc:
            assert exc.reason and "\n" not in exc.reason
            rejected += 1
            continue
        accepted += 1
        frames = runs_to_frames(doc, runs)
        for entity in RunsSource.entities:
            if not frames[entity.name].empty:
                pieces[entity.name].append((i, frames[entity.name]))
    # as the landing validates them: all accepted payloads' frames of an entity at once, with the
    # outcome of each payload alone (ingest/landing/validate.py)
    for entity in RunsSource.entities:
        *_, quarantined, failed = validate_pieces(pieces[entity.name], entity.model)
        assert quarantined == [] and failed == {}, (entity.name, quarantined[:1], failed)
    assert accepted > 15 and rejected > 15  # the mutations exercise both sides
