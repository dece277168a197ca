"""An external source: idle and load power of GPUs from a (made-up) JSON feed.

It ships its own recording (recording/ beside this file) and says where through
Source.recording_dir(), so `benchwh refresh --offline` replays it like a built-in one.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from ingest.raw_store import RawEntry
from ingest.source import Entity, FetchContext, PayloadRejected, Source


class PowerReading(pa.DataFrameModel):
    """One row per GPU of one feed payload."""

    gpu: Series[str] = pa.Field(str_length={"min_value": 1}, description="GPU name as the feed gives it.")
    idle_w: Series[float] = pa.Field(ge=0, le=2000, description="Idle board power, W.")
    load_w: Series[float] = pa.Field(ge=0, le=2000, description="Board power under an LLM decode load, W.")

    class Config:
        coerce = True
        strict = False
        unique = ["gpu"]


class ExamplePowerSource(Source):
    name = "example_power"
    kind = "snapshot"
    license = "CC0 (example data written for a test)"
    attribution = "benchwh-example-source"
    default_url = "https://power.example.org/api"
    freshness_warn_hours = 24 * 30
    freshness_error_hours = 24 * 365
    entities = (Entity("readings", PowerReading, "GPU idle and load power, one row per GPU."),)

    def recording_dir(self) -> Path:
        return Path(__file__).resolve().parent / "recording"

    def fetch(self, ctx: FetchContext) -> None:
        ctx.get(f"{self.base_url()}/readings", ext="json")

    def parse(self, body: bytes, entry: RawEntry) -> dict[str, pd.DataFrame]:
        try:
            doc = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PayloadRejected(f"not JSON: {exc}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("readings"), list):
            raise PayloadRejected("no `readings` list", check="payload_shape")
        rows = [{"gpu": r.get("gpu"), "idle_w": r.get("idle_w"), "load_w": r.get("load_w")}
                for r in doc["readings"] if isinstance(r, dict)]
        return {"readings": pd.DataFrame(rows, columns=["gpu", "idle_w", "load_w"])}
