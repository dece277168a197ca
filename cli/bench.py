"""`benchwh bench`: the command-line face of ingest.measure (argparse wiring and exit codes)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

# only the protocol's constants here: every `benchwh` command builds this parser, and the
# measuring client (requests, pandas) loads when `bench` runs
from ingest.measure.protocols import RECALL_SIZES


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "bench",
        help="measure a model on an OpenAI-compatible server and write a signed run file",
        description="Measure a model served on this machine (llama-server, Ollama, vLLM, LM Studio: "
                    "anything serving /v1/chat/completions with stream: true) with a fixed protocol, "
                    "and write a signed benchwh.run/1 file.")
    p.add_argument("--endpoint", required=True, help="server URL, e.g. http://127.0.0.1:8080")
    p.add_argument("--model", required=True, help="model name as the server knows it")
    p.add_argument("--key", type=Path, help="Ed25519 private key to sign with (default: the one "
                   "`benchwh keys generate` wrote, $BENCHWH_HOME/keys/benchwh_ed25519.pem)")
    p.add_argument("--country", help="ISO 3166 alpha-2 country of the machine (for its grid carbon)")
    p.add_argument("--out", type=Path, help="run file to write (default run-<submission_id>.json)")
    p.add_argument("--protocol", default="gen-1k", help="measuring protocol (default gen-1k)")
    p.add_argument("--recall", action="store_true",
                   help="also walk context recall at 4K..128K tokens")
    p.add_argument("--submit", action="store_true", help="land the file in the warehouse at once (runs add)")
    g = p.add_argument_group("overrides (defaults come from the protocol or the server)")
    g.add_argument("--warmup", type=int, help="warm-up repetitions")
    g.add_argument("--repetitions", type=int, help="measured repetitions")
    g.add_argument("--max-tokens", type=int, dest="gen_tokens", help="generated tokens per repetition")
    g.add_argument("--api-key", help="bearer token for the server, if it wants one")
    g.add_argument("--connect-timeout", type=float, default=5.0, help="seconds (default 5)")
    g.add_argument("--timeout", type=float, default=300.0, dest="read_timeout",
                   help="seconds to wait for any byte of an answer (default 300)")
    g.add_argument("--no-ignore-eos", dest="ignore_eos", action="store_false",
                   help="do not send ignore_eos (for servers that refuse unknown fields)")
    g.add_argument("--engine", help="engine name when the server does not say (llama.cpp, ollama, vllm, ...)")
    g.add_argument("--engine-version")
    g.add_argument("--backend", help="CUDA, ROCm, Metal, Vulkan, CPU, ...")
    g.add_argument("--model-file", help="model file name (GGUF), when the server does not say")
    g.add_argument("--model-repo", help="Hugging Face repo of the model file")
    g.add_argument("--quant", help="quantization, e.g. Q4_K_M (default: from the file name)")
    g.add_argument("--context-limit", type=int, help="the server's context size, when it does not say")
    g.add_argument("--recall-sizes", help="comma-separated context sizes in tokens for --recall "
                                          f"(default {','.join(str(s) for s in RECALL_SIZES)})")
    g.add_argument("--no-power", dest="power", action="store_false", help="do not sample nvidia-smi power")
    p.set_defaults(func=handle, handler=handle)
    return p


def default_key_path() -> Path:
    """Where `benchwh keys generate` writes its key by default."""
    from ingest import config
    return config.home() / "keys" / "benchwh_ed25519.pem"


def _sizes(text: str | None) -> tuple[int, ...]:
    from ingest.measure.client import UsageError

    if not text:
        return RECALL_SIZES
    try:
        sizes = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise UsageError(f"--recall-sizes {text!r}: expected numbers separated by commas") from None
    if not sizes or any(s <= 0 for s in sizes):
        raise UsageError(f"--recall-sizes {text!r}: expected positive numbers")
    return tuple(sorted(sizes))


def handle(args: argparse.Namespace) -> int:
    from ingest.measure.client import BenchError, UsageError
    from ingest.measure.runner import BenchOptions, run_bench

    if args.key is None and default_key_path().is_file():
        args.key = default_key_path()
    try:
        opts = BenchOptions(
            endpoint=args.endpoint, model=args.model, key=args.key, country=args.country, out=args.out,
            protocol=args.protocol, recall=args.recall, warmup=args.warmup, repetitions=args.repetitions,
            gen_tokens=args.gen_tokens, api_key=args.api_key, connect_timeout=args.connect_timeout,
            read_timeout=args.read_timeout, ignore_eos=args.ignore_eos, engine=args.engine,
            engine_version=args.engine_version, backend=args.backend, model_file=args.model_file,
            model_repo=args.model_repo, quant=args.quant, context_limit=args.context_limit,
            recall_sizes=_sizes(args.recall_sizes), power=args.power)
        result = run_bench(opts, log=lambda line: print(line, flush=True))
    except BenchError as exc:
        print(f"benchwh bench: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        print("benchwh bench: interrupted, no file written", file=sys.stderr)
        return 130
    if args.submit:
        return submit(result.path)
    return 0


def submit(path: Path) -> int:
    """Land the file now, through the same code path as `benchwh runs add PATH`."""
    from cli import runs as runs_cli

    parser = argparse.ArgumentParser(prog="benchwh")
    sub = parser.add_subparsers(dest="command")
    runs_cli.register(sub)
    args = parser.parse_args(["runs", "add", str(path)])
    handler = getattr(args, "handler", None) or getattr(args, "func")
    return int(handler(args) or 0)


def main(argv: list[str] | None = None) -> int:
    """Run `bench` alone (python -m cli.bench ...), for tests and before cli.py wires it."""
    parser = argparse.ArgumentParser(prog="benchwh")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(["bench", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
