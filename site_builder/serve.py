"""Serve a built site folder on 127.0.0.1 (a look, not a production server)."""
from __future__ import annotations

import functools
import http.server
from pathlib import Path


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the stdlib's name
        pass


def make_server(folder: Path, port: int = 8000) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(QuietHandler, directory=str(folder))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
