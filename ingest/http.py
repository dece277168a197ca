"""The polite HTTP client every source fetches through.

Polite means: an identifying User-Agent with a contact URL, robots.txt obeyed, at most
`max_rps` requests per second to any one host, connect/read timeouts, a bounded number of
retries with exponential backoff (honouring Retry-After) on transient failures only, and
conditional GETs so an unchanged resource is not downloaded again.
"""
from __future__ import annotations

import random
import threading
import time
import urllib.robotparser
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Callable, Mapping
from urllib.parse import urlsplit

import requests

from ingest import config

# requests' exceptions worth another attempt: the server or the network may recover.
_TRANSIENT = (
    requests.exceptions.ConnectionError,  # includes ConnectTimeout and mid-body read timeouts
    requests.exceptions.Timeout,
    requests.exceptions.ChunkedEncodingError,
    requests.exceptions.ContentDecodingError,
)
# A site asking for more than this between requests is taken at its word only up to here.
_MAX_CRAWL_DELAY_S = 60.0
# Bounds on one request (issue #12): a body above max_bytes is refused while it streams (never
# held whole), and a request that has not finished within its deadline is cut off, however
# slowly the server trickles. Sources may set their own max_body_bytes.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_DEADLINE_S = 300.0
_MAX_REDIRECTS = 5
_CHUNK = 64 * 1024


class FetchError(Exception):
    """A fetch failed for good. The message is one line: the URL and what happened."""

    def __init__(self, url: str, what: str, status: int | None = None):
        what = " ".join(str(what).split())  # one line, whatever the cause said
        super().__init__(f"GET {url}: {what}")
        self.url = url
        self.what = what
        self.status = status


@dataclass
class FetchStats:
    """Counters for progress and logging (robots.txt fetches included)."""

    requests: int = 0  # HTTP requests sent, every attempt counted
    retries: int = 0  # attempts after a transient failure
    not_modified: int = 0  # 304 answers
    bytes: int = 0  # body bytes received
    slept_s: float = 0.0  # time spent waiting: rate limit, backoff and Retry-After


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
        session: requests.Session | None = None,
        log: Callable[[str], None] | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        deadline_s: float | None = None,
    ):
        self.user_agent = user_agent
        self.max_rps = float(max_rps if max_rps is not None else config.max_rps())
        if self.max_rps <= 0:
            raise ValueError(f"max_rps must be positive, got {self.max_rps}")
        self.timeout = (connect_timeout, read_timeout)
        self.retries = int(retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.respect_robots = respect_robots
        self.session = session or requests.Session()
        self.log = log
        self.max_bytes = int(max_bytes)
        self.deadline_s = float(deadline_s if deadline_s is not None else config.fetch_deadline_s())
        self.stats = FetchStats()
        self._lock = threading.Lock()  # guards stats, _next_slot, _robots, _robots_locks
        self._next_slot: dict[str, float] = {}  # host -> earliest monotonic time of its next request
        self._crawl_delay: dict[str, float] = {}
        self._robots: dict[str, urllib.robotparser.RobotFileParser] = {}
        self._robots_locks: dict[str, threading.Lock] = {}

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
    ) -> requests.Response:
        """GET url; returns the response for 2xx and 304, raises FetchError otherwise.

        Redirects are followed within the same host; to another host only when its name is in
        `redirect_hosts` (then that host's robots.txt and rate limit apply). `response.url` is
        the final URL.
        """
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise FetchError(url, "not an http(s) URL")
        full_url = requests.Request("GET", url, params=params).prepare().url or url
        if self.respect_robots and not self._allowed(full_url):
            raise FetchError(full_url, "disallowed by robots.txt")
        sent_headers = {"User-Agent": self.user_agent}
        if etag:
            sent_headers["If-None-Match"] = etag
        if last_modified:
            sent_headers["If-Modified-Since"] = last_modified
        sent_headers.update(headers or {})
        limit = self.max_bytes if max_bytes is None else int(max_bytes)
        current = full_url
        for _hop in range(_MAX_REDIRECTS + 1):
            response = self._request(current, sent_headers, limit)
            if response.status_code not in (301, 302, 303, 307, 308) or "location" not in response.headers:
                break
            target = requests.compat.urljoin(current, response.headers["location"])
            if urlsplit(target).scheme not in ("http", "https"):
                raise FetchError(full_url, f"redirected to a non-http URL {target[:200]}")
            if _host_key(target) != _host_key(current):
                host = (urlsplit(target).hostname or "").lower()
                if host not in {h.lower() for h in redirect_hosts}:
                    raise FetchError(full_url, f"redirected to another host {host} (not allowed for this source: "
                                     "add it to the source's redirect_hosts)")
                if self.respect_robots and not self._allowed(target):
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
        self.session.close()

    def __enter__(self) -> "PoliteClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------

    def _request(self, url: str, headers: Mapping[str, str], max_bytes: int | None = None) -> requests.Response:
        """Send with retries; returns the last response (any status) or raises FetchError."""
        max_bytes = self.max_bytes if max_bytes is None else max_bytes
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            self._wait_for_slot(url)
            with self._lock:
                self.stats.requests += 1
                if attempt > 1:
                    self.stats.retries += 1
            retry_after = None
            try:
                response = self._bounded_get(url, headers, max_bytes)
            except _TRANSIENT as exc:
                what = _describe(exc)
            except requests.exceptions.RequestException as exc:
                # invalid URL, too many redirects, ...: another attempt would not help
                raise FetchError(url, _describe(exc)) from None
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
            if self.log:
                self.log(f"GET {url}: retrying in {delay:.1f}s after {what} (attempt {attempt + 1}/{attempts})")
            self._sleep(delay)
        raise AssertionError("unreachable")

    def _bounded_get(self, url: str, headers: Mapping[str, str], max_bytes: int) -> requests.Response:
        """One GET, its body streamed under a size cap and an overall deadline (FetchError past either)."""
        started = time.monotonic()
        response = self.session.get(url, headers=headers, timeout=self.timeout, stream=True,
                                    allow_redirects=False)
        try:
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise FetchError(url, f"body of {int(declared)} bytes is above the {max_bytes}-byte limit")
            parts, size = [], 0
            while True:
                # read1: whatever one read returns, so a trickling server meets the deadline check
                chunk = _read_some(response.raw)
                if not chunk:
                    break
                size += len(chunk)
                if size > max_bytes:
                    raise FetchError(url, f"body above the {max_bytes}-byte limit (stopped reading)")
                if time.monotonic() - started > self.deadline_s:
                    raise FetchError(url, f"not finished within the {self.deadline_s:g}s deadline "
                                          f"({size} bytes received)")
                parts.append(chunk)
            if time.monotonic() - started > self.deadline_s:
                raise FetchError(url, f"not finished within the {self.deadline_s:g}s deadline")
            response._content = b"".join(parts)
            response._content_consumed = True
            return response
        finally:
            response.close()

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

    def _allowed(self, url: str) -> bool:
        host = _host_key(url)
        with self._lock:
            parser = self._robots.get(host)
            host_lock = self._robots_locks.setdefault(host, threading.Lock())
        if parser is None:
            with host_lock:  # one robots.txt fetch per host even with many threads
                with self._lock:
                    parser = self._robots.get(host)
                if parser is None:
                    parser = self._fetch_robots(host)
                    with self._lock:
                        self._robots[host] = parser
        return parser.can_fetch(self.user_agent, url)

    def _fetch_robots(self, host: str) -> urllib.robotparser.RobotFileParser:
        """Fetch and parse host/robots.txt (RFC 9309): 4xx = allow all, unreachable = FetchError."""
        robots_url = f"{host}/robots.txt"
        parser = urllib.robotparser.RobotFileParser(robots_url)
        response = self._request(robots_url, {"User-Agent": self.user_agent})
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


def _read_some(raw) -> bytes:
    """One read from urllib3 (whatever has arrived, up to _CHUNK), its errors as requests' own
    exceptions so the retry rules above apply unchanged."""
    import urllib3.exceptions as u3

    try:
        return raw.read1(_CHUNK) if hasattr(raw, "read1") else raw.read(_CHUNK)
    except u3.ReadTimeoutError as exc:
        raise requests.exceptions.ConnectionError(f"Read timed out: {exc}") from None
    except u3.ProtocolError as exc:
        raise requests.exceptions.ChunkedEncodingError(str(exc)) from None
    except u3.DecodeError as exc:
        raise requests.exceptions.ContentDecodingError(str(exc)) from None
    except (u3.SSLError, u3.HTTPError) as exc:
        raise requests.exceptions.ConnectionError(str(exc)) from None


def _describe(exc: Exception) -> str:
    """A short name for a requests exception (their str() can be a long nested repr)."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return "connect timeout"
    if isinstance(exc, requests.exceptions.ReadTimeout):
        return "read timeout"
    text = str(exc)
    if "Read timed out" in text:
        return "read timeout"
    if isinstance(exc, requests.exceptions.ConnectionError):
        if "Connection refused" in text:
            return "connection refused"
        if "Name or service not known" in text or "nodename nor servname" in text:
            return "unknown host"
        return "connection error"
    return f"{type(exc).__name__}: {text}"[:200]
