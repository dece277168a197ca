"""`benchwh`: the warehouse's command line. Every failure is one line on stderr and a non-zero exit."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import NoReturn

from cli.errors import UserError
from ingest.locks import LockTimeout
from ingest import config


def cmd_refresh(args) -> int:
    from ingest.source import load_sources, metadata_todos
    from cli.pipeline import run_refresh
    from orchestration.progress import plural, progress

    engine = args.engine or config.engine()
    if engine not in config.ENGINES:
        raise UserError(f"unknown engine {engine!r}; known: {', '.join(config.ENGINES)}")
    known = load_sources()
    for name in args.source or []:
        if name not in known:
            raise UserError(f"unknown source {name!r}; known: {', '.join(sorted(known))}")
    for name, src in sorted(known.items()):
        todos = metadata_todos(src)
        if todos:
            progress(f"warning: source {name} still has TODO in its {', '.join(todos)} "
                     f"({type(src).__module__}); the manifest publishes them as they are")
    mode = "no fetch" if args.no_fetch else ("offline (bundled recordings)" if args.offline else "live")
    progress(f"refresh {mode} into {config.home()}" + (f" on {engine}" if engine != "duckdb" else ""))
    result = run_refresh(offline=args.offline, sources=[] if args.no_fetch else args.source, engine=engine,
                         strict=args.strict)
    if not result.success:
        if debug() and result.traceback:
            print("Traceback of the failing step (BENCHWH_DEBUG=1):\n" + result.traceback.rstrip(), file=sys.stderr)
        print(f"benchwh: refresh failed: {result.error}{run_reference(result.run_id, result.error)}",
              file=sys.stderr)
        return 1
    for name, failure in sorted(result.failed_sources.items()):
        progress(f"warning: {name} failed and is stale, its last good landing was used: {failure}")
    rows = sum(v["rows"] for v in result.landed.values())
    quarantined = sum(v["quarantined"] for v in result.landed.values())
    per_source = ", ".join(f"{k} {v['rows']}" for k, v in sorted(result.landed.items()))
    rejected = sum(v.get("rejected", 0) for v in result.landed.values())
    if result.build_skipped:
        print(f"nothing new: {plural(rows, 'row')} landed ({per_source}); build skipped ({result.skip_reason}); "
              f"published version {result.version} stays, nothing published"
              + (f" ({plural(rejected, 'payload')} rejected, see above)" if rejected else ""))
        return 0
    if result.unchanged:
        print(f"nothing new: {plural(rows, 'row')} landed ({per_source}) and no table changed; "
              f"published version {result.version} stays, nothing published"
              + (f" ({plural(rejected, 'payload')} rejected, see above)" if rejected else ""))
        return 0
    print(f"refreshed {result.version}: {plural(rows, 'row')} landed ({per_source}), {quarantined} quarantined, "
          + (f"{plural(rejected, 'payload')} rejected (see above), " if rejected else "")
          + f"{plural(result.tables, 'table')} published ({result.exported} exported as Parquet) "
          f"in {result.seconds:.1f}s -> {config.published_path()}")
    from cli.site import rebuild_home_site

    rebuild_home_site(progress)
    return 0


def run_reference(run_id: str | None, error: str | None) -> str:
    """Where to look next: the run id and the UI that shows it, unless the reason names the run already."""
    if not run_id or run_id in (error or ""):
        return ""
    from orchestration.instance import dagster_home
    return f" (run {run_id}; `benchwh dev` shows it, DAGSTER_HOME={dagster_home()})"


def cmd_rollback(args) -> int:
    from orchestration.progress import progress
    from publish.publish import PublishError, rollback
    from publish.report import sources_meta

    try:
        version = rollback(args.version, sources_meta(), progress)
    except PublishError as exc:
        raise UserError(str(exc)) from None
    print(f"published version is now {version}")
    from cli.site import rebuild_home_site

    rebuild_home_site(progress)
    return 0


def cmd_status(args) -> int:
    from ingest.freshness import last_failure, verdict
    from ingest.landing import Lander
    from ingest.raw_store import RawStore
    from ingest.source import load_sources
    from orchestration.progress import plural
    from publish.publish import exports_dir, list_history, read_version
    from publish.report import published_demo_sources, resolution_report
    from publish.verify import check_published

    version = read_version(config.published_path())
    check = check_published(full=args.verify)
    if version:
        version["demo_data"] = published_demo_sources(exports_dir() / "manifest.json")
    store = RawStore(config.raw_dir())
    lander = Lander(config.landing_dir(), store)
    report = {
        "home": str(config.home()),
        "published": version,
        "published_ok": check["ok"],
        "published_problem": check["problem"],
        "history": list_history(),
        "sources": {},
    }
    for name, src in sorted(load_sources().items()):
        entries = store.entries(name)
        outcomes = lander.outcomes(name)
        fresh = verdict(src, store, lander)
        report["sources"][name] = {
            "freshness": fresh.status,
            "freshness_line": fresh.line,
            "last_fetch": max((e.fetched_at for e in entries), default=None),
            "payloads": len(outcomes),
            "rows_landed": sum(sum(o.landed.values()) for o in outcomes),
            "rows_quarantined": sum(sum(o.quarantined.values()) for o in outcomes),
            "payloads_rejected": sum(1 for o in outcomes if o.status != "landed"),
            "last_failure": last_failure(name),
        }
    report["resolution"] = resolution_report(config.published_path()) if version else None
    if args.json:
        print(json.dumps(report, indent=2))
        return 0 if check["ok"] else 1
    print(f"warehouse home: {report['home']}")
    if not check["ok"]:
        print(f"published: DAMAGED: {check['problem']} (run `benchwh rollback` to restore the newest good version)")
    elif version:
        print(f"published: {version['version']} (built {version['build_started_at']}, code {version['code_revision']})")
        if version["demo_data"]:
            print(f"  holds DEMO data (the bundled offline recordings) from: {', '.join(version['demo_data'])}; "
                  "a live `benchwh refresh` replaces it")
    else:
        print("published: nothing yet (run `benchwh refresh`)")
    print(f"history: {plural(len(report['history']), 'version')}")
    print(f"{'source':<14}{'last fetch':<30}{'payloads':>9}{'landed':>10}{'quarantined':>13}  freshness")
    for name, s in report["sources"].items():
        print(f"{name:<14}{(s['last_fetch'] or '-'):<30}{s['payloads']:>9}{s['rows_landed']:>10}{s['rows_quarantined']:>13}"
              f"  {s['freshness_line']}")
        if s["last_failure"]:
            print(f"{'':<14}last run FAILED at {s['last_failure']['at']}: {s['last_failure']['error']}")
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
    return 0 if check["ok"] else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchwh", description="Bench Warehouse: LLM inference benchmarks.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("refresh", help="fetch sources, land, build, audit and publish")
    p.add_argument("--offline", action="store_true", help="replay the bundled recordings, no network")
    p.add_argument("--source", action="append", metavar="NAME", help="fetch only this source (repeatable)")
    p.add_argument("--no-fetch", action="store_true",
                   help="fetch nothing: land what raw/ holds, then build and publish")
    p.add_argument("--engine", metavar="NAME",
                   help="dbt engine of the build: duckdb (default) or spark (env BENCHWH_ENGINE)")
    p.add_argument("--strict", action="store_true",
                   help="a source that fails stops the refresh (default: the others are published, "
                        "the failed one keeps its last good landing until its freshness error hours)")
    p.set_defaults(func=cmd_refresh)

    p = sub.add_parser("rollback", help="restore a published version from history/")
    p.add_argument("version", nargs="?", help="version to restore (default: the previous one)")
    p.set_defaults(func=cmd_rollback)

    p = sub.add_parser("status", help="published version, sources' last fetch, rows and quarantine")
    p.add_argument("--json", action="store_true")
    p.add_argument("--verify", action="store_true",
                   help="read every table of the published file (default: checksum against history/index.json)")
    p.set_defaults(func=cmd_status)

    from cli import bench, dev, runs, site, sources

    for group in (runs, bench, sources, site, dev):
        group.register(sub)
    return parser


def _closed_pipe() -> int:
    """The reader went away (`benchwh status | head`): stop quietly, as other command-line tools do."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush cannot fail again
    except OSError:
        pass
    return 141


def debug() -> bool:
    """BENCHWH_DEBUG=1: tracebacks instead of one-line errors."""
    return os.environ.get("BENCHWH_DEBUG") == "1"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # settings are checked before any work: a bad value is a usage mistake, named, exit 2
    problems = config.check_settings()
    if problems:
        for problem in problems:
            print(f"benchwh: {problem}", file=sys.stderr)
        return 2
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below, not at exit
        return code
    except UserError as exc:
        print(f"benchwh: {exc}", file=sys.stderr)
        return 2
    except LockTimeout as exc:
        print(f"benchwh: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("benchwh: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _closed_pipe()
    except Exception as exc:  # one line, never a traceback, unless asked for
        if debug():
            raise
        line = next((l for l in str(exc).splitlines() if l.strip()), type(exc).__name__)
        print(f"benchwh: {type(exc).__name__}: {line}", file=sys.stderr)
        return 1


def run() -> NoReturn:
    """The `benchwh` program."""
    sys.exit(main())


if __name__ == "__main__":
    # run through the package module, so extra commands raise the same UserError class
    from cli.main import run as package_run

    package_run()
