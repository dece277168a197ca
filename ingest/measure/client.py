"""A measuring client for OpenAI-compatible streaming chat servers.

Times are taken on the client, as a user of the server sees them: `sent_at` just before the
request is written, `first_token_at` when the first chunk carrying generated text arrives,
`last_token_at` when the last such chunk arrives, and `token_arrivals` the arrival time of every
such chunk (chunks that came in one read share a time). Server-reported timings are not used, so
llama-server, Ollama, vLLM and LM Studio are measured the same way.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Iterator

import requests

from ingest import config


class BenchError(Exception):
    """A failure the user should see as one line (no traceback)."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class UsageError(BenchError):
    """A mistake in the command line (exit code 2, like the rest of `benchwh`)."""


class ServerUnreachable(BenchError):
    pass


class NotOpenAICompatible(BenchError):
    pass


class ModelNotServed(BenchError):
    pass


class NoAnswer(BenchError):
    """The server accepted the connection but sent nothing back in time."""


class StreamCut(BenchError):
    """The answer stopped before its end (connection dropped, stalled, or no end marker)."""


class ServerRejected(BenchError):
    """The server answered the request with an error (for instance: prompt too long)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass
class StreamResult:
    text: str
    sent_at: float  # time.perf_counter() values, seconds
    first_token_at: float | None
    last_token_at: float | None
    stream_tokens: int  # chunks carrying generated text: a token count when usage is absent
    token_arrivals: list[float] = field(default_factory=list)
    usage: dict | None = None
    finish_reason: str | None = None
    system_fingerprint: str | None = None
    model: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def chat_url(endpoint: str) -> str:
    """The chat completions URL for an endpoint given as a base, a /v1 base or the full URL."""
    url = endpoint.strip().rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    if url.endswith("/v1"):
        return url + "/chat/completions"
    return url + "/v1/chat/completions"


def base_url(endpoint: str) -> str:
    """The server root (scheme://host:port plus any prefix before /v1)."""
    url = endpoint.strip().rstrip("/")
    for suffix in ("/chat/completions", "/v1"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    return url.rstrip("/")


def _error_text(response: requests.Response) -> str:
    """The server's own error message when it sent one in JSON, else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("code") or err)[:300]
        return str(err)[:300]
    return str(body)[:200]


def _drain(response: requests.Response, limit: int = 1 << 20) -> None:
    try:
        response.raw.read(limit)
    except Exception:  # only politeness towards the server: a failure changes nothing
        pass


def _is_json(response: requests.Response) -> bool:
    try:
        response.json()
    except ValueError:
        return False
    return True


_OPTIONAL_FIELDS = ("stream_options", "ignore_eos")


class ChatClient:
    def __init__(
        self,
        endpoint: str,
        model: str,
        api_key: str | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 300.0,
        session: requests.Session | None = None,
    ):
        self.endpoint = endpoint
        self.url = chat_url(endpoint)
        self.base = base_url(endpoint)
        self.model = model
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.session = session or requests.Session()
        self.headers = {"User-Agent": config.USER_AGENT, "Accept": "text/event-stream"}
        # optional request fields a strict server refused once: not sent again
        self.dropped_fields: set[str] = set()
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"

    def close(self) -> None:
        self.session.close()

    # -- side requests (engine, context size) -------------------------------------------

    def get_json(self, path: str, timeout: float | None = None) -> dict | list | None:
        """GET base+path as JSON; None on any failure (these probes are best effort)."""
        try:
            r = self.session.get(self.base + path, headers={"User-Agent": config.USER_AGENT},
                                 timeout=(self.connect_timeout, timeout or min(self.read_timeout, 10)))
            if r.status_code != 200:
                return None
            return r.json()
        except (requests.RequestException, ValueError):
            return None

    def post_json(self, path: str, body: dict, timeout: float | None = None) -> dict | list | None:
        try:
            r = self.session.post(self.base + path, json=body, headers={"User-Agent": config.USER_AGENT},
                                  timeout=(self.connect_timeout, timeout or min(self.read_timeout, 10)))
            if r.status_code != 200:
                return None
            return r.json()
        except (requests.RequestException, ValueError):
            return None

    # -- the measured request ------------------------------------------------------------

    def stream_chat(
        self,
        messages: list[dict],
        max_tokens: int,
        temperature: float = 0.0,
        seed: int | None = None,
        extra: dict | None = None,
    ) -> StreamResult:
        body = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if seed is not None:
            body["seed"] = seed
        body.update(extra or {})
        while True:
            for name in self.dropped_fields:
                body.pop(name, None)
            try:
                return self._post_stream(body)
            except ServerRejected as exc:
                # An older or strict server refusing an optional field (usage in the stream,
                # ignore_eos) is asked again without it; the samples then say how they counted.
                refused = [f for f in _OPTIONAL_FIELDS if f in body and exc.status in (400, 422)
                           and f in str(exc)]
                if not refused:
                    raise
                self.dropped_fields.update(refused)

    def _post_stream(self, body: dict) -> StreamResult:
        data = json.dumps(body).encode()
        headers = dict(self.headers, **{"Content-Type": "application/json"})
        sent_at = time.perf_counter()
        try:
            response = self.session.post(self.url, data=data, headers=headers, stream=True,
                                         timeout=(self.connect_timeout, self.read_timeout))
        except requests.exceptions.ConnectTimeout:
            raise ServerUnreachable(f"server unreachable: {self.url} did not accept a connection "
                                    f"within {self.connect_timeout:g} s") from None
        except requests.exceptions.ReadTimeout:
            raise NoAnswer(f"server did not answer: {self.url} sent nothing within "
                           f"{self.read_timeout:g} s") from None
        except requests.exceptions.ConnectionError as exc:
            text = str(exc)
            if "Connection refused" in text or "Failed to establish" in text or "resolve" in text \
                    or "Name or service not known" in text:
                raise ServerUnreachable(f"server unreachable: cannot connect to {self.url}") from None
            raise NoAnswer(f"server did not answer: {self.url} closed the connection "
                           "without a reply") from None
        except requests.exceptions.RequestException as exc:
            raise ServerUnreachable(f"server unreachable: {self.url}: {type(exc).__name__}") from None
        with response:
            self._check_status(response)
            return self._read_stream(response, sent_at)

    def _check_status(self, response: requests.Response) -> None:
        status = response.status_code
        if status == 200:
            ctype = response.headers.get("Content-Type", "")
            if "text/event-stream" in ctype or "application/x-ndjson" in ctype:
                return
            if "application/json" in ctype or "text/html" in ctype or "text/plain" in ctype:
                _drain(response)  # read the short answer so the connection closes cleanly
            if "application/json" in ctype:
                # some servers answer non-streamed JSON when they ignore `stream`: not measurable
                raise NotOpenAICompatible(
                    f"not OpenAI-compatible: {self.url} answered JSON instead of an SSE stream "
                    "(does the server support stream: true?)")
            if "text/html" in ctype or "text/plain" in ctype:
                raise NotOpenAICompatible(
                    f"not OpenAI-compatible: {self.url} answered {ctype.split(';')[0]}, not an SSE stream")
            return  # unknown type: let the stream parser decide
        if status in (401, 403):
            raise ServerRejected(f"server refused the request (HTTP {status}): {_error_text(response)}"
                                 " (pass --api-key?)", status)
        if status == 404:
            # An OpenAI-style server answers an unknown model with a JSON error naming the model;
            # a server without the route answers a plain 404 page.
            if _is_json(response) and "model" in _error_text(response).lower():
                raise ModelNotServed(f"model not served: {self.model!r} is not available at "
                                     f"{self.base} ({_error_text(response)})")
            raise NotOpenAICompatible(f"not OpenAI-compatible: {self.url} answered HTTP 404 "
                                      "(no /v1/chat/completions route)")
        if status in (405, 501):
            raise NotOpenAICompatible(f"not OpenAI-compatible: {self.url} answered HTTP {status}")
        message = _error_text(response)
        lowered = message.lower()
        if status == 400 and "model" in lowered and ("not found" in lowered or "does not exist" in lowered):
            raise ModelNotServed(f"model not served: {self.model!r}: {message}")
        raise ServerRejected(f"server error (HTTP {status}): {message}", status)

    def _events(self, response: requests.Response) -> Iterator[tuple[float, str]]:
        """(arrival time, data) for each SSE `data:` line, as soon as its bytes arrive."""
        raw = response.raw
        buffer = b""
        while True:
            try:
                # read1 returns what has arrived (one HTTP chunk at most) instead of waiting
                # for a full buffer, so each token is timed when it lands
                chunk = raw.read1(65536, decode_content=True)
            except requests.exceptions.ReadTimeout:
                raise StreamCut(f"stream cut mid-answer: nothing received for "
                                f"{self.read_timeout:g} s") from None
            except Exception as exc:  # urllib3 ProtocolError, ReadTimeoutError, IncompleteRead...
                name = type(exc).__name__
                if "Timeout" in name or "timed out" in str(exc):
                    raise StreamCut(f"stream cut mid-answer: nothing received for "
                                    f"{self.read_timeout:g} s") from None
                raise StreamCut(f"stream cut mid-answer: the connection dropped ({name})") from None
            now = time.perf_counter()
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                line = line.rstrip(b"\r")
                if line.startswith(b"data:"):
                    yield now, line[5:].strip().decode("utf-8", "replace")
        if buffer.strip().startswith(b"data:"):
            yield time.perf_counter(), buffer.strip()[5:].strip().decode("utf-8", "replace")

    def _read_stream(self, response: requests.Response, sent_at: float) -> StreamResult:
        result = StreamResult(text="", sent_at=sent_at, first_token_at=None, last_token_at=None,
                              stream_tokens=0, headers=dict(response.headers))
        parts: list[str] = []
        done = False
        seen_event = False
        for at, data in self._events(response):
            if data == "[DONE]":
                done = True
                continue  # read on to the end of the body so the connection is reused
            try:
                event = json.loads(data)
            except ValueError:
                raise NotOpenAICompatible("not OpenAI-compatible: a stream line is not JSON: "
                                          f"{data[:80]!r}") from None
            if not isinstance(event, dict):
                raise NotOpenAICompatible("not OpenAI-compatible: a stream event is not a JSON object")
            if "error" in event:
                err = event["error"]
                message = err.get("message") if isinstance(err, dict) else err
                raise ServerRejected(f"server error mid-stream: {message}")
            seen_event = True
            result.system_fingerprint = event.get("system_fingerprint") or result.system_fingerprint
            result.model = event.get("model") or result.model
            if isinstance(event.get("usage"), dict):
                result.usage = event["usage"]
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                piece = (delta.get("content") or "") + (delta.get("reasoning_content") or "") \
                    + (delta.get("reasoning") or "")
                if piece:
                    if result.first_token_at is None:
                        result.first_token_at = at
                    result.last_token_at = at
                    result.stream_tokens += 1
                    result.token_arrivals.append(at)
                    parts.append(delta.get("content") or "")
                if choice.get("finish_reason"):
                    result.finish_reason = choice["finish_reason"]
        result.text = "".join(parts)
        if not seen_event and not done:
            raise NotOpenAICompatible("not OpenAI-compatible: the answer held no `data:` events")
        if not done and result.finish_reason is None:
            raise StreamCut("stream cut mid-answer: the stream ended without finish_reason or [DONE]")
        return result
