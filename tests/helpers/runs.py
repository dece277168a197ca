"""Run files for the runs tests: a signed ten-sample run, one inbox sensor evaluation, and a text
parsed the way `runs add` parses it."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import dagster as dg

from ingest.sources.runs import dsse
from ingest.sources.runs.intake import make_intake, parse_intake
from ingest.sources.runs.payload import payload_bytes
from orchestration.sensors import inbox_sensor
from tests.helpers.hostile import good_payload

TEN = [105.0, 101.0, 109.0, 103.0, 100.0, 108.0, 102.0, 107.0, 104.0, 106.0]


def signed_ten(key) -> tuple[dict, bytes]:
    samples = [{"prompt_tokens": 512, "gen_tokens": 1024, "ttft_ms": 40.0 + i, "gen_tps": v,
                "turn_time_ms": 40.0 + i + 1024_000 / v} for i, v in enumerate(TEN)]
    doc = good_payload(samples=samples, **{"protocol.repetitions": 10})
    return doc, json.dumps(dsse.sign_payload(payload_bytes(doc), key), indent=2).encode()


def evaluate(cursor=None):
    with dg.instance_for_test() as instance:
        ctx = dg.build_sensor_context(instance=instance, cursor=cursor)
        result = inbox_sensor(ctx)
        return result, ctx.cursor


NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def parse_text(text: str, meta: dict | None = None, name: str = "f"):
    wrapper, _ = make_intake(text.encode("utf-8"), name, meta or {})
    return parse_intake(wrapper, NOW)[1]
