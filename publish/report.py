"""What exports/manifest.json says of each source (`sources_meta`: publish and rollback), and
reports read from the published file: which sources hold demo data, how many runs resolved, where
the runs of an added file went. `benchwh status`, `benchwh runs add`, the publish asset's metadata
and the inbox reports all print these same lines."""
from __future__ import annotations

import copy
import json

from ingest import config


def published_demo_sources(manifest_path) -> list[str]:
    """The sources whose rows in the published version are demo data (from exports/manifest.json)."""
    try:
        return list(json.loads(manifest_path.read_text()).get("demo_data") or [])
    except (OSError, ValueError):
        return []


def resolution_report(published, top: int = 10) -> dict | None:
    """Share of runs resolved per source and the most frequent unresolved names (audit schema)."""
    import duckdb

    try:
        con = duckdb.connect(str(published), read_only=True, config=config.duckdb_config())
    except duckdb.Error:
        return None
    try:
        def rows(sql: str) -> list[dict]:
            cur = con.execute(sql)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]
        return {
            "shares": rows("select * from audit.resolution_shares order by source"),
            "top_unresolved": rows(f"""
                select source, kind, raw_name, occurrences, closest_match, alias_line
                from audit.unresolved_names where kind in ('hardware', 'model', 'quant')
                order by occurrences desc, source, kind, raw_name limit {int(top)}"""),
        }
    except duckdb.CatalogException:  # a warehouse published before the resolution report existed
        return None
    finally:
        con.close()


ALIAS_SEEDS = {"hardware": "hardware_aliases.csv", "model": "model_aliases.csv", "quant": "quantization_aliases.csv"}
SITE_TRUST = ("signed", "source")


def where_runs_went(accepted: list, published) -> list[str]:
    """Per accepted file, after the rebuild: names that did not resolve (with the closest catalogue
    entry and the alias line that would map them) and whether its runs reach the site tables."""
    import duckdb

    run_ids = sorted({rid for r in accepted for rid in r.runs})
    if not run_ids:
        return []
    con = duckdb.connect(str(published), read_only=True, config=config.duckdb_config())
    try:
        rows = con.execute(
            "SELECT source_run_id, any_value(trust), any_value(raw_hardware_name), "
            "any_value(coalesce(raw_model_name, model_file_name)), any_value(coalesce(raw_quant, model_file_name)), "
            "bool_and(is_duplicate OR is_resubmission) FROM marts.fct_speed_measurements "
            "WHERE source_run_id IN (SELECT unnest(?)) GROUP BY 1", [run_ids]).fetchall()
        measured = {r[0]: r[1:] for r in rows}
        names = {n for r in rows for n in r[2:5] if n}
        unresolved = {(k, n): c for k, n, c in con.execute(
            "SELECT kind, raw_name, any_value(closest_match) FROM audit.unresolved_names "
            "WHERE raw_name IN (SELECT unnest(?)) GROUP BY 1, 2", [sorted(names)]).fetchall()}
    finally:
        con.close()
    lines = []
    for res in accepted:
        problems, reasons = [], []
        for rid in res.runs:
            if rid not in measured:
                reasons.append(f"run {rid} has no speed measurements")
                continue
            trust, hardware, model, quant, duplicate = measured[rid]
            if trust not in SITE_TRUST:
                reasons.append(f"it is {trust} (sign it with a key in trusted_keys.json)")
            if duplicate:
                reasons.append("its measurements were already published from another file")
            for kind, name in (("hardware", hardware), ("model", model), ("quant", quant)):
                if (kind, name) in unresolved:
                    closest = unresolved[(kind, name)]
                    fix = (f"; to map it, add to dbt_project/seeds/{ALIAS_SEEDS[kind]}: "
                           f"{_csv_field(name)},{closest},<where the name comes from>" if closest else "")
                    problems.append(f"{kind} name {name!r} did not resolve (closest: {closest or 'none'}){fix}")
        for p in dict.fromkeys(problems):
            lines.append(f"{res.name}: {p}")
        if reasons:
            lines.append(f"{res.name}: not in the site tables: {'; '.join(dict.fromkeys(reasons))}")
        else:
            under = " (under a provisional name until the names above are mapped)" if problems else ""
            lines.append(f"{res.name}: in the site tables{under}")
    return lines


def _csv_field(value: str) -> str:
    return f'"{value.replace(chr(34), chr(34) * 2)}"' if any(c in value for c in ',"\n') else value


_META_KEPT: list = [None, None]  # the stamps it was worked out for, and what it said


def sources_meta() -> dict:
    """License, attribution, vintage and last fetch of each source, for exports/manifest.json.

    Kept in this process while no source's raw manifest changed: a refresh works it out before
    dbt runs, while landing's parse of the manifests is at hand (orchestration/dbt_assets.py),
    and its publish step reads it after (LocalScore's manifest: ~100,000 lines at scale 1)."""
    from ingest.file_memo import file_stamp
    from ingest.raw_store import RawStore
    from ingest.source import load_sources

    store = RawStore(config.raw_dir())
    sources = load_sources()
    stamps = (str(config.raw_dir()), tuple((name, file_stamp(store.manifest_path(name))) for name in sorted(sources)))
    if _META_KEPT[0] != stamps:
        _META_KEPT[:] = [stamps, _sources_meta(store, sources)]
    meta = copy.deepcopy(_META_KEPT[1])  # the caller's own
    from ingest.freshness import last_failure

    for name in meta:
        # a source whose last fetch or landing failed: its rows are those of its last good landing
        meta[name]["last_failure"] = last_failure(name)
    return meta


def _sources_meta(store, sources) -> dict:
    from ingest.demo import demo_sources

    demo = set(demo_sources(store, sources))
    meta = {}
    for name, src in sources.items():
        fetched = [e.fetched_at for e in store.entries(name)]
        meta[name] = {
            "license": src.license,
            "attribution": src.attribution,
            "vintage": getattr(src, "vintage", None),
            "last_fetch": max(fetched) if fetched else None,
            # replayed from the bundled recordings (`refresh --offline`): made-up demo rows
            "demo": name in demo,
        }
    return meta
