"""The one list of tool-output parsers that `benchwh runs add` and the inbox try, in order.

Each parser is a pure function of the file's text: `sniff(text)` says whether it takes the text
(its kind) or what it found missing, `parse(text, kind, default_time)` returns the runs. The
first parser that takes a file parses it; a file that none takes is rejected with what each
one found missing. Signed run files (DSSE envelopes) are recognised before these (intake.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable

from ingest.sources.runs import llamabench, llamaserver, ollama, vllm
from ingest.sources.runs.errors import RunRejected
from ingest.sources.runs.model import ParsedRun


@dataclass(frozen=True)
class Parser:
    name: str
    sniff: Callable[[str], tuple[str | None, str]]
    parse: Callable[[str, str, datetime], list[ParsedRun]]


def _llama_bench(text: str) -> tuple[str | None, str]:
    fmt, missing = llamabench.sniff(text)
    return (f"llama-bench-{fmt}" if fmt else None), missing


PARSERS: tuple[Parser, ...] = (
    Parser("llama-bench", _llama_bench, lambda text, kind, t: llamabench.parse(text, kind.split("-", 2)[2], t)),
    Parser("ollama --verbose", ollama.sniff_verbose, lambda text, kind, t: ollama.parse_verbose(text, t)),
    Parser("ollama API", ollama.sniff_api, lambda text, kind, t: ollama.parse_api(text, t)),
    Parser("llama-server JSON", llamaserver.sniff_json, lambda text, kind, t: llamaserver.parse_json(text, t)),
    Parser("llama-server log", llamaserver.sniff_log, lambda text, kind, t: llamaserver.parse_log(text, t)),
    Parser("vLLM JSON", vllm.sniff_json, lambda text, kind, t: vllm.parse_json(text, t)),
    Parser("vLLM console", vllm.sniff_console, lambda text, kind, t: vllm.parse_console(text, t)),
)
_BY_KIND = {"ollama-verbose": PARSERS[1], "ollama": PARSERS[2], "llama-server": PARSERS[3],
            "llama-server-log": PARSERS[4], "vllm": PARSERS[5], "vllm-console": PARSERS[6]}


def parser_for(kind: str) -> Parser:
    """The parser of a kind `choose` gave."""
    if kind.startswith("llama-bench-"):
        return PARSERS[0]
    return _BY_KIND[kind]


def choose(text: str) -> tuple[Parser, str]:
    """The first parser that takes the text and the kind it gave, or RunRejected naming what
    each parser found missing."""
    missing = []
    for parser in PARSERS:
        kind, why = parser.sniff(text)
        if kind:
            return parser, kind
        missing.append(f"{parser.name}: {why}")
    raise RunRejected("unknown format; no parser takes it (" + "; ".join(missing) + ")", "unknown_format")


def parse(text: str, default_time: datetime) -> tuple[str, list[ParsedRun]]:
    parser, kind = choose(text)
    return kind, parser.parse(text, kind, default_time)
