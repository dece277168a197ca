"""Landing assets, one multi-asset per registered source, built from the registry alone.

Each run carries tags that say what to fetch: `benchwh/sources` ("all", "none" or a comma list)
and `benchwh/offline` ("1" replays the bundled recordings instead of the network). A source not
selected for fetching still lands any stored payload that is pending, so the build always sees
the latest landing of every source.
"""

import dagster as dg

from ingest import config, demo, freshness
from ingest.landing import QUARANTINE_SHARE_LIMIT, Lander, PayloadOutcome, landed_values_reader, volume_short
from ingest.landing.rules import volume_rule_text
from ingest.raw_store import RawStore, parse_iso
from ingest.replay import has_recording, newest_recording_time, replay_into_store
from ingest.source import FetchContext, Source, SourceFailed, load_sources
from orchestration.progress import count, landing_log, progress

SOURCES_TAG = "benchwh/sources"
OFFLINE_TAG = "benchwh/offline"


def landing_key(source: str, entity: str) -> dg.AssetKey:
    return dg.AssetKey(["landing", source, entity])


def selected_for_fetch(tags: dict, source: Source) -> bool:
    wanted = tags.get(SOURCES_TAG, "all")
    if wanted == "none":
        return False
    if wanted == "all":
        # offline, every bundled recording is replayed, also those of file-fed sources
        return source.scheduled or (tags.get(OFFLINE_TAG) == "1" and has_recording(source.name))
    return source.name in {s.strip() for s in wanted.split(",")}


def fetch_source(source: Source, store: RawStore, offline: bool) -> int:
    """Fetch new raw payloads (or replay the recording). Returns how many payloads were stored."""
    return len({e.sha256 for e in fetch_source_entries(source, store, offline) if e.status == 200})


def fetch_source_entries(source: Source, store: RawStore, offline: bool) -> list:
    """Fetch (or replay the recording); the raw entries of this fetch, 304s included."""
    if offline:
        if not has_recording(source.name):
            progress(f"{source.name}: no offline recording, nothing fetched")
            return []
        return list(replay_into_store(source.name, store, source.parser_version))
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


def check_results(source: Source, outcomes: list[PayloadOutcome], store: RawStore, lander: Lander,
                  offline: bool, fetched: bool) -> list[dg.AssetCheckResult]:
    """Volume, quarantine share and freshness, one result per entity (blocking publish)."""
    results = []
    history = [o for o in lander.outcomes(source.name) if o.status == "landed"]
    # the verdict `status` and `sources list` give (recorded data judged as of its recording)
    fresh = freshness.verdict(source, store, lander)
    age_h = fresh.age_hours
    for ent in source.entities:
        key = landing_key(source.name, ent.name)
        landed = sum(o.landed.get(ent.name, 0) for o in outcomes)
        quarantined = sum(o.quarantined.get(ent.name, 0) for o in outcomes)
        parsed = sum(o.parsed.get(ent.name, 0) for o in outcomes)
        share = quarantined / parsed if parsed else 0.0
        results.append(dg.AssetCheckResult(
            asset_key=key, check_name="quarantine_share", passed=share <= QUARANTINE_SHARE_LIMIT,
            metadata={"parsed": parsed, "quarantined": quarantined, "share": round(share, 4)},
            description=f"{quarantined} of {parsed} new records quarantined (limit {QUARANTINE_SHARE_LIMIT:.0%})",
        ))
        previous = [o.landed.get(ent.name, 0) for o in history]
        if source.kind == "snapshot" and len(previous) >= 2:
            # the same robust rule as landing: the median of the last good landings before it
            latest = previous[-1]
            short, before = volume_short(source, latest, previous[:-1])
            volume_ok = not short
            volume_desc = f"latest landing {latest} rows, median of the previous ones {before}"
        else:
            volume_ok = True
            volume_desc = f"{landed} rows landed this run"
        results.append(dg.AssetCheckResult(
            asset_key=key, check_name="volume", passed=volume_ok,
            metadata={"landed_this_run": landed}, description=volume_desc,
        ))
        if not source.scheduled:
            fresh_ok, severity, desc = True, dg.AssetCheckSeverity.WARN, "fed by files, no schedule"
        elif age_h is None and fetched and outcomes and not any(o.status == "landed" for o in outcomes):
            # this run fetched payloads and none landed, and nothing good landed before (or it was
            # demo data, dropped by this live run): upstream changed shape, block as stale
            fresh_ok, severity = False, dg.AssetCheckSeverity.ERROR
            desc = f"no good fetch at all: this run's {len(outcomes)} payloads landed nothing"
        elif age_h is None:
            # nothing landed yet, so nothing stale: the marts simply lack this source
            fresh_ok, severity, desc = False, dg.AssetCheckSeverity.WARN, "never fetched"
        else:
            fresh_ok = age_h <= source.freshness_warn_hours
            # Stale data blocks publish only when this run tried to fetch the source and still has
            # nothing newer; a run that leaves the source alone (`--source`, `runs add`) only warns.
            severity = (dg.AssetCheckSeverity.ERROR if fetched and age_h > source.freshness_error_hours
                        else dg.AssetCheckSeverity.WARN)
            desc = f"{fresh.line} (warn {source.freshness_warn_hours} h, error {source.freshness_error_hours} h)"
        results.append(dg.AssetCheckResult(
            asset_key=key, check_name="freshness", passed=fresh_ok, severity=severity, description=desc,
        ))
    return results


def build_landing_asset(source: Source) -> dg.AssetsDefinition:
    specs = [
        dg.AssetSpec(landing_key(source.name, ent.name), group_name="landing",
                     description=ent.description or f"{source.name} {ent.name}, validated by {ent.model.__name__}",
                     metadata={"license": source.license, "attribution": source.attribution},
                     kinds={"parquet", "pandera"})
        for ent in source.entities
    ]
    check_specs = [
        dg.AssetCheckSpec(name, asset=landing_key(source.name, ent.name), blocking=True, description=desc)
        for ent in source.entities
        for name, desc in (
            ("volume", f"a snapshot has at least {volume_rule_text()} the rows of the previous one"),
            ("quarantine_share", f"at most {QUARANTINE_SHARE_LIMIT:.0%} of new records quarantined"),
            ("freshness", "the last good fetch is within the source's declared freshness"),
        )
    ]

    @dg.multi_asset(name=f"land_{source.name}", specs=specs, check_specs=check_specs,
                    description=f"Fetch {source.name} into the raw store, validate and land Parquet.")
    def _land(context: dg.AssetExecutionContext):
        tags = context.run.tags
        offline = tags.get(OFFLINE_TAG) == "1"
        store = RawStore(config.raw_dir())
        lander = Lander(config.landing_dir(), store, log=landing_log)
        if not offline and tags.get(SOURCES_TAG, "all") != "none":
            # a live refresh replaces demo data: its rows are never published beside live ones
            demo.drop_demo(store, config.landing_dir(), [source.name], log=progress)
        lander.ensure_layout(source)
        stored, this_fetch = 0, []
        fetched = selected_for_fetch(tags, source)
        if fetched:
            progress(f"{source.name}: fetching{' (offline recording)' if offline else ''}")
            this_fetch = fetch_source_entries(source, store, offline)
            stored = len({e.sha256 for e in this_fetch if e.status == 200})
        try:
            outcomes = lander.land_pending(source)
        except SourceFailed as exc:
            raise dg.Failure(description=str(exc)) from None
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
                },
            )
        yield from check_results(source, outcomes, store, lander, offline, fetched)

    return _land


def landing_assets() -> list[dg.AssetsDefinition]:
    return [build_landing_asset(src) for src in load_sources().values()]
