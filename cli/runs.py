"""`benchwh keys generate|trust` and `benchwh runs sign|add` (registered by cli/main.py).

Every handler returns an exit code; user mistakes are one line on stderr (exit 2).
"""
from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

from ingest import config


def _fail(message: str, code: int = 2) -> int:
    print(f"benchwh: {message}", file=sys.stderr)
    return code


def cmd_keys_generate(args) -> int:
    from ingest.sources.runs import dsse

    out = Path(args.out) if args.out else dsse.default_key_path(config.home())
    if args.out and not out.parent.is_dir():
        # an explicit --out names a file in an existing folder; only the default keys/ is made
        return _fail(f"--out {out}: folder {out.parent} does not exist (create it first)")
    if out.exists():
        return _fail(f"{out} already exists; not overwriting a private key (choose another --out)")
    try:
        public_raw, keyid = dsse.write_private_key(out)
    except OSError as exc:
        return _fail(f"cannot write {out}: {exc.strerror or exc}")
    print(f"private key: {out} (mode 0600, keep it secret)")
    print(f"public key:  {base64.b64encode(public_raw).decode('ascii')}")
    print(f"keyid:       {keyid}")
    print(f"to trust it: benchwh keys trust {base64.b64encode(public_raw).decode('ascii')} --contributor NAME")
    return 0


def cmd_keys_trust(args) -> int:
    from ingest.sources.runs import dsse

    if Path(args.public_key).is_file():
        return _fail(f"{args.public_key} is a file: give the public key itself, in base64 (the `public key:` "
                     "line `benchwh keys generate` printed; a key file stays with its owner)")
    try:
        key = dsse.trust_key(config.home(), args.public_key, args.contributor)
    except ValueError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write trusted_keys.json: {exc.strerror or exc}")
    print(f"trusted key {key.keyid} for contributor {key.contributor!r} "
          f"in {config.home() / dsse.TRUSTED_KEYS_FILE}")
    return 0


def cmd_runs_sign(args) -> int:
    from ingest.files import write_atomically
    from ingest.sources.runs import dsse
    from ingest.sources.runs.errors import RunRejected
    from ingest.sources.runs.files import Refused, read_capped
    from ingest.sources.runs.payload import validate_payload

    src = Path(args.payload)
    try:
        body = read_capped(src)
    except Refused as exc:
        return _fail(f"{src}: {exc.reason}")
    key_path = Path(args.key) if args.key else dsse.default_key_path(config.home())
    if not args.key and not key_path.is_file():
        return _fail(f"no signing key: --key not given and no key at {key_path} "
                     "(create one with `benchwh keys generate`, or pass --key PATH)")
    try:
        key = dsse.load_private_key(key_path)
    except ValueError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"--key {key_path}: {exc.strerror or exc}")
    try:
        # refuse to sign what landing would reject (the exact bytes are signed, unchanged)
        validate_payload(body)
    except RunRejected as exc:
        return _fail(f"{src}: not a valid benchwh.run/1 payload: {exc.reason}")
    envelope = dsse.sign_payload(body, key)
    out = Path(args.out) if args.out else src.with_name(src.stem + ".dsse.json")
    if out.exists() and not args.force:
        return _fail(f"{out} already exists (use --force to replace it)")
    try:
        # a temporary beside it made with O_EXCL | O_NOFOLLOW: never written through a planted link
        write_atomically(out, json.dumps(envelope, indent=2) + "\n")
    except OSError as exc:
        return _fail(f"cannot write {out}: {exc.strerror or exc}")
    print(f"wrote {out} (signed by key {envelope['signatures'][0]['keyid']})")
    return 0


def cmd_runs_add(args) -> int:
    from ingest.files import printable
    from ingest.sources.runs.add import add_paths, summary
    from ingest.sources.runs.errors import RunIntakeError, RunRejected
    from ingest.sources.runs.intake import validate_meta

    flags = {"gpu": args.gpu, "gpu_count": args.gpu_count, "gpu_memory_gb": args.gpu_memory_gb,
             "cpu": args.cpu, "ram_gb": args.ram_gb, "os": args.os,
             "country": args.country.upper() if args.country else None,
             "engine": args.engine, "engine_version": args.engine_version, "backend": args.backend,
             "model": args.model, "quant": args.quant, "repo": args.repo, "protocol": args.protocol,
             "measured_at": args.measured_at, "avg_watts": args.avg_watts}
    flags = {k: v for k, v in flags.items() if v is not None}
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", flags.get("measured_at", "")):
        flags["measured_at"] += "T00:00:00Z"  # a date alone: that day, 00:00 UTC
    missing = [p for p in args.paths if not Path(p).exists() and not Path(p).is_symlink()]
    if missing:
        # the same usage mistake as `runs sign` of a missing file: exit 2, nothing landed
        return _fail(f"{printable(missing[0])}: No such file or directory"
                     + (f" (and {len(missing) - 1} more missing)" if len(missing) > 1 else ""))
    try:
        validate_meta(flags, "flags")
    except RunRejected as exc:
        return _fail(exc.reason)
    key = None
    if args.key is not None:
        from ingest.sources.runs import dsse

        key_path = Path(args.key)
        if not key_path.exists():
            return _fail(f"--key {printable(str(key_path))}: no such key file "
                         "(create one with `benchwh keys generate`)")
        try:
            key = dsse.load_private_key(key_path)
        except ValueError as exc:
            return _fail(f"--key {exc}")
        except OSError as exc:
            return _fail(f"--key {printable(str(key_path))}: cannot read it ({exc.strerror or exc})")
    try:
        # a file name's control characters are printed escaped: one line per file, never rewritten
        log = lambda line: print(printable(line))  # noqa: E731
        if key is not None:
            from ingest.sources.runs.add import vouch_paths

            results = vouch_paths([Path(p) for p in args.paths], key, config.home(), flags, log=log)
        else:
            results = add_paths([Path(p) for p in args.paths], config.home(), flags, log=log)
    except RunIntakeError as exc:
        return _fail(str(exc), code=1)
    print(summary(results))
    accepted = [r for r in results if r.status == "accepted"]
    rejected = [r for r in results if r.status == "rejected"]
    if accepted and not args.no_publish:
        from cli.pipeline import run_refresh

        try:
            # only the new run files land: nothing to run side by side, so no process per step;
            # nothing fetched and no recording replayed, as its run's tags say in the Dagster UI
            result = run_refresh(sources=[], offline=False, executor="in_process")
        except Exception as exc:  # the files are landed; say so rather than print a traceback
            line = next((l for l in str(exc).splitlines() if l.strip()), type(exc).__name__)
            print(f"benchwh: landed, but the rebuild failed: {line}", file=sys.stderr)
            return 1
        if not result.success:
            print(f"benchwh: landed, but the rebuild failed: {result.error}", file=sys.stderr)
            return 1
        version = getattr(result, "version", None)
        if getattr(result, "unchanged", False):
            print(f"no table changed: published version {version} stays")
        else:
            print(f"published{' ' + version if version else ''} -> {config.published_path()}")
            from cli.site import rebuild_home_site
            from orchestration.progress import progress

            rebuild_home_site(progress)
        from publish.report import where_runs_went

        for line in where_runs_went(accepted, config.published_path()):
            print(line)
    return 1 if rejected else 0


def register(subparsers) -> None:
    keys = subparsers.add_parser("keys", help="signing keys for run files")
    ksub = keys.add_subparsers(dest="keys_command", required=True)
    p = ksub.add_parser("generate", help="write a new Ed25519 private key (mode 0600), print its public key")
    p.add_argument("--out", metavar="PATH", help="private key file (default $BENCHWH_HOME/keys/benchwh_ed25519.pem)")
    p.set_defaults(func=cmd_keys_generate)
    p = ksub.add_parser("trust", help="add a public key to $BENCHWH_HOME/trusted_keys.json")
    p.add_argument("public_key", metavar="PUBLIC_KEY", help="raw 32-byte Ed25519 public key, base64")
    p.add_argument("--contributor", required=True, metavar="NAME", help="who owns the key")
    p.set_defaults(func=cmd_keys_trust)

    runs = subparsers.add_parser("runs", help="local benchmark run files")
    rsub = runs.add_subparsers(dest="runs_command", required=True)
    p = rsub.add_parser("sign", help="wrap a benchwh.run/1 payload in a signed DSSE envelope")
    p.add_argument("payload", metavar="PAYLOAD.json")
    p.add_argument("--key", metavar="KEY",
                   help="private key (default: the one `benchwh keys generate` wrote, "
                        "$BENCHWH_HOME/keys/benchwh_ed25519.pem)")
    p.add_argument("--out", metavar="PATH", help="envelope file (default: PAYLOAD.dsse.json beside it)")
    p.add_argument("--force", action="store_true", help="replace an existing envelope file")
    p.set_defaults(func=cmd_runs_sign)

    p = rsub.add_parser(
        "add", help="land run files, tool outputs, folders and .zip/.tar.gz archives, then rebuild and publish",
        description="Prints one line per file (accepted, duplicate or rejected: reason) and a summary; "
                    "exits 1 if anything was rejected. What a tool output lacks comes from a sidecar "
                    "<file>.meta.json or these flags (flags win). A GPU name is required, except for a "
                    "run the file shows on the CPU; a file lacking it is rejected with the flags that complete it. "
                    "With --key, each tool output is vouched for: its parsed runs become benchwh.run/1 payloads "
                    "(naming the file by the sha256 of its bytes) signed with KEY in DSSE envelopes, and those "
                    "signed run files are what is stored in $BENCHWH_HOME/raw/runs/ and landed: trust `signed` "
                    "when KEY's public key is in trusted_keys.json, else `unverified`.")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--no-publish", action="store_true", help="only land; do not rebuild and publish")
    p.add_argument("--key", metavar="KEY",
                   help="vouch for the tool outputs: sign their parsed runs with this Ed25519 private key "
                        "(the PEM `benchwh keys generate` wrote) and land the signed run files")
    g = p.add_argument_group("machine and model facts for tool outputs")
    g.add_argument("--gpu", help="GPU name, e.g. 'NVIDIA GeForce RTX 4090'")
    g.add_argument("--gpu-count", type=int)
    g.add_argument("--gpu-memory-gb", type=float)
    g.add_argument("--cpu")
    g.add_argument("--ram-gb", type=float)
    g.add_argument("--os")
    g.add_argument("--country", help="ISO 3166 alpha-2 code (for grid carbon)")
    g.add_argument("--engine", help="the engine that served the requests when the file names only its client "
                                    "(e.g. llama.cpp behind `vllm bench serve`)")
    g.add_argument("--engine-version")
    g.add_argument("--backend", help="CUDA, ROCm, Vulkan, Metal, ...")
    g.add_argument("--model", help="model name (Ollama --verbose text has none)")
    g.add_argument("--quant")
    g.add_argument("--repo", help="Hugging Face repo of the model")
    g.add_argument("--protocol", help="name for the test profile")
    g.add_argument("--measured-at", "--created-at", dest="measured_at",
                   help="RFC 3339 UTC time the run was made (e.g. 2025-02-14T09:30:00Z), for an output "
                        "that does not say "
                        "(otherwise measured_at stays empty: the time of adding is not the measurement's)")
    g.add_argument("--avg-watts", type=float, help="average power draw measured during the run")
    p.set_defaults(func=cmd_runs_add)
