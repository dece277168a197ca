"""Signing keys in a test's warehouse home."""
from __future__ import annotations

import base64
from pathlib import Path

from ingest.sources.runs import dsse


def trust(home: Path, key, name: str = "alice") -> None:
    """Trust the public half of private `key` under `name` (what `benchwh keys trust` records)."""
    dsse.trust_key(home, base64.b64encode(dsse.public_key_of(key)).decode(), name)
