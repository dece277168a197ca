"""`benchwh sources list` and `benchwh sources new NAME`.

`list` reads only the raw manifests and the landing ledger (no Dagster, no DuckDB file), so it
answers at once and also for a warehouse that never published.
"""
from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

from ingest import config


def user_error(message: str) -> int:
    """One line on stderr, exit 2: what cli.main does with a UserError.

    Printed here rather than raised, because under `python -m cli.main` the running
    module is __main__ and would not catch cli.main.UserError.
    """
    print(f"benchwh: {message}", file=sys.stderr)
    return 2


def origin(src) -> str:
    module = type(src).__module__
    return "built-in" if module.startswith("ingest.sources.") else f"package ({module.split('.')[0]})"


def freshness(src, last_good: str | None, now: datetime) -> tuple[str, float | None]:
    """fresh | stale (warn) | stale (error) | never fetched | files only, and the age in hours
    (the rule of ingest.freshness, which the landing check and `status` use too)."""
    from ingest.freshness import status_for

    return status_for(src, last_good, now)


def source_report(src, store, lander, now: datetime) -> dict:
    from ingest.freshness import verdict

    entries = store.entries(src.name)
    outcomes = lander.outcomes(src.name)
    # the newest fetch whose body landed (a 304 confirming a landed body counts), judged as of its
    # recording when it is replayed demo data: the verdict of `status` and the landing check
    fresh = verdict(src, store, lander, now)
    last_good, status, age = fresh.last_good_fetch, fresh.status, fresh.age_hours
    return {
        "origin": origin(src),
        "kind": src.kind,
        "scheduled": src.scheduled,
        "entities": {
            ent.name: {
                "model": ent.model.__name__,
                "rows_landed": sum(o.landed.get(ent.name, 0) for o in outcomes),
                "rows_quarantined": sum(o.quarantined.get(ent.name, 0) for o in outcomes),
            }
            for ent in src.entities
        },
        "last_fetch": max((e.fetched_at for e in entries), default=None),
        "last_good_fetch": last_good,
        "payloads": len(outcomes),
        "payloads_rejected": sum(1 for o in outcomes if o.status != "landed"),
        "rows_landed": sum(sum(o.landed.values()) for o in outcomes),
        "rows_quarantined": sum(sum(o.quarantined.values()) for o in outcomes),
        "freshness": status,
        "freshness_as_of": fresh.as_of,
        "age_hours": None if age is None else round(age, 1),
        "freshness_warn_hours": src.freshness_warn_hours,
        "freshness_error_hours": src.freshness_error_hours,
        "license": src.license,
    }


def cmd_list(args) -> int:
    from ingest.landing import Lander
    from ingest.raw_store import RawStore
    from ingest.source import load_sources

    store = RawStore(config.raw_dir())
    lander = Lander(config.landing_dir(), store)
    now = datetime.now(timezone.utc)
    report = {name: source_report(src, store, lander, now) for name, src in sorted(load_sources().items())}
    if args.json:
        print(json.dumps({"home": str(config.home()), "sources": report}, indent=2))
        return 0
    wn = max([len(n) for n in report] + [6]) + 2
    we = max([len(", ".join(s["entities"])) for s in report.values()] + [8]) + 2
    print(f"{'source':<{wn}}{'entities':<{we}}{'last fetch':<21}{'landed':>9}{'quarantined':>13}  freshness")
    for name, s in report.items():
        ents = ", ".join(s["entities"])
        last = (s["last_fetch"] or "-")[:19].replace("T", " ")
        fresh = s["freshness"] + (f", {s['age_hours']:.0f} h ago" if s["age_hours"] is not None else "") \
            + ("" if s["freshness_as_of"] == "now" else " (as of its recording)")
        print(f"{name:<{wn}}{ents:<{we}}{last:<21}{s['rows_landed']:>9}{s['rows_quarantined']:>13}  {fresh}"
              + ("" if s["origin"] == "built-in" else f"  [{s['origin']}]"))
    return 0


def cmd_new(args) -> int:
    from ingest import scaffold

    root = config.project_root()
    try:
        plan = scaffold.plan(args.name, entity=args.entity, root=root)
    except scaffold.ScaffoldError as exc:
        return user_error(str(exc))
    written = scaffold.write(plan, root=root)
    todos = scaffold.todo_lines(root, written)
    print(f"created source {plan.name!r} (entity {plan.entity!r}) in {root}:")
    for path in written:
        print(f"  {path}")
    print(f"{len(todos)} places marked TODO(benchwh) to fill in (grep -rn 'TODO(benchwh)'); "
          f"it lands its made-up sample now: benchwh refresh --offline -> marts.{plan.values['mart_model']}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("sources", help="list the registered sources, or scaffold a new one")
    sub = p.add_subparsers(dest="sources_command", required=True)

    q = sub.add_parser("list", help="each source: entities, last fetch, rows landed/quarantined, freshness")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=cmd_list)

    q = sub.add_parser("new", help="scaffold a source (ingest module, sample, dbt staging + mart, test)")
    q.add_argument("name", help="snake_case source name, e.g. gpu_prices")
    q.add_argument("--entity", default="records", help="plural name of what it lands (default: records)")
    q.set_defaults(func=cmd_new)
