"""The polite HTTP client every source fetches through.

Polite means: an identifying User-Agent with a contact URL, robots.txt obeyed, at most
`max_rps` requests per second to any one host, connect/read timeouts, a bounded number of
retries with exponential backoff (honouring Retry-After) on transient failures only, and
conditional GETs so an unchanged resource is not downloaded again.

Bounded, whatever the server does (issue #53 item 1):
- size: a body is decoded while it streams (gzip and deflate are asked for and undone here) and
  refused once its decoded bytes pass `max_bytes`, so a compressed bomb is cut at the cap;
- time: one deadline over each request, connecting, the status line and headers included
  (`deadline_s`, env BENCHWH_FETCH_DEADLINE_S, default 300 s): a watchdog thread shuts the
  socket down when it passes, so a server trickling its headers a byte at a time is cut off
  too (a socket timeout only bounds each read); and one deadline over every attempt of one
  `get()` with its backoff waits, redirects and robots.txt (`url_deadline_s`, env
  BENCHWH_FETCH_URL_DEADLINE_S, default 600 s).

The requests are sent by urllib3's `HTTPConnection` (its public request/getresponse), on
connections this module opens and keeps alive, so the watchdog always holds the socket it
has to shut.
"""
from __future__ import annotations

import http.client
import os
import random
import socket
import threading
import time
import urllib.request
import urllib.robotparser
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Callable, Mapping
from urllib.parse import urljoin, urlsplit

import certifi
import requests
import urllib3
import urllib3.exceptions as u3
from urllib3.connection import HTTPConnection, HTTPSConnection

from ingest import config

# A site asking for more than this between requests is taken at its word only up to here.
_MAX_CRAWL_DELAY_S = 60.0
# Bounds on one request (issue #12): a body above max_bytes is refused while it streams (never
# held whole), and a request that has not finished within its deadline is cut off, however
# slowly the server trickles. Sources may set their own max_body_bytes.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_DEADLINE_S = 300.0
DEFAULT_URL_DEADLINE_S = 600.0
_MAX_REDIRECTS = 5
_CHUNK = 64 * 1024
_IDLE_PER_HOST = 4  # kept-alive connections per host


class FetchError(Exception):
    """A fetch failed for good. The message is one line: the URL and what happened."""

    def __init__(self, url: str, what: str, status: int | None = None):
        what = " ".join(str(what).split())  # one line, whatever the cause said
        super().__init__(f"GET {url}: {what}")
        self.url = url
        self.what = what
        self.status = status


class DeadlineExceeded(FetchError):
    """A request or a URL's attempts ran out of time."""


class _Transient(Exception):
    """An attempt failed in a way another attempt may not: the network or the server may recover."""


@dataclass
class FetchStats:
    """Counters for progress and logging (robots.txt fetches included)."""

    requests: int = 0  # HTTP requests sent, every attempt counted
    retries: int = 0  # attempts after a transient failure
    not_modified: int = 0  # 304 answers
    bytes: int = 0  # body bytes received (decoded)
    slept_s: float = 0.0  # time spent waiting: rate limit, backoff and Retry-After


@dataclass
class FetchResponse:
    """One answer, its body read whole (decoded) within the bounds."""

    url: str  # the URL that answered (after redirects)
    status_code: int
    reason: str
    headers: urllib3.HTTPHeaderDict  # case-insensitive
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


def default_url_deadline_s() -> float:
    """The longest one `get()` may take over all its attempts (env BENCHWH_FETCH_URL_DEADLINE_S)."""
    return float(os.environ.get("BENCHWH_FETCH_URL_DEADLINE_S") or DEFAULT_URL_DEADLINE_S)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None if absent/bad."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # HTTP dates are GMT
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def _host_key(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


class _Budget:
    """The time left for all attempts of one get()."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def left(self) -> float:
        return self.ends - time.monotonic()


class BodyDecoder:
    """Undoes one Content-Encoding (gzip, deflate or none) as the bytes arrive, refusing the body
    once its decoded size passes `limit`: zlib is asked for at most the bytes still allowed, so a
    bomb never expands in memory beyond the cap."""

    def __init__(self, encoding: str, limit: int, url: str):
        self.encoding = encoding
        self.limit = limit
        self.url = url
        self.size = 0
        self._first = b""  # deflate: the bytes so far, until we know zlib-wrapped from raw
        if encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._z = zlib.decompressobj(zlib.MAX_WBITS)
        elif encoding in ("", "identity"):
            self._z = None
        else:
            raise FetchError(url, f"unsupported Content-Encoding {encoding[:40]!r} (asked for gzip, deflate)")

    def feed(self, data: bytes) -> list[bytes]:
        if self._z is None:
            return [self._count(data)]
        out = []
        while data:
            try:
                piece = self._z.decompress(data, self.limit - self.size + 1)
            except zlib.error as exc:
                if self.encoding == "deflate" and not self.size and not self._first:
                    # servers send raw deflate as often as the zlib stream the RFC names
                    self._z, self._first = zlib.decompressobj(-zlib.MAX_WBITS), b"raw"
                    continue
                raise _Transient(f"bad {self.encoding} data: {exc}") from None
            out.append(self._count(piece))
            data = self._z.unconsumed_tail
            if self._z.eof and self._z.unused_data:
                if self.encoding == "deflate":
                    break  # what follows a whole deflate stream is padding
                data = self._z.unused_data  # a gzip of several members
                self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        return out

    def finish(self) -> None:
        if self._z is not None and not self._z.eof and (self.size or self.encoding != "deflate"):
            raise _Transient(f"{self.encoding} body cut short")

    def _count(self, piece: bytes) -> bytes:
        self.size += len(piece)
        if self.size > self.limit:
            raise FetchError(self.url, f"body above the {self.limit}-byte limit once decoded "
                                       f"({self.encoding or 'identity'}; stopped reading)")
        return piece


class PoliteClient:
    def __init__(
        self,
        user_agent: str = config.USER_AGENT,
        max_rps: float | None = None,
        connect_timeout: float = 5,
        read_timeout: float = 30,
        retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 30,
        respect_robots: bool = True,
        log: Callable[[str], None] | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        deadline_s: float | None = None,
        url_deadline_s: float | None = None,
    ):
        self.user_agent = user_agent
        self.max_rps = float(max_rps if max_rps is not None else config.max_rps())
        if self.max_rps <= 0:
            raise ValueError(f"max_rps must be positive, got {self.max_rps}")
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = float(read_timeout)
        self.retries = int(retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.respect_robots = respect_robots
        self.log = log
        self.max_bytes = int(max_bytes)
        self.deadline_s = float(deadline_s if deadline_s is not None else config.fetch_deadline_s())
        self.url_deadline_s = float(url_deadline_s if url_deadline_s is not None else default_url_deadline_s())
        self.stats = FetchStats()
        self._lock = threading.Lock()  # guards stats, _next_slot, _robots, _robots_locks, _idle
        self._next_slot: dict[str, float] = {}  # host -> earliest monotonic time of its next request
        self._crawl_delay: dict[str, float] = {}
        self._robots: dict[str, urllib.robotparser.RobotFileParser] = {}
        self._robots_locks: dict[str, threading.Lock] = {}
        self._idle: dict[str, list[HTTPConnection]] = {}  # host -> kept-alive connections not in use

    # -- public ---------------------------------------------------------------------------

    @property
    def requests_made(self) -> int:
        return self.stats.requests

    @property
    def slept_s(self) -> float:
        return self.stats.slept_s

    def get(
        self,
        url: str,
        params: Mapping[str, str] | None = None,
        etag: str | None = None,
        last_modified: str | None = None,
        headers: Mapping[str, str] | None = None,
        max_bytes: int | None = None,
        redirect_hosts: tuple[str, ...] = (),
    ) -> FetchResponse:
        """GET url; returns the response for 2xx and 304, raises FetchError otherwise.

        Redirects are followed within the same host; to another host only when its name is in
        `redirect_hosts` (then that host's robots.txt and rate limit apply). `response.url` is
        the final URL. The whole call, robots.txt and every attempt included, ends within
        `url_deadline_s`.
        """
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise FetchError(url, "not an http(s) URL")
        full_url = requests.Request("GET", url, params=params).prepare().url or url
        budget = _Budget(self.url_deadline_s)
        if self.respect_robots and not self._allowed(full_url, budget):
            raise FetchError(full_url, "disallowed by robots.txt")
        sent_headers = {"User-Agent": self.user_agent, "Accept-Encoding": "gzip, deflate"}
        if etag:
            sent_headers["If-None-Match"] = etag
        if last_modified:
            sent_headers["If-Modified-Since"] = last_modified
        sent_headers.update(headers or {})
        limit = self.max_bytes if max_bytes is None else int(max_bytes)
        current = full_url
        for _hop in range(_MAX_REDIRECTS + 1):
            response = self._request(current, sent_headers, limit, budget)
            if response.status_code not in (301, 302, 303, 307, 308) or "location" not in response.headers:
                break
            target = urljoin(current, response.headers["location"])
            if urlsplit(target).scheme not in ("http", "https"):
                raise FetchError(full_url, f"redirected to a non-http URL {target[:200]}")
            if _host_key(target) != _host_key(current):
                host = (urlsplit(target).hostname or "").lower()
                if host not in {h.lower() for h in redirect_hosts}:
                    raise FetchError(full_url, f"redirected to another host {host} (not allowed for this source: "
                                     "add it to the source's redirect_hosts)")
                if self.respect_robots and not self._allowed(target, budget):
                    raise FetchError(target, "disallowed by robots.txt (after a redirect)")
            current = target
        else:
            raise FetchError(full_url, f"more than {_MAX_REDIRECTS} redirects")
        if response.status_code == 304:
            with self._lock:
                self.stats.not_modified += 1
            return response
        if 200 <= response.status_code < 300:
            return response
        raise FetchError(full_url, f"HTTP {response.status_code} {response.reason or ''}".strip(),
                         status=response.status_code)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()

    def __enter__(self) -> "PoliteClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def send(self, url: str, headers: Mapping[str, str], max_bytes: int, deadline_s: float) -> FetchResponse:
        """One attempt: GET url, its body read and decoded, all within `deadline_s` seconds.

        A watchdog shuts the connection's socket when the deadline passes, whatever phase the
        request is in (connecting, the status line, the headers, the body): each read is also
        bounded by `read_timeout`, but a server trickling a byte at a time never lets one lapse.
        Raises FetchError (for good) or _Transient (worth another attempt).
        """
        parts = urlsplit(url)
        proxy = self._proxy_for(parts)
        conn = self._take_idle(parts) or self._new_connection(parts, proxy)
        expired = threading.Event()
        held: list = []  # the connected socket: the connection drops it once the server will close
        # the phase the request is in, and the one it was in when the watchdog fired (what a
        # server cut off mid-header then gives to the parser looks like a whole answer)
        state = {"phase": "connecting", "cut_in": ""}

        def cut_off() -> None:
            state["cut_in"] = state["phase"]
            expired.set()
            for sock in (*held, conn.sock):
                if sock is not None:
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        watchdog = threading.Timer(max(0.0, deadline_s), cut_off)
        watchdog.daemon = True
        watchdog.start()
        reusable = False
        received = 0
        try:
            if conn.sock is None:
                conn.timeout = self.connect_timeout
                conn.connect()
            held.append(conn.sock)
            conn.timeout = self.read_timeout
            state["phase"] = "waiting for the status line and headers"
            # through a plain-http proxy the request names the whole URL; else only its path
            target = url if proxy and parts.scheme == "http" else (parts.path or "/") + (
                f"?{parts.query}" if parts.query else "")
            conn.request("GET", target, headers=dict(headers),
                         preload_content=False, decode_content=False)
            answer = conn.getresponse()
            state["phase"] = "reading the body"
            declared = answer.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise FetchError(url, f"body of {int(declared)} bytes is above the {max_bytes}-byte limit")
            decoder = BodyDecoder(answer.headers.get("Content-Encoding", "").strip().lower(), max_bytes, url)
            parts_out: list[bytes] = []
            while True:
                chunk = answer.read1(_CHUNK, decode_content=False)
                if not chunk:
                    break
                received += len(chunk)
                if received > max_bytes:  # compressed bytes count too: a stream may decode to nothing
                    raise FetchError(url, f"body above the {max_bytes}-byte limit (stopped reading)")
                parts_out.extend(decoder.feed(chunk))
                if expired.is_set():
                    break
            if expired.is_set():  # the socket was shut: what was read may be cut short
                raise DeadlineExceeded(url, self._deadline_message(deadline_s, state["cut_in"], received))
            decoder.finish()
            reusable = conn.sock is not None
            return FetchResponse(url=url, status_code=answer.status, reason=answer.reason or "",
                                 headers=answer.headers, content=b"".join(parts_out))
        except (OSError, http.client.HTTPException, u3.HTTPError, _Transient) as exc:
            if expired.is_set():
                raise DeadlineExceeded(url, self._deadline_message(deadline_s, state["cut_in"], received)) from None
            raise exc if isinstance(exc, _Transient) else _Transient(_describe(exc)) from None
        finally:
            watchdog.cancel()
            if reusable and not expired.is_set():
                self._keep_idle(parts, conn)
            else:
                conn.close()

    # -- internals ------------------------------------------------------------------------

    def _request(self, url: str, headers: Mapping[str, str], max_bytes: int, budget: _Budget) -> FetchResponse:
        """Send with retries within the budget; returns the last response (any status) or raises FetchError."""
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            self._wait_for_slot(url)
            left = budget.left()
            if left <= 0:
                raise DeadlineExceeded(url, f"not finished within the {budget.seconds:g}s deadline for all "
                                      f"attempts of a URL ({attempt - 1} attempts made)")
            with self._lock:
                self.stats.requests += 1
                if attempt > 1:
                    self.stats.retries += 1
            retry_after = None
            try:
                response = self.send(url, headers, max_bytes, min(left, self.deadline_s))
            except DeadlineExceeded as exc:
                if left < self.deadline_s:  # the URL's budget, not the request's own deadline, ran out
                    raise DeadlineExceeded(url, f"not finished within the {budget.seconds:g}s deadline for "
                                                f"all attempts of a URL (attempt {attempt}: {exc.what})") from None
                raise
            except _Transient as exc:
                what = str(exc)
            else:
                with self._lock:
                    self.stats.bytes += len(response.content)
                if response.status_code != 429 and response.status_code < 500:
                    return response
                what = str(response.status_code)
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                if attempt == attempts:
                    raise FetchError(url, f"HTTP {response.status_code} {response.reason or ''}"
                                     f" after {attempts} attempts", status=response.status_code)
            if attempt == attempts:
                raise FetchError(url, f"{what} after {attempts} attempts")
            delay = self._backoff(attempt, retry_after)
            if delay >= budget.left():
                raise DeadlineExceeded(url, f"{what} after {attempt} attempts (the next would start past the "
                                      f"{budget.seconds:g}s deadline for all attempts of a URL)")
            if self.log:
                self.log(f"GET {url}: retrying in {delay:.1f}s after {what} (attempt {attempt + 1}/{attempts})")
            self._sleep(delay)
        raise AssertionError("unreachable")

    @staticmethod
    def _deadline_message(deadline_s: float, phase: str, received: int) -> str:
        if phase == "reading the body":
            return f"not finished within the {deadline_s:g}s deadline ({received} bytes received)"
        return f"not finished within the {deadline_s:g}s deadline ({phase})"

    @staticmethod
    def _proxy_for(parts) -> str | None:
        """The proxy the environment names for this URL (HTTP_PROXY, HTTPS_PROXY, NO_PROXY), as requests did."""
        if urllib.request.proxy_bypass(parts.hostname or ""):
            return None
        return urllib.request.getproxies().get(parts.scheme)

    def _new_connection(self, parts, proxy: str | None) -> HTTPConnection:
        """A connection to the URL's host, or to its proxy (a CONNECT tunnel for https)."""
        host, port = parts.hostname or "", parts.port
        if proxy:
            p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
            if parts.scheme == "https":
                conn = HTTPSConnection(p.hostname or "", p.port or 80, ca_certs=certifi.where())
                conn.set_tunnel(host, port or 443)
                return conn
            return HTTPConnection(p.hostname or "", p.port or 80)  # asked with the absolute URL
        if parts.scheme == "https":
            return HTTPSConnection(host, port or 443, ca_certs=certifi.where())
        return HTTPConnection(host, port or 80)

    def _take_idle(self, parts) -> HTTPConnection | None:
        key = _host_key(parts.geturl())
        while True:
            with self._lock:
                conns = self._idle.get(key)
                conn = conns.pop() if conns else None
            if conn is None or conn.is_connected:
                return conn
            conn.close()  # the server closed it while idle

    def _keep_idle(self, parts, conn: HTTPConnection) -> None:
        key = _host_key(parts.geturl())
        with self._lock:
            conns = self._idle.setdefault(key, [])
            if len(conns) < _IDLE_PER_HOST:
                conns.append(conn)
                return
        conn.close()

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            # the server said when; a little jitter on top keeps clients from arriving together
            return min(self.backoff_max, retry_after + random.uniform(0, 0.1))
        delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        return min(self.backoff_max, delay * random.uniform(1.0, 1.1))

    def _wait_for_slot(self, url: str) -> None:
        """Per-host rate limit: reserve the next free slot under the lock, sleep outside it."""
        host = _host_key(url)
        interval = max(1.0 / self.max_rps, self._crawl_delay.get(host, 0.0))
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next_slot.get(host, now))
            self._next_slot[host] = slot + interval
        self._sleep(slot - now)

    def _sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        time.sleep(seconds)
        with self._lock:
            self.stats.slept_s += seconds

    def _allowed(self, url: str, budget: _Budget) -> bool:
        host = _host_key(url)
        with self._lock:
            parser = self._robots.get(host)
            host_lock = self._robots_locks.setdefault(host, threading.Lock())
        if parser is None:
            with host_lock:  # one robots.txt fetch per host even with many threads
                with self._lock:
                    parser = self._robots.get(host)
                if parser is None:
                    parser = self._fetch_robots(host, budget)
                    with self._lock:
                        self._robots[host] = parser
        return parser.can_fetch(self.user_agent, url)

    def _fetch_robots(self, host: str, budget: _Budget) -> urllib.robotparser.RobotFileParser:
        """Fetch and parse host/robots.txt (RFC 9309): 4xx = allow all, unreachable = FetchError.
        It comes through the same path as any page: bounded, and decoded when compressed."""
        robots_url = f"{host}/robots.txt"
        parser = urllib.robotparser.RobotFileParser(robots_url)
        response = self._request(robots_url, {"User-Agent": self.user_agent, "Accept-Encoding": "gzip, deflate"},
                                 self.max_bytes, budget)
        if 200 <= response.status_code < 300:
            parser.parse(response.text.splitlines())
            delay = parser.crawl_delay(self.user_agent)
            if delay:
                with self._lock:
                    self._crawl_delay[host] = min(float(delay), _MAX_CRAWL_DELAY_S)
        elif 400 <= response.status_code < 500:
            parser.parse([])  # no rules: everything allowed
        else:
            raise FetchError(robots_url, f"robots.txt answered HTTP {response.status_code}",
                             status=response.status_code)
        return parser


def _describe(exc: BaseException) -> str:
    """A short name for a network or protocol failure (their str() can be a long nested repr)."""
    text = str(exc)
    if isinstance(exc, u3.ConnectTimeoutError) and not isinstance(exc, u3.NewConnectionError):
        return "connect timeout"
    if isinstance(exc, (TimeoutError, socket.timeout, u3.ReadTimeoutError)) or "timed out" in text:
        return "read timeout"
    if isinstance(exc, u3.NameResolutionError) or "Name or service not known" in text:
        return "unknown host"
    if isinstance(exc, ConnectionRefusedError) or "Connection refused" in text:
        return "connection refused"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "connection closed before an answer"
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)) or "Connection reset" in text:
        return "connection reset"
    if isinstance(exc, u3.ProtocolError) and len(exc.args) > 1 and isinstance(exc.args[1], BaseException):
        return _describe(exc.args[1])  # "Connection broken: <the cause>"
    if isinstance(exc, u3.IncompleteRead):
        return f"body cut short ({exc.partial} bytes read, {exc.expected} more expected)"
    if isinstance(exc, http.client.IncompleteRead):
        return f"body cut short ({len(exc.partial)} bytes read)"
    if isinstance(exc, u3.ProtocolError):
        return f"body cut short: {text[:160]}"
    if isinstance(exc, u3.NewConnectionError):
        return "connection error"
    return f"{type(exc).__name__}: {text}"[:200]
