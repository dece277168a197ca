"""Progress lines for people running `benchwh` (Dagster's own logs stay quiet in the CLI)."""
from __future__ import annotations

import sys
import time

_START = time.monotonic()


def progress(message: str) -> None:
    print(f"[{time.monotonic() - _START:6.1f}s] {message}", file=sys.stderr, flush=True)


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 version', '2 versions': counts read the same in every message."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
