"""Serve a built site folder on 127.0.0.1 (a look, not a production server).

Single byte ranges (`Range: bytes=a-b`, `a-`, `-n`) are answered with 206, as static hosts and CDNs
do, so that DuckDB-WASM on the release page and range readers (pyarrow through fsspec) fetch only
the parts of a Parquet file they need. `bytes_sent` counts the body bytes sent per path.
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from collections import Counter
from pathlib import Path

RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    bytes_sent: Counter = Counter()
    lock = threading.Lock()

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's name
        pass

    def end_headers(self):
        self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def send_head(self):
        wanted = self.headers.get("Range")
        path = self.translate_path(self.path)
        if not wanted or not os.path.isfile(path):
            return super().send_head()
        match = RANGE.match(wanted.strip())
        size = os.path.getsize(path)
        if not match or not (match.group(1) or match.group(2)):
            return super().send_head()  # several ranges or none understood: the whole file, as RFC 9110 allows
        if match.group(1):
            start = int(match.group(1))
            end = min(int(match.group(2)), size - 1) if match.group(2) else size - 1
        else:
            start, end = max(size - int(match.group(2)), 0), size - 1
        if start >= size or end < start:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        fh = open(path, "rb")
        fh.seek(start)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        self._remaining = end - start + 1
        return fh

    def copyfile(self, source, outputfile):
        remaining = getattr(self, "_remaining", None)
        sent = 0
        while remaining is None or sent < remaining:
            block = source.read(65536 if remaining is None else min(65536, remaining - sent))
            if not block:
                break
            outputfile.write(block)
            sent += len(block)
        with self.lock:
            self.bytes_sent[self.path.split("?", 1)[0]] += sent


class SiteServer(http.server.ThreadingHTTPServer):
    """Counts the body bytes its own requests sent, per path (`bytes_sent`)."""

    def __init__(self, folder: Path, port: int):
        handler_class = type("SiteHandler", (RangeHandler,), {"bytes_sent": Counter(), "lock": threading.Lock()})
        self.bytes_sent = handler_class.bytes_sent
        super().__init__(("127.0.0.1", port), functools.partial(handler_class, directory=str(folder)))


def make_server(folder: Path, port: int = 8000) -> SiteServer:
    return SiteServer(folder, port)
