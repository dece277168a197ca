"""A small OpenAI-compatible streaming chat server for tests, on tests/helpers/loopback.py.

It streams `data: {...}` SSE chunks the way llama-server does, on a schedule fixed from the
moment the request arrived: the first token `first_token_s` after it, then one token every
`per_token_s`. Scheduling against the arrival time (not sleeping between writes) keeps the
schedule from drifting on a busy machine; what the server did is in each request's
`chunks_sent_at` (the client's clock), which the client's measurements are checked against.

The prompt is "tokenised" as whitespace-separated words, and `usage.prompt_tokens` reports
that count. For the context-recall walk the server finds the needle sentence in the prompt and
answers with its code only while the prompt is at most `recall_up_to` tokens; above `n_ctx` it
refuses the request like llama-server does (HTTP 400, exceed_context_size_error).
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

from tests.helpers.loopback import LoopbackServer, Reply, Request

_NEEDLE = re.compile(r"The secret code for the (\w+) vault is ([\w-]+)\.")
_QUESTION = re.compile(r"What is the secret code for the (\w+) vault")


class _Cut(ConnectionResetError):
    """Raised inside the chunk stream: loopback drops the connection without the last chunk."""


@dataclass
class OpenAIServerConfig:
    model: str = "test-model"
    first_token_s: float = 0.1
    per_token_s: float = 0.005
    n_tokens: int | None = None  # tokens per answer; None: max_tokens
    usage: bool = True  # send the usage chunk when stream_options.include_usage is asked
    fingerprint: str | None = "b4567-1a2b3c4"  # llama-server build, as system_fingerprint
    n_ctx: int | None = None  # served in /props; prompts above it are refused
    recall_up_to: int | None = None  # recalls the needle only up to this many prompt tokens
    cut_after: int | None = None  # drop the connection after this many tokens ...
    cut_requests: tuple[int, ...] = ()  # ... in these chat requests (0 = the first one)
    hang_s: float | None = None  # wait this long before answering anything
    model_404: bool = False  # answer like an OpenAI server asked for a model it does not have
    refuse_fields: tuple[str, ...] = ()  # answer 400 to requests holding these fields (a strict server)
    props_model_path: str | None = "/models/Test-Model-7B-Q4_K_M.gguf"
    expose_props: bool = True


@dataclass
class OpenAIServer:
    config: OpenAIServerConfig = field(default_factory=OpenAIServerConfig)

    def __post_init__(self):
        self.server = LoopbackServer()
        self.server.route("/v1/chat/completions", self._chat)
        self.server.route("/v1/models", self._models)
        if self.config.expose_props:
            self.server.route("/props", self._props)
        self.chat_requests: list[dict] = []

    @property
    def url(self) -> str:
        return self.server.url

    def __enter__(self) -> "OpenAIServer":
        self.server.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.server.__exit__(*exc)

    # -- routes ---------------------------------------------------------------------------
    def _json(self, status: int, doc) -> Reply:
        return Reply(status, json.dumps(doc).encode(), headers={"Content-Type": "application/json"},
                     delay_s=self.config.hang_s or 0.0)

    def _models(self, req: Request) -> Reply:
        return self._json(200, {"object": "list", "data": [
            {"id": self.config.model, "object": "model", "owned_by": "llamacpp"}]})

    def _props(self, req: Request) -> Reply:
        doc = {"default_generation_settings": {"n_ctx": self.config.n_ctx or 4096},
               "model_path": self.config.props_model_path, "total_slots": 1}
        if self.config.fingerprint:
            doc["build_info"] = self.config.fingerprint
        return self._json(200, doc)

    def _chat(self, req: Request) -> Reply:
        cfg = self.config
        body = json.loads(req.body)
        index = len(self.chat_requests)
        self.chat_requests.append(body)
        if cfg.hang_s:
            return Reply(200, b"", delay_s=cfg.hang_s)
        if cfg.model_404 or body.get("model") != cfg.model:
            return self._json(404, {"error": {"message": f"The model `{body.get('model')}` does not exist",
                                              "type": "invalid_request_error", "code": "model_not_found"}})
        refused = [f for f in cfg.refuse_fields if f in body]
        if refused:
            return self._json(400, {"error": {"message": f"Unrecognized request argument supplied: {refused[0]}",
                                              "type": "invalid_request_error"}})
        prompt = " ".join(m.get("content", "") for m in body.get("messages", []))
        prompt_tokens = len(prompt.split())
        if cfg.n_ctx is not None and prompt_tokens + body.get("max_tokens", 0) > cfg.n_ctx:
            return self._json(400, {"error": {
                "code": 400, "type": "exceed_context_size_error",
                "message": f"the request exceeds the available context size ({prompt_tokens} > {cfg.n_ctx})"}})
        tokens = self._answer(prompt, prompt_tokens, body.get("max_tokens") or 16)
        cut = cfg.cut_after if index in cfg.cut_requests else None
        include_usage = cfg.usage and (body.get("stream_options") or {}).get("include_usage")
        chunks = self._stream(req.at, tokens, prompt_tokens, include_usage, cut)
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        if cut is not None:
            headers["Connection"] = "close"  # so the dropped stream ends the connection
        return Reply(200, headers=headers, chunks=chunks)

    def _answer(self, prompt: str, prompt_tokens: int, max_tokens: int) -> list[str]:
        question = _QUESTION.search(prompt)
        if question:  # a recall request
            needle = {m.group(1): m.group(2) for m in _NEEDLE.finditer(prompt)}.get(question.group(1))
            if needle and (self.config.recall_up_to is None or prompt_tokens <= self.config.recall_up_to):
                return [needle]
            return ["I", " cannot", " find", " it", "."]
        n = self.config.n_tokens if self.config.n_tokens is not None else max_tokens
        return [f" w{i}" for i in range(min(n, max_tokens))]

    def _event(self, delta: dict, finish: str | None = None, usage: dict | None = None) -> bytes:
        doc = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1764489600,
               "model": self.config.model,
               "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if self.config.fingerprint:
            doc["system_fingerprint"] = self.config.fingerprint
        if usage:
            doc["usage"] = usage
        return b"data: " + json.dumps(doc).encode() + b"\n\n"

    def _stream(self, arrived: float, tokens: list[str], prompt_tokens: int, include_usage: bool,
                cut: int | None):
        cfg = self.config
        yield 0.0, self._event({"role": "assistant", "content": ""})
        for i, tok in enumerate(tokens):
            if cut is not None and i >= cut:
                raise _Cut("cut by the test server")
            wait = arrived + cfg.first_token_s + i * cfg.per_token_s - time.perf_counter()
            yield max(0.0, wait), self._event({"content": tok})
        yield 0.0, self._event({}, finish="length" if len(tokens) > 5 else "stop")
        if include_usage:
            yield 0.0, self._event({}, usage={"prompt_tokens": prompt_tokens, "completion_tokens": len(tokens),
                                              "total_tokens": prompt_tokens + len(tokens)})
        yield 0.0, b"data: [DONE]\n\n"
