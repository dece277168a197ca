"""Asset checks, all in one place: the three blocking checks of every landing asset (volume,
quarantine share, freshness). dbt's tests become checks of the dbt assets through dagster-dbt
(orchestration/dbt_assets.py, `enable_asset_checks`)."""
from __future__ import annotations

import dagster as dg

from ingest import freshness
from ingest.landing import QUARANTINE_SHARE_LIMIT, Lander, PayloadOutcome, volume_short
from ingest.landing.rules import counts_for_volume
from ingest.landing.rules import volume_rule_text
from ingest.raw_store import RawStore
from ingest.source import Source

LANDING_CHECKS = (
    ("volume", f"a snapshot has at least {volume_rule_text()} the rows of the previous one"),
    ("quarantine_share", f"at most {QUARANTINE_SHARE_LIMIT:.0%} of new records quarantined"),
    ("freshness", "the last good fetch is within the source's declared freshness"),
)


def landing_key(source: str, entity: str) -> dg.AssetKey:
    return dg.AssetKey(["landing", source, entity])


def landing_check_specs(source: Source) -> list[dg.AssetCheckSpec]:
    """Blocking: a failed check stops the publish of that run."""
    return [
        dg.AssetCheckSpec(name, asset=landing_key(source.name, ent.name), blocking=True, description=desc)
        for ent in source.entities
        for name, desc in LANDING_CHECKS
    ]


def check_results(source: Source, outcomes: list[PayloadOutcome], store: RawStore, lander: Lander,
                  fetched: bool, failure: str | None = None) -> list[dg.AssetCheckResult]:
    """Volume, quarantine share and freshness, one result per entity (blocking publish). `failure`:
    why this run's fetch or landing of the source failed; the source is then stale, and blocks the
    publish only with nothing good landed before or a last good landing past its error hours."""
    results = []
    # the snapshots the volume baseline counts (landed, or refused for their size alone), up to the
    # latest landed one: the same baseline landing judges by (ingest/landing/rules.py)
    history = [o for o in lander.outcomes(source.name) if counts_for_volume(o)]
    while history and history[-1].status != "landed":
        history.pop()
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
        if failure:
            too_old = age_h is None or age_h > source.freshness_error_hours
            severity = dg.AssetCheckSeverity.ERROR if too_old else dg.AssetCheckSeverity.WARN
            kept = ("no good landing to fall back on" if age_h is None else
                    f"its last good landing is kept: {fresh.line} (blocks after {source.freshness_error_hours:g} h)")
            fresh_ok, desc = False, f"this run failed: {failure}; {kept}"
        elif not source.scheduled:
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
