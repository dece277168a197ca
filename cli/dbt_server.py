"""A warm dbt process for `benchwh-dbt` to fork from: dbt imported and patched once, not per run.

Every dbt process spends ~4 CPU-s importing dbt, its adapters and their dataclasses before it reads
the project (of ~15 CPU-s for a build of the offline snapshot). The first `benchwh-dbt` starts
this server in the background and runs dbt itself; later ones hand their command line,
environment, working folder and standard streams to the server over a Unix socket, and it forks a
worker that runs dbt with them, as `benchwh-dbt` would have run it in its own process. The
`benchwh-dbt` process stays as the worker's stand-in: it forwards SIGINT, SIGTERM and SIGHUP to
the worker and exits with its status; the worker dies when that process dies (issue #12: a killed
refresh takes its dbt with it).

The server is one per Python, dbt install, benchwh-dbt code and process cache folder (the socket's
name holds a hash of them: an upgrade or an edit of these modules starts a new one), accepts only
its own user (SO_PEERCRED), runs no dbt itself, and exits after BENCHWH_DBT_SERVER_IDLE seconds
(default 60) without a worker. BENCHWH_DBT_SERVER=0 turns it off.
"""
from __future__ import annotations

import contextlib
import gc
import hashlib
import importlib
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

IDLE_S_DEFAULT = 60.0
# what a worker's imports come from, besides these modules' own files
_PACKAGES = ("dbt-core", "dbt-common", "dbt-adapters", "dbt-duckdb", "dbt-spark", "mashumaro", "jinja2",
             "duckdb", "agate", "protobuf", "click")
# set by dagster-dbt for its dbt processes: the worker sets its streams from the request instead
_STREAM_ONLY_ENV = {"PYTHONUNBUFFERED", "PYTHONLEGACYWINDOWSSTDIO"}
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1
# imported by a DuckDB build beyond dbt's CLI (~1.6 CPU-s); Spark's adapter is left to its runs
_BUILD_MODULES = ("duckdb", "dbt.adapters.duckdb", "dbt.adapters.duckdb.impl", "dbt.adapters.sql.impl", "dbt.task.build",
                  "dbt.task.compile", "dbt.task.run", "dbt.task.seed", "dbt.task.snapshot", "dbt.task.test",
                  "dbt.parser.sql", "daff", "google.protobuf.descriptor_pb2", "_strptime")


def wanted() -> bool:
    return os.environ.get("BENCHWH_DBT_SERVER", "1").strip() not in ("0", "") and hasattr(os, "pidfd_open")


def server_address(cache: Path) -> str:
    """An abstract Unix socket name (no file to leave behind, no path length limit), different for
    every set of code a worker would run: this Python, its PYTHON* settings (PYTHONPATH among
    them) and locale, the installed packages dbt runs on and these modules."""
    from cli.dbt_guard import installed_versions

    here = Path(__file__).resolve().parent
    code = [(name, (here / name).stat().st_mtime_ns, (here / name).stat().st_size)
            for name in ("dbt_guard.py", "dbt_server.py", "collector.py")]
    identity = {"python": os.path.realpath(sys.executable), "version": sys.version,
                "env": sorted((k, v) for k, v in os.environ.items()  # read at interpreter start
                               if k.startswith(("PYTHON", "LC_")) and k not in _STREAM_ONLY_ENV or k == "LANG"),
                "packages": installed_versions(_PACKAGES), "code": code, "cache": str(cache), "uid": os.getuid()}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:32]
    return f"\0benchwh-dbt-{digest}"


def idle_seconds() -> float:
    """BENCHWH_DBT_SERVER_IDLE, else the default (also for a value that is no positive number: the
    server has no terminal to say so)."""
    try:
        value = float(os.environ.get("BENCHWH_DBT_SERVER_IDLE") or IDLE_S_DEFAULT)
    except ValueError:
        return IDLE_S_DEFAULT
    return value if value > 0 else IDLE_S_DEFAULT


# ---- the benchwh-dbt side -----------------------------------------------------------------------
def run_in_warm_worker(cache: Path, argv: list[str]) -> int | None:
    """dbt's exit status from a worker of the warm server; None when there is no server (one is
    then started for the next run, and the caller runs dbt itself)."""
    address = server_address(cache)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(address)
    except OSError:
        conn.close()
        _start_server(cache, address)
        return None
    with conn:
        # a signal this process was started ignoring (as pytest-xdist's workers start theirs for
        # SIGINT) is ignored by its worker too, as by a dbt run in this process
        ignored = [int(sig) for sig in _FORWARDED if signal.getsignal(sig) == signal.SIG_IGN]
        request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(), "umask": _umask(),
                   "client_pid": os.getpid(), "ignored_signals": ignored,
                   "stdio": [[s.encoding, s.errors] if s is not None else None
                             for s in (sys.stdin, sys.stdout, sys.stderr)]}
        body = json.dumps(request).encode()
        try:
            conn.sendmsg([struct.pack("!I", len(body)), body],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))])
            replies = conn.makefile("rb")
            started = json.loads(replies.readline() or b"null")
        except OSError:
            started = None
        if not started or "pid" not in started:
            return None  # the server went away before forking: run dbt here
        worker = int(started["pid"])
        for sig in _FORWARDED:
            if int(sig) not in ignored:
                signal.signal(sig, lambda signum, frame: _signal_quietly(worker, signum))
        try:
            done = json.loads(replies.readline() or b"null")
        except OSError:
            done = None
        if not done or "status" not in done:
            _signal_quietly(worker, signal.SIGKILL)
            print("benchwh-dbt: the warm dbt server stopped while dbt ran; dbt was stopped",
                  file=sys.stderr)
            return 1
        status = int(done["status"])
        if status < 0:  # the worker died of a signal: so does its stand-in, as one process would
            _die_of(-status)
        return status if status >= 0 else 128 - status


def _die_of(signum: int) -> None:
    with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
        signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _signal_quietly(pid: int, signum: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signum)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _start_server(cache: Path, address: str) -> None:
    """In the background, in its own session, holding none of this process's files or pipes; on
    the address this process worked out (the server's own sys.path differs from a script's)."""
    env = {k: v for k, v in os.environ.items() if k != "BENCHWH_PARENT_PID"}
    with contextlib.suppress(OSError):
        subprocess.Popen([sys.executable, "-P", "-m", "cli.dbt_server", str(cache), address[1:]], env=env, cwd="/",
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)


# ---- the server ---------------------------------------------------------------------------------
def serve(cache: Path, address: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address)
    except OSError:
        return  # another server for the same code started first
    from cli import dbt_guard

    dbt_guard.prepare_dbt(cache)  # imports dbt and patches it, as each benchwh-dbt run would
    for module in _BUILD_MODULES:  # what a build imports after that
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    gc.freeze()
    listener.listen(16)
    idle_s = idle_seconds()
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    running: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, connection)
    last_seen = time.monotonic()
    while running or time.monotonic() - last_seen < idle_s:
        for key, _ in selector.select(timeout=min(idle_s, 30.0)):
            if key.data is None:
                started = _accept(listener, selector, running)
                if started:
                    pidfd, pid, conn = started
                    running[pidfd] = (pid, conn)
            else:
                pid, conn = running.pop(key.fd)
                selector.unregister(key.fd)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
                conn.close()
            last_seen = time.monotonic()


def _accept(listener: socket.socket, selector, running: dict) -> tuple[int, int, socket.socket] | None:
    conn, _ = listener.accept()
    fds: list[int] = []
    try:
        conn.settimeout(10)
        uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        if uid != os.getuid():
            raise PermissionError("another user")
        msg, ancdata, _, _ = conn.recvmsg(4, socket.CMSG_SPACE(3 * 4))
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += struct.unpack(f"{len(data) // 4}i", data[:len(data) - len(data) % 4])
        (length,) = struct.unpack("!I", msg)
        body = b""
        while len(body) < length:
            chunk = conn.recv(length - len(body))
            if not chunk:
                raise ConnectionError("short request")
            body += chunk
        request = json.loads(body)
        if len(fds) != 3:
            raise ValueError("no standard streams")
    except (OSError, ValueError, struct.error):
        for fd in fds:
            os.close(fd)
        conn.close()
        return None
    conn.settimeout(None)
    try:
        pid = os.fork()
    except OSError:  # no process to be had: this caller runs dbt itself, the other runs go on
        for fd in fds:
            os.close(fd)
        conn.close()
        return None
    if pid == 0:  # the worker: never returns
        code = 70
        try:
            listener.close()
            selector.close()
            for other_pidfd, (_, other) in running.items():  # other runs' ends: theirs to close
                os.close(other_pidfd)
                other.close()
            code = _run_worker(request, fds, conn)
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    selector.register(pidfd, selectors.EVENT_READ, pid)
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return pidfd, pid, conn


def _run_worker(request: dict, fds: list[int], conn: socket.socket) -> int:
    import ctypes
    import io

    conn.close()
    with contextlib.suppress(OSError, AttributeError):  # the server gone: its workers' statuses are lost
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        client = os.pidfd_open(int(request["client_pid"]))
    except OSError:
        return 137  # benchwh-dbt died before its worker started
    # the watcher never takes a forwarded signal: Linux gives a process's signal to any thread not
    # blocking it, and SIGINT taken there leaves dbt's main thread blocked in a read (the thread is
    # made with the mask blocked, then the main thread unblocks it)
    signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED)
    threading.Thread(target=_die_with, args=(client,), daemon=True).start()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORWARDED)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(int(request["umask"]))
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    unbuffered = bool(request["env"].get("PYTHONUNBUFFERED"))
    streams = []
    for fd, mode, spec in zip((0, 1, 2), ("r", "w", "w"), request["stdio"]):  # as Python sets them up
        encoding, errors = spec or ("utf-8", "strict")
        writes = mode == "w"
        raw = io.open(fd, mode + "b", buffering=0 if unbuffered and writes else -1, closefd=False)
        streams.append(io.TextIOWrapper(raw, encoding=encoding, errors=errors, write_through=unbuffered and writes,
                                        line_buffering=writes and (fd == 2 or os.isatty(fd))))
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams
    ignored = set(request.get("ignored_signals", ()))
    for sig in _FORWARDED:  # as Python sets them up at start
        if int(sig) in ignored:
            signal.signal(sig, signal.SIG_IGN)
        else:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
    sys.argv = ["benchwh-dbt", *request["argv"]]
    sys.modules["__main__"].__package__ = None  # click names the program from argv[0], not `-m cli.dbt_server`
    from cli import dbt_guard

    try:
        dbt_guard.run_dbt(prepared=True)
        code = 0
    except SystemExit as done:
        code = _exit_code(done.code)
    except BaseException:  # noqa: BLE001 - printed as Python would, then the status it would give
        import traceback

        traceback.print_exc()
        code = 1
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _die_with(client_pidfd: int) -> None:
    import select

    select.select([client_pidfd], [], [])
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    serve(Path(sys.argv[1]), "\0" + sys.argv[2])
