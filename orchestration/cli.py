"""`benchwh`: the warehouse's command line. Every failure is one line on stderr and a non-zero exit."""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from ingest import config

EXTRA_COMMANDS = ("orchestration.runs_cli", "orchestration.bench_cli", "orchestration.sources_cli")


class UserError(Exception):
    """A mistake the user can fix: printed as one line, exit code 2."""


def cmd_refresh(args) -> int:
    from ingest.source import load_sources
    from orchestration.pipeline import run_refresh
    from orchestration.progress import progress

    known = load_sources()
    for name in args.source or []:
        if name not in known:
            raise UserError(f"unknown source {name!r}; known: {', '.join(sorted(known))}")
    mode = "no fetch" if args.no_fetch else ("offline (bundled recordings)" if args.offline else "live")
    progress(f"refresh {mode} into {config.home()}")
    result = run_refresh(offline=args.offline, sources=[] if args.no_fetch else args.source)
    if not result.success:
        print(f"benchwh: refresh failed: {result.error}", file=sys.stderr)
        return 1
    rows = sum(v["rows"] for v in result.landed.values())
    quarantined = sum(v["quarantined"] for v in result.landed.values())
    per_source = ", ".join(f"{k} {v['rows']}" for k, v in sorted(result.landed.items()))
    print(f"refreshed {result.version}: {rows} rows landed ({per_source}), {quarantined} quarantined, "
          f"{result.tables} tables published in {result.seconds:.1f}s -> {config.published_path()}")
    return 0


def cmd_rollback(args) -> int:
    from orchestration.progress import progress
    from orchestration.publish import PublishError, rollback
    from orchestration.publish_asset import sources_meta

    try:
        version = rollback(args.version, sources_meta(), progress)
    except PublishError as exc:
        raise UserError(str(exc)) from None
    print(f"published version is now {version}")
    return 0


def cmd_status(args) -> int:
    from ingest.landing import Lander
    from ingest.raw_store import RawStore
    from ingest.source import load_sources
    from orchestration.publish import list_history, read_version

    version = read_version(config.published_path())
    store = RawStore(config.raw_dir())
    lander = Lander(config.landing_dir(), store)
    report = {
        "home": str(config.home()),
        "published": version,
        "history": list_history(),
        "sources": {},
    }
    for name in sorted(load_sources()):
        entries = store.entries(name)
        outcomes = lander.outcomes(name)
        report["sources"][name] = {
            "last_fetch": max((e.fetched_at for e in entries), default=None),
            "payloads": len(outcomes),
            "rows_landed": sum(sum(o.landed.values()) for o in outcomes),
            "rows_quarantined": sum(sum(o.quarantined.values()) for o in outcomes),
            "payloads_rejected": sum(1 for o in outcomes if o.status != "landed"),
        }
    report["resolution"] = resolution_report(config.published_path()) if version else None
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"warehouse home: {report['home']}")
    if version:
        print(f"published: {version['version']} (built {version['build_started_at']}, code {version['code_revision']})")
    else:
        print("published: nothing yet (run `benchwh refresh`)")
    print(f"history: {len(report['history'])} versions")
    print(f"{'source':<14}{'last fetch':<30}{'payloads':>9}{'landed':>10}{'quarantined':>13}")
    for name, s in report["sources"].items():
        print(f"{name:<14}{(s['last_fetch'] or '-'):<30}{s['payloads']:>9}{s['rows_landed']:>10}{s['rows_quarantined']:>13}")
    resolution = report["resolution"]
    if resolution:
        print(f"{'resolved':<14}{'runs':>9}{'hardware':>10}{'model':>9}")
        for r in resolution["shares"]:
            print(f"{r['source']:<14}{r['n_runs']:>9}{r['hardware_resolved_share']:>10.1%}{r['model_resolved_share']:>9.1%}")
        if resolution["top_unresolved"]:
            print("top unresolved names (source, kind, runs, closest match, the alias line that would map it):")
        for u in resolution["top_unresolved"]:
            print(f"  {u['source']} {u['kind']} {u['raw_name']!r} x{u['occurrences']}: closest {u['closest_match'] or '-'}"
                  f"; {u['alias_line'] or 'no close entry: add a catalogue row'}")
    return 0


def resolution_report(published, top: int = 10) -> dict | None:
    """Share of runs resolved per source and the most frequent unresolved names (audit schema)."""
    import duckdb

    try:
        con = duckdb.connect(str(published), read_only=True)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchwh", description="Bench Warehouse: LLM inference benchmarks.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("refresh", help="fetch sources, land, build, audit and publish")
    p.add_argument("--offline", action="store_true", help="replay the bundled recordings, no network")
    p.add_argument("--source", action="append", metavar="NAME", help="fetch only this source (repeatable)")
    p.add_argument("--no-fetch", action="store_true",
                   help="fetch nothing: land what raw/ holds, then build and publish")
    p.set_defaults(func=cmd_refresh)

    p = sub.add_parser("rollback", help="restore a published version from history/")
    p.add_argument("version", nargs="?", help="version to restore (default: the previous one)")
    p.set_defaults(func=cmd_rollback)

    p = sub.add_parser("status", help="published version, sources' last fetch, rows and quarantine")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)

    for module in EXTRA_COMMANDS:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"benchwh: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("benchwh: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line, never a traceback, unless asked for
        if os.environ.get("BENCHWH_DEBUG"):
            raise
        line = next((l for l in str(exc).splitlines() if l.strip()), type(exc).__name__)
        print(f"benchwh: {type(exc).__name__}: {line}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    # run through the package module, so extra commands raise the same UserError class
    from orchestration.cli import main as package_main

    sys.exit(package_main())
