"""`benchwh site build|serve`, `benchwh docs`, `benchwh diff`: what downstream readers see."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ingest import config


def _user_error(message: str):
    from cli.errors import UserError

    return UserError(message)


def cmd_site_build(args) -> int:
    from site_builder.data import SiteSourceError
    from site_builder.render import build_site

    source = Path(args.source) if args.source else config.published_path()
    manifest = Path(args.manifest) if args.manifest else (
        source / "manifest.json" if source.is_dir() else config.home() / "exports" / "manifest.json")
    out = Path(args.out) if args.out else config.home() / "site"
    try:
        builder = build_site(source, manifest, out)
    except SiteSourceError as exc:
        raise _user_error(str(exc)) from None
    pages = builder.pages
    kinds = {}
    for p in pages:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    print(f"site built: {len(pages)} pages ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}) -> {out}")
    for note in builder.notes:
        print(note)
    return 0


def rebuild_home_site(log) -> None:
    """After a publish or rollback: rebuild `$BENCHWH_HOME/site` when the home has one, so that it
    never shows an older version than the published one. A site that cannot be rebuilt does not
    undo the publish; one line says which version it still shows."""
    from site_builder.render import build_site

    out = config.home() / "site"
    if not (out / "index.html").is_file():
        return
    try:
        builder = build_site(config.published_path(), config.home() / "exports" / "manifest.json", out)
    except Exception as exc:  # noqa: BLE001 - any failure leaves the publish standing; say why in one line
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        log(f"warning: the site in {out} was not rebuilt ({reason}); it is stale until `benchwh site build`")
        return
    log(f"site rebuilt: {len(builder.pages)} pages -> {out}")


def cmd_site_serve(args) -> int:
    from site_builder.serve import make_server

    folder = Path(args.dir) if args.dir else config.home() / "site"
    if not (folder / "index.html").is_file():
        raise _user_error(f"no built site in {folder} (run `benchwh site build` first)")
    try:
        server = make_server(folder, args.port)
    except OSError as exc:
        raise _user_error(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}") from None
    print(f"serving {folder} on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def cmd_docs(args) -> int:
    from cli.docs import DocsError, generate_docs

    try:
        target = generate_docs()
    except DocsError as exc:
        print(f"benchwh: docs failed: {exc}", file=sys.stderr)
        return 1
    print(f"dbt docs written to {target} (exports/manifest.json points to it)")
    return 0


def cmd_diff(args) -> int:
    from publish.diff import DiffError, diff_versions, format_text, resolve_versions

    try:
        old, new = resolve_versions(args.old, args.new)
        summary = diff_versions(old, new)
    except DiffError as exc:
        raise _user_error(str(exc)) from None
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(format_text(summary))
    return 0


def register(sub) -> None:
    p = sub.add_parser("site", help="the reference site rendered from the published site.* tables")
    site = p.add_subparsers(dest="site_command", required=True)
    b = site.add_parser("build", help="render static HTML pages from the published site tables")
    b.add_argument("--out", metavar="DIR", help="output folder (default $BENCHWH_HOME/site)")
    b.add_argument("--from", dest="source", metavar="PATH",
                   help="a published .duckdb file or an exports folder (default the published file)")
    b.add_argument("--manifest", metavar="FILE", help="manifest.json (default exports/manifest.json)")
    b.set_defaults(func=cmd_site_build)
    s = site.add_parser("serve", help="serve the built site on 127.0.0.1")
    s.add_argument("--dir", metavar="DIR", help="built site folder (default $BENCHWH_HOME/site)")
    s.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    s.set_defaults(func=cmd_site_serve)

    p = sub.add_parser("docs", help="dbt docs (every published table and column) next to the exports")
    p.set_defaults(func=cmd_docs)

    p = sub.add_parser("diff", help="what changed between two published versions (history/)")
    p.add_argument("old", nargs="?", help="older version (default: the one before NEW)")
    p.add_argument("new", nargs="?", help="newer version (default: the published one)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_diff)
