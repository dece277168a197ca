"""Small helpers shared by the tool-output parsers."""
from __future__ import annotations

import functools
import json
import re
from datetime import datetime, timezone

from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.payload import loads_strict

_GO_UNITS = {"h": 3600e3, "m": 60e3, "s": 1e3, "ms": 1.0, "us": 1e-3, "µs": 1e-3, "μs": 1e-3, "ns": 1e-6}
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def go_duration_ms(text: str) -> float:
    """A Go time.Duration string (`2m43.589s`, `97.885315ms`, `850µs`, `1h2m3s`) in milliseconds."""
    s = text.strip()
    if s in ("0", "0s"):
        return 0.0
    if s.startswith("-"):
        raise RunRejected(f"duration {text!r} is negative", "negative")
    pos, total = 0, 0.0
    for m in _GO_PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _GO_UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise RunRejected(f"duration {text[:40]!r} is not a Go duration", "bad_duration")
    return total


def strip_bom(text: str) -> str:
    return text[1:] if text.startswith("\ufeff") else text


def decode_text(body: bytes, what: str) -> str:
    try:
        return strip_bom(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise RunRejected(f"{what} is not UTF-8 text", "malformed_payload") from None


# ANSI/VT100 escape sequences a terminal capture carries (colours, cursor moves, spinners)
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """The text a terminal showed: escape sequences removed, carriage-return redraws resolved
    to the last state of each line."""
    if "\x1b" not in text and "\r" not in text:
        return text
    lines = []
    for line in _ANSI.sub("", text).split("\n"):
        if "\r" in line:
            parts = [p for p in line.split("\r") if p]
            line = parts[-1] if parts else ""
        lines.append(line)
    return "\n".join(lines)


@functools.lru_cache(maxsize=4)
def _json_values_cached(text: str) -> tuple:
    return tuple(json_objects(text))


def json_values(text: str) -> list:
    """json_objects(text), worked out once per text for the parsers that each look at it."""
    return list(_json_values_cached(text))


def json_objects(text: str) -> list:
    """The JSON value(s) of a text: the whole text, else one value per line, else the
    outermost [...] or {...} block with log lines around it (stray lines are tolerated)."""
    stripped = text.strip()
    if not stripped:
        return []
    try:
        value = loads_strict(stripped, "file")
        return value if isinstance(value, list) else [value]
    except RunRejected as exc:
        if exc.check == "non_finite":
            raise
    values, stray = [], 0
    for line in stripped.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                values.append(loads_strict(line, "line"))
                continue
            except RunRejected as exc:
                if exc.check == "non_finite":
                    raise
        stray += 1
    if values:
        return values
    # a pretty-printed array (or object) between log lines
    lines = stripped.splitlines()
    for opener, closer in (("[", "]"), ("{", "}")):
        starts = [i for i, l in enumerate(lines) if l.strip().startswith(opener)]
        ends = [i for i, l in enumerate(lines) if l.strip().endswith(closer)]
        if starts and ends and ends[-1] > starts[0]:
            block = "\n".join(lines[starts[0]:ends[-1] + 1])
            try:
                value = loads_strict(block, "file")
            except RunRejected as exc:
                if exc.check == "non_finite":
                    raise
                continue
            return value if isinstance(value, list) else [value]
    return []


def utc_from_unix(value) -> datetime:
    return datetime.fromtimestamp(float(value), tz=timezone.utc)


def parse_any_time(value, field: str) -> datetime:
    """An ISO 8601 / RFC 3339 time with any offset (tools print local offsets), as UTC."""
    if not isinstance(value, str):
        raise RunRejected(f"{field}: not a timestamp", "bad_timestamp")
    text = value.strip().replace("z", "Z")
    m = re.fullmatch(r"^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$", text)
    if not m:
        raise RunRejected(f"{field}: {value[:40]!r} is not a timestamp", "bad_timestamp")
    frac = (m.group(2) or "")[:7]
    zone = m.group(3) or "Z"
    if zone != "Z" and ":" not in zone:
        zone = zone[:3] + ":" + zone[3:]
    try:
        ts = datetime.fromisoformat(m.group(1).replace(" ", "T") + frac + zone.replace("Z", "+00:00"))
    except ValueError:
        raise RunRejected(f"{field}: {value[:40]!r} is not a valid date", "bad_timestamp") from None
    return ts.astimezone(timezone.utc)


def dumps(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
