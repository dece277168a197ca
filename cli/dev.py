"""`benchwh dev`: the Dagster UI on the CLI's own instance (what `make dev` runs).

`dagster dev` alone uses a temporary DAGSTER_HOME (a `.tmp_dagster_home_*` folder in the working
directory) with none of our instance settings, so the UI would show none of the CLI's runs,
materializations or check results. Here it gets the same DAGSTER_HOME as `benchwh refresh`
(orchestration.instance: run queue limit, no telemetry), and it runs as a child in its own
session: Ctrl-C or SIGTERM stops it (politely, then by force), webserver and daemon together.
A `benchwh dev` killed hard takes `dagster dev` with it (a parent-death signal), and a busy port is
refused before anything starts.
"""
from __future__ import annotations

import ctypes
import errno
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from cli.errors import UserError
from ingest import config

STOP_GRACE_S = 20


def dagster_dev_command(host: str, port: int) -> list[str]:
    dagster = Path(sys.executable).parent / "dagster"
    return [str(dagster) if dagster.exists() else "dagster", "dev", "-m", "orchestration.definitions",
            "-h", host, "-p", str(port)]


def port_problem(host: str, port: int) -> str | None:
    """Why the UI cannot listen on host:port (taken, or not an address of this machine), or None."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the webserver binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is already in use (another `benchwh dev`? choose one with --port)"
            return f"cannot listen on {host}:{port}: {exc.strerror}"
    return None


def cmd_dev(args) -> int:
    from orchestration.progress import progress
    from orchestration.instance import ensure_dagster_home
    from orchestration.manifest import prepare_manifest

    problem = port_problem(args.host, args.port)
    if problem:
        raise UserError(problem)
    home = ensure_dagster_home()
    prepare_manifest(log=progress)  # a parse error is one line here, before the UI starts
    print(f"benchwh dev: Dagster UI on http://{args.host}:{args.port} "
          f"(DAGSTER_HOME={home}, warehouse {config.home()}); Ctrl-C stops it", file=sys.stderr, flush=True)
    env = {**os.environ, "DAGSTER_HOME": str(home), "BENCHWH_HOME": str(config.home())}
    proc = subprocess.Popen(dagster_dev_command(args.host, args.port), env=env, cwd=config.project_root(),
                            start_new_session=True, preexec_fn=_default_signals)
    stopping = []

    def stop(signum, _frame):
        stopping.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    while True:
        try:
            code = proc.wait(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            if stopping:
                code = _stop(proc)
                break
    if stopping:
        print("benchwh dev: stopped", file=sys.stderr)
        return 0
    return code


PR_SET_PDEATHSIG = 1


def _default_signals() -> None:
    """In the child: SIGINT and SIGTERM back to their defaults, and SIGTERM when this process dies.

    A shell starting a background job (make in a script, `&`) ignores SIGINT, children inherit
    that, and `dagster dev` maps SIGTERM to whatever SIGINT does: both ignored, only SIGKILL
    stopped it. With the defaults, Python turns SIGINT into KeyboardInterrupt and dagster dev
    shuts its webserver and daemon down. The parent-death signal (kept across exec) does the same
    when `benchwh dev` is killed hard.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _stop(proc: subprocess.Popen) -> int:
    """SIGINT to dagster dev (it stops its webserver and daemon), SIGKILL to its session if it lingers."""
    for sig, wait in ((signal.SIGINT, STOP_GRACE_S), (signal.SIGKILL, 5)):
        try:
            if sig == signal.SIGINT:
                os.kill(proc.pid, sig)
            else:
                os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return proc.wait()


def register(subparsers) -> None:
    p = subparsers.add_parser("dev", help="the Dagster UI on the CLI's own instance (runs, materializations, checks)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=3000)
    p.set_defaults(func=cmd_dev)
