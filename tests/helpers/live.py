"""The live fetch path against loopback servers: a recorded body to serve and a resource that
answers conditional requests."""
from __future__ import annotations

import json

from ingest.config import snapshots_dir
from tests.helpers.loopback import Reply


def recorded_body(source: str) -> bytes:
    index = json.loads((snapshots_dir() / source / "index.json").read_text())
    last = [r for r in index if r.get("status", 200) == 200][-1]
    return (snapshots_dir() / source / last["file"]).read_bytes()


class Resource:
    """Serves one body with an ETag, answering 304 to If-None-Match; can be told to fail first."""

    def __init__(self, body: bytes, etag: str, content_type: str, failures: list[Reply] | None = None):
        self.body, self.etag, self.content_type = body, etag, content_type
        self.failures = list(failures or [])
        self.statuses: list[int] = []

    def __call__(self, req) -> Reply:
        if self.failures:
            reply = self.failures.pop(0)
        elif req.headers.get("if-none-match") == self.etag:
            reply = Reply(304, b"", {"ETag": self.etag})
        else:
            reply = Reply(200, self.body, {"ETag": self.etag, "Content-Type": self.content_type})
        self.statuses.append(reply.status)
        return reply
