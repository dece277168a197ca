"""The one interface every source implements, and the registry that finds them.

A source declares what it lands (entities with pandera models), how it fetches (through the
polite client, storing raw payloads) and how it parses one stored payload (pure, no I/O).
Built-in sources are found, not listed: every module in `ingest/sources/` (or in a package there,
such as `runs/`) that defines a Source subclass with a `name` is one (so `benchwh sources new` needs no edit of a list). Other packages
add theirs through the entry point group `benchwh.sources` (each entry point names a Source
subclass or instance).
"""
from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Literal

import pandas as pd

from ingest.raw_store import RawEntry, RawStore

ENTRY_POINT_GROUP = "benchwh.sources"

BUILTIN_PACKAGE = "ingest.sources"


class SourceFailed(Exception):
    """The source as a whole failed: nothing of this run may be published."""


class PayloadRejected(Exception):
    """One raw payload cannot be parsed at all; it goes to quarantine with this reason."""

    def __init__(self, reason: str, check: str = "payload_parse"):
        super().__init__(reason)
        self.reason = reason
        self.check = check

    def __reduce__(self):  # pickled with its check (landing in worker processes)
        return type(self), (self.reason, self.check)


@dataclass(frozen=True)
class Entity:
    name: str  # plural noun: "models", "runs", "tests"
    model: Any  # a pandera DataFrameModel class
    description: str = ""


@dataclass
class FetchContext:
    """What a source's fetch() may use. `get` is the only way to the network."""

    source: str
    base_url: str
    client: Any  # ingest.http.PoliteClient
    store: RawStore
    parser_version: str
    log: Callable[[str], None] = print
    # sha256 of payloads stored by this fetch, in order
    stored: list[RawEntry] = field(default_factory=list)
    # reads landed values for incremental fetches: (entity, column) -> set of values
    landed_values: Callable[[str, str], set] = lambda entity, column: set()
    # the source's bounds (Source.max_body_bytes, Source.redirect_hosts)
    max_body_bytes: int | None = None
    redirect_hosts: tuple[str, ...] = ()
    # called with the number of responses so far after each one (progress display)
    on_fetch: Callable[[int], None] | None = None
    fetched: int = 0

    def get(self, url: str, *, ext: str = "json", conditional: bool = True,
            params: dict | None = None) -> tuple[RawEntry, bytes | None]:
        """GET url politely; store a 200 body in the raw store, log a 304.

        Returns (entry, body); body is None when the server answered 304 Not Modified.
        Raises ingest.http.FetchError when the fetch fails after its retries.
        """
        previous = self.store.latest_for_url(self.source, url) if conditional else None
        response = self.client.get(
            url, params=params,
            etag=previous.etag if previous else None,
            last_modified=previous.last_modified if previous else None,
            max_bytes=self.max_body_bytes, redirect_hosts=self.redirect_hosts,
        )
        self.fetched += 1
        if self.on_fetch is not None:
            self.on_fetch(self.fetched)
        if response.status_code == 304:
            if previous is None:
                raise SourceFailed(f"{self.source}: {url} answered 304 to an unconditional request")
            return self.store.record_not_modified(previous), None
        entry, _ = self.store.put(
            self.source, response.content, url=url, status=response.status_code,
            headers=response.headers, ext=ext, parser_version=self.parser_version,
            final_url=getattr(response, "url", None),
        )
        self.stored.append(entry)
        return entry, response.content


class Source:
    """Base class. Subclasses set the class attributes and implement fetch() and parse()."""

    name: ClassVar[str]
    license: ClassVar[str] = ""
    attribution: ClassVar[str] = ""
    # "snapshot": each payload is the whole dataset (latest wins, volume checked against the
    # previous one); "incremental": payloads add records.
    kind: ClassVar[Literal["snapshot", "incremental"]] = "snapshot"
    freshness_warn_hours: ClassVar[float] = 36
    freshness_error_hours: ClassVar[float] = 24 * 7
    parser_version: ClassVar[str] = "1"
    entities: ClassVar[tuple[Entity, ...]] = ()
    # Set False for sources fed only by files (the inbox), not by a scheduled fetch.
    scheduled: ClassVar[bool] = True
    # Where the source lives when no env override is set; env `BENCHWH_<NAME>_URL` overrides it
    # (the built-ins' pinned variables are in ingest.config.URL_ENV).
    default_url: ClassVar[str] = ""
    # Bounds on each fetch (issue #12): the largest body accepted (bytes, streamed, refused
    # above), and the other hosts a redirect may lead to (each then obeys its robots.txt).
    max_body_bytes: ClassVar[int] = 64 * 1024 * 1024
    redirect_hosts: ClassVar[tuple[str, ...]] = ()
    # Snapshot sources: a new snapshot needs this share of the median of the last good landings
    # (ingest.landing.rules); env BENCHWH_<NAME>_VOLUME_MIN_SHARE overrides, 0 = off.
    volume_min_share: ClassVar[float] = 0.5

    def base_url(self) -> str:
        """The base URL to fetch from: the pinned env variable, `BENCHWH_<NAME>_URL`, or default_url."""
        from ingest import config

        if self.name in config.URL_ENV:
            return config.source_url(self.name)
        value = os.environ.get(f"BENCHWH_{self.name.upper()}_URL") or self.default_url
        return value.rstrip("/")

    def recording_dir(self) -> Path:
        """The bundled recorded snapshots `--offline` replays (index.json + bodies).

        Built-ins keep theirs in ingest/snapshots/<name>/; a source from another package
        overrides this to point inside its own package.
        """
        from ingest.config import snapshots_dir

        return snapshots_dir() / self.name

    def fetch(self, ctx: FetchContext) -> None:
        """Fetch new raw payloads through ctx.get(). Incremental where the source allows."""
        raise NotImplementedError

    def parse(self, body: bytes, entry: RawEntry) -> dict[str, pd.DataFrame]:
        """Pure: one stored payload -> one DataFrame per entity name (missing = no rows).

        Raise PayloadRejected when the payload cannot be read at all.
        """
        raise NotImplementedError

    def parse_rows(self, body: bytes, entry: RawEntry) -> dict[str, list[dict]]:
        """Optional, for landing speed: the records parse() would put in its frames, as dicts keyed
        by the entity model's columns, per entity name (missing = no rows). parse() must equal
        `pd.DataFrame(rows, columns=<the model's columns>)` of each. A source defining it lets the
        Lander build one frame per entity per batch instead of one per payload (~1 ms each).
        """
        raise NotImplementedError

    def validate_payloads(self, results: list["PayloadOutcome"]) -> None:  # noqa: F821
        """Hook after a batch of payloads landed: raise SourceFailed to fail the source."""

    def entity(self, name: str) -> Entity:
        for e in self.entities:
            if e.name == name:
                return e
        raise KeyError(f"{self.name} has no entity {name!r}")


METADATA_FIELDS = ("license", "attribution", "default_url")


def has_parse_rows(src: Source) -> bool:
    return type(src).parse_rows is not Source.parse_rows


def metadata_todos(src: Source) -> list[str]:
    """The metadata fields a scaffold left with a TODO: published in the manifest, so finish them."""
    return [f for f in METADATA_FIELDS if "TODO" in str(getattr(src, f, "") or "")]


def _source_modules(package_name: str) -> Iterable[Any]:
    """The modules of a package by name; a subpackage gives its own modules (one level)."""
    package = importlib.import_module(package_name)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        name = f"{package_name}.{info.name}"
        if info.ispkg:
            sub = importlib.import_module(name)
            for inner in sorted(pkgutil.iter_modules(sub.__path__), key=lambda m: m.name):
                if not inner.name.startswith("_") and not inner.ispkg:
                    yield importlib.import_module(f"{name}.{inner.name}")
        else:
            yield importlib.import_module(name)


def builtin_source_classes() -> list[type[Source]]:
    """Source subclasses with a `name` defined in the modules of ingest/sources/, by module name."""
    classes = []
    for module in _source_modules(BUILTIN_PACKAGE):
        for _, obj in inspect.getmembers(module, inspect.isclass):
            # only classes defined here (not imported ones), concrete (a name of their own)
            if (issubclass(obj, Source) and obj is not Source and obj.__module__ == module.__name__
                    and isinstance(obj.__dict__.get("name"), str)):
                classes.append(obj)
    return classes


def load_sources(include_external: bool = True) -> dict[str, Source]:
    """All registered sources by name: built-ins, then entry points of installed packages."""
    found: dict[str, Source] = {}
    for cls in builtin_source_classes():
        src = cls()
        if src.name in found:
            raise ValueError(f"source name {src.name!r} is defined twice in {BUILTIN_PACKAGE}")
        found[src.name] = src
    if include_external:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            obj = ep.load()
            src = obj() if isinstance(obj, type) else obj
            if src.name in found:
                raise ValueError(f"source name {src.name!r} from entry point {ep.value} is taken")
            found[src.name] = src
    return found


def iter_entities(sources: Iterable[Source]) -> Iterable[tuple[Source, Entity]]:
    for src in sources:
        for ent in src.entities:
            yield src, ent


def now_utc() -> datetime:
    from datetime import timezone
    return datetime.now(timezone.utc)
