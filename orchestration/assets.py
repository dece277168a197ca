"""Landing assets, one multi-asset per registered source, built from the registry alone.

Each run carries tags that say what to fetch: `benchwh/sources` ("all", "none" or a comma list)
and `benchwh/offline` ("1" replays the bundled recordings instead of the network). A source not
selected for fetching still lands any stored payload that is pending, so the build always sees
the latest landing of every source.
"""

import dagster as dg

from ingest import config, demo, freshness
from ingest.landing import Lander, landed_values_reader
from ingest.landing.lock import landing_lock
from ingest.raw_store import RawStore
from ingest.replay import has_recording, replay_into_store
from ingest.source import FetchContext, Source, SourceFailed, load_sources
from orchestration.progress import count, landing_log, progress
from orchestration.checks import check_results, landing_check_specs, landing_key
from orchestration.steps import die_with_run_process
from orchestration.tags import OFFLINE_TAG, SOURCES_TAG, STRICT_TAG

def selected_for_fetch(tags: dict, source: Source) -> bool:
    wanted = tags.get(SOURCES_TAG, "all")
    if wanted == "none":
        return False
    if wanted == "all":
        # offline, every bundled recording is replayed, also those of file-fed sources
        return source.scheduled or (tags.get(OFFLINE_TAG) == "1" and has_recording(source))
    return source.name in {s.strip() for s in wanted.split(",")}


def fetch_source(source: Source, store: RawStore, offline: bool) -> int:
    """Fetch new raw payloads (or replay the recording). Returns how many payloads were stored."""
    return len({e.sha256 for e in fetch_source_entries(source, store, offline) if e.status == 200})


def fetch_source_entries(source: Source, store: RawStore, offline: bool) -> list:
    """Fetch (or replay the recording); the raw entries of this fetch, 304s included."""
    if offline:
        if not has_recording(source):  # the source in hand: no scan of the installed packages
            progress(f"{source.name}: no offline recording, nothing fetched")
            return []
        return list(replay_into_store(source, store, source.parser_version))
    from ingest.http import FetchError, PoliteClient

    ctx = FetchContext(
        source=source.name, base_url=source.base_url(),
        client=PoliteClient(log=progress), store=store, parser_version=source.parser_version,
        log=progress, landed_values=landed_values_reader(config.landing_dir, source.name),
        max_body_bytes=source.max_body_bytes, redirect_hosts=tuple(source.redirect_hosts),
        on_fetch=lambda n: count(f"{source.name}: fetching", n, None, "responses"),
    )
    try:
        source.fetch(ctx)
    except FetchError as exc:
        raise SourceFailed(f"{source.name}: {exc}") from None
    return list(ctx.stored)


def rejected_in_fetch(store: RawStore, lander: Lander, source: str, fetched: list, outcomes: list) -> list[str]:
    """Payloads of this fetch (new, or the same bad body again) or of this landing that were rejected:
    one line each naming the raw file, the reason and the first bytes, on every refresh that sees them."""
    verdicts = {o.sha256: o for o in lander.outcomes(source)} if fetched else {}
    verdicts.update({o.sha256: o for o in outcomes})
    seen, lines = set(), []
    for entry in fetched:
        o = verdicts.get(entry.sha256)
        if o is None or o.status != "rejected" or entry.sha256 in seen:
            continue
        seen.add(entry.sha256)
        lines.append(_rejected_line(store, entry, o.reason))
    paths = {e.sha256: e for e in store.payloads(source)} if any(o.sha256 not in seen for o in outcomes) else {}
    for o in outcomes:
        if o.status == "rejected" and o.sha256 not in seen and o.sha256 in paths:
            seen.add(o.sha256)
            lines.append(_rejected_line(store, paths[o.sha256], o.reason))
    return lines


def _rejected_line(store: RawStore, entry, reason: str | None) -> str:
    try:
        head = (store.root / entry.path).read_bytes()[:60]
    except OSError:
        head = b""
    return f"raw/{entry.path}: {reason} (first bytes: {head!r})"


def build_landing_asset(source: Source) -> dg.AssetsDefinition:
    specs = [
        dg.AssetSpec(landing_key(source.name, ent.name), group_name="landing",
                     description=ent.description or f"{source.name} {ent.name}, validated by {ent.model.__name__}",
                     metadata={"license": source.license, "attribution": source.attribution},
                     kinds={"parquet", "pandera"})
        for ent in source.entities
    ]

    @dg.multi_asset(name=f"land_{source.name}", specs=specs, check_specs=landing_check_specs(source),
                    description=f"Fetch {source.name} into the raw store, validate and land Parquet.")
    def _land(context: dg.AssetExecutionContext):
        die_with_run_process()
        tags = context.run.tags
        offline = tags.get(OFFLINE_TAG) == "1"
        store = RawStore(config.raw_dir())
        lander = Lander(config.landing_dir(), store, log=landing_log)
        if not offline and tags.get(SOURCES_TAG, "all") != "none":
            # a live refresh replaces demo data: its rows are never published beside live ones
            demo.drop_demo(store, config.landing_dir(), [source.name], log=progress)
        lander.ensure_layout(source)
        stored, this_fetch, failure, outcomes = 0, [], None, []
        fetched = selected_for_fetch(tags, source)
        if fetched:
            progress(f"{source.name}: fetching{' (offline recording)' if offline else ''}")
            try:
                this_fetch = fetch_source_entries(source, store, offline)
            except SourceFailed as exc:
                failure = str(exc)
            stored = len({e.sha256 for e in this_fetch if e.status == 200})
        try:
            with landing_lock(source.name, shared=False):  # never beside a backfill partition of it
                outcomes = lander.land_pending(source)
        except SourceFailed as exc:
            failure = failure or str(exc)
        if failure:
            # one source down or refused does not stop the others: the build keeps its last good
            # landing and the freshness check says so, blocking only past the source's error hours
            freshness.record_failure(source.name, failure)
            if tags.get(STRICT_TAG) == "1":
                raise dg.Failure(description=failure)
            progress(f"{source.name}: FAILED: {failure}; the build keeps its last good landing")
        elif fetched:
            freshness.clear_failure(source.name)
        rows = sum(sum(o.landed.values()) for o in outcomes)
        quarantined = sum(sum(o.quarantined.values()) for o in outcomes)
        rejected_now = rejected_in_fetch(store, lander, source.name, this_fetch, outcomes)
        progress(f"{source.name}: {stored} new payloads, {rows} rows landed, {quarantined} quarantined"
                 + (f", {len(rejected_now)} payloads rejected" if rejected_now else ""))
        for line in rejected_now:
            progress(f"  {source.name}: rejected {line}")
        for ent in source.entities:
            yield dg.MaterializeResult(
                asset_key=landing_key(source.name, ent.name),
                metadata={
                    "rows_landed": sum(o.landed.get(ent.name, 0) for o in outcomes),
                    "rows_quarantined": sum(o.quarantined.get(ent.name, 0) for o in outcomes),
                    "payloads": len(outcomes),
                    "payloads_rejected": len(rejected_now),
                    "failure": failure or "",
                },
            )
        yield from check_results(source, outcomes, store, lander, fetched, failure)

    return _land


def landing_assets() -> list[dg.AssetsDefinition]:
    return [build_landing_asset(src) for src in load_sources().values()]
