"""Warm processes to fork from: dbt (for `benchwh-dbt`) or Dagster and pandas (for `benchwh`)
imported once, not per run.

Every dbt process spends ~4 CPU-s importing dbt, its adapters and their dataclasses before it reads
the project (of ~15 CPU-s for a build of the offline snapshot), and every `benchwh` command ~2
CPU-s importing Dagster, its storage, pandas and pandera (a refresh with nothing new: 3.9 -> 1.8
CPU-s). The first `benchwh-dbt` (or `benchwh`) starts this server in the background and runs
itself; one that finds the server still starting (bound, not listening yet: it imports) waits for it
rather than import dbt beside it on the same cores (up to STARTING_WAIT_S): so a refresh's build
forks from the server the refresh started as it began. Later ones hand their command line,
environment, working folder and standard streams to the server over a Unix socket, and it forks a
worker that runs them, as the caller would have run them in its own process. The caller stays as
the worker's stand-in: it forwards SIGINT, SIGTERM and SIGHUP to the worker, stops and continues it
with itself (Ctrl-Z, `fg`), and exits with its status; the worker dies when that process dies
(issue #12: a killed refresh takes its dbt with it).

A server is one per kind, Python, installed packages, these modules' code and process cache folder
(the socket's name holds a hash of them: an upgrade or an edit of these modules starts a new one);
a `benchwh` server also per import path (a checkout run with `python -m cli.main` imports its own
code) and DAGSTER_* settings. It accepts only its own user (SO_PEERCRED), runs nothing itself, and
exits after BENCHWH_DBT_SERVER_IDLE seconds (default 60) without a worker. BENCHWH_DBT_SERVER=0
and BENCHWH_CLI_SERVER=0 turn them off. `benchwh dev` never runs in a worker: it runs for hours
and owns its process group.
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
# how long a run waits for a server that is starting before it runs itself (a start takes 3-6 s)
STARTING_WAIT_S = 60.0
# what a worker's imports come from, besides these modules' own files
_PACKAGES = ("dbt-core", "dbt-common", "dbt-adapters", "dbt-duckdb", "dbt-spark", "mashumaro", "jinja2",
             "duckdb", "agate", "protobuf", "click")
# set by dagster-dbt for its dbt processes: the worker sets its streams from the request instead
_STREAM_ONLY_ENV = {"PYTHONUNBUFFERED", "PYTHONLEGACYWINDOWSSTDIO"}
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1
# what `benchwh` imports before its command runs (~2.5 CPU-s for a refresh); none of it reads
# the environment or starts a thread at import. orchestration.dbt_cli imports dagster-dbt
# without dbt-core (its docstring): the one module of this project the server holds.
_CLI_MODULES = ("dagster", "dagster._core.storage.sql", "dagster._core.storage.sqlite_storage",
                "dagster._core.storage.event_log.sqlite.sqlite_event_log", "dagster._daemon",
                "dagster._core.storage.runs.sqlite.sqlite_run_storage",
                "dagster._core.storage.schedules.sqlite.sqlite_schedule_storage",
                "orchestration.dbt_cli", "pandas", "pandera.pandas", "sqlalchemy",
                "alembic", "bs4", "requests", "duckdb", "upath", "yaml")
_CLI_PACKAGES = ("dagster", "dagster-dbt", "pandas", "pandera", "sqlalchemy", "alembic",
                 "beautifulsoup4", "requests", "duckdb", "universal-pathlib", "PyYAML", "numpy")
# imported by a DuckDB build beyond dbt's CLI (~1.6 CPU-s); Spark's adapter is left to its runs
_BUILD_MODULES = ("duckdb", "dbt.adapters.duckdb", "dbt.adapters.duckdb.impl", "dbt.adapters.sql.impl", "dbt.task.build",
                  "dbt.task.compile", "dbt.task.run", "dbt.task.seed", "dbt.task.snapshot", "dbt.task.test",
                  "dbt.parser.sql", "daff", "google.protobuf.descriptor_pb2", "_strptime")


def wanted(kind: str = "dbt") -> bool:
    switch = "BENCHWH_CLI_SERVER" if kind == "cli" else "BENCHWH_DBT_SERVER"
    return os.environ.get(switch, "1").strip() not in ("0", "") and hasattr(os, "pidfd_open")


def server_address(cache: Path, kind: str = "dbt") -> str:
    """An abstract Unix socket name (no file to leave behind, no path length limit), different for
    every set of code a worker would run: this Python, its PYTHON* settings (PYTHONPATH among
    them) and locale, the installed packages it runs on and these modules; for `benchwh`, also
    the import path (a checkout run with `python -m cli.main` is not the installed one)."""
    from cli.dbt_guard import installed_versions

    here = Path(__file__).resolve().parent
    code = [(name, (here / name).stat().st_mtime_ns, (here / name).stat().st_size)
            for name in ("dbt_guard.py", "dbt_server.py", "collector.py")]
    identity = {"python": os.path.realpath(sys.executable), "version": sys.version,
                "env": sorted((k, v) for k, v in os.environ.items()  # read at interpreter start
                               if k.startswith(("PYTHON", "LC_")) and k not in _STREAM_ONLY_ENV or k == "LANG"),
                # what the server imports: every `benchwh` command works this key out
                "packages": installed_versions(_CLI_PACKAGES if kind == "cli" else _PACKAGES),
                "code": code, "cache": str(cache), "uid": os.getuid()}
    if kind == "cli":
        preloaded = here.parent / "orchestration" / "dbt_cli.py"
        identity.update(kind=kind, path=_import_path(),
                        dagster_env=sorted((k, v) for k, v in os.environ.items() if k.startswith("DAGSTER_")),
                        cli_code=[str(preloaded), preloaded.stat().st_mtime_ns, preloaded.stat().st_size])
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:32]
    return f"\0benchwh-{kind}-{digest}"


def _import_path() -> list[str]:
    """sys.path with its folders made absolute ('' is the working folder); entries that are no
    folder stay as they are (an editable install's path hook marker is relative to nothing)."""
    return [os.getcwd() if not entry else os.path.abspath(entry) if os.path.isdir(entry) else entry
            for entry in sys.path]


def idle_seconds() -> float:
    """BENCHWH_DBT_SERVER_IDLE, else the default (also for a value that is no positive number: the
    server has no terminal to say so)."""
    try:
        value = float(os.environ.get("BENCHWH_DBT_SERVER_IDLE") or IDLE_S_DEFAULT)
    except ValueError:
        return IDLE_S_DEFAULT
    return value if value > 0 else IDLE_S_DEFAULT


def prestart(cache: Path | None, kind: str = "dbt") -> bool:
    """Start the warm server for `cache` in the background unless one is listening (or servers are
    off): a refresh does this as it begins, so that its first build forks warm instead of importing
    dbt on its way (a nightly refresh found none: the last run was a day before). True when one
    was started."""
    if cache is None or not wanted(kind):
        return False
    address = server_address(cache, kind)
    if _listening(address) or _starting(address):
        return False
    _start_server(cache, address, kind)
    return True


def _listening(address: str) -> bool:
    """Does a server accept on `address`? (refused until it has dbt prepared and listens; it
    reads no request from the probe and goes on)"""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(address)
            return True
        except OSError:
            return False


_SO_ACCEPTCON = 0x10000  # a listening socket's flag in /proc/net/unix


def _starting(address: str) -> bool:
    """Is a server bound to `address` but not listening yet (still importing and preparing)? A
    server binds first, so that no second one starts, and listens once prepared. Linux lists bound
    abstract names in /proc/net/unix with a leading @ (and its accepted connections, state 03)."""
    name = "@" + address.lstrip("\0")
    bound = listening = False
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/net/unix", encoding="ascii", errors="replace") as table:
            next(table, None)
            for line in table:  # Num RefCount Protocol Flags Type St Inode Path
                fields = line.split()
                if len(fields) == 8 and fields[7] == name and fields[5] == "01":  # not a connection
                    listening |= bool(int(fields[3], 16) & _SO_ACCEPTCON)
                    bound = True
    return bound and not listening


def _connect_when_started(address: str, wait_s: float = STARTING_WAIT_S) -> socket.socket | None:
    """A connection to the server on `address`; if it is still starting, once it listens (None
    when there is none, or it did not listen within `wait_s`)."""
    deadline = time.monotonic() + wait_s
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(address)
            return conn
        except OSError:
            conn.close()
        if not _starting(address) or time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def start_and_wait(cache: Path | None, kind: str = "dbt", timeout_s: float = 120.0) -> bool:
    """prestart, then wait until the server listens: the benchmark times a build as a refresh's
    runs, forked from the server the refresh started while it fetched and landed. False when
    servers are off or none listened in time."""
    if cache is None or not wanted(kind):
        return False
    prestart(cache, kind)
    address = server_address(cache, kind)
    deadline = time.monotonic() + timeout_s
    while not _listening(address):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# ---- the benchwh-dbt side -----------------------------------------------------------------------
def run_in_warm_worker(cache: Path, argv: list[str], kind: str = "dbt") -> int | None:
    """The exit status of the run (dbt's, or for kind "cli" `benchwh`'s; argv then starts with
    the program) from a worker of the warm server; None when there is no server (one is then
    started for the next run, and the caller runs it itself)."""
    address = server_address(cache, kind)
    conn = _connect_when_started(address)
    if conn is None:
        _start_server(cache, address, kind)
        return None
    with conn:
        # a signal this process was started ignoring (as pytest-xdist's workers start theirs for
        # SIGINT) is ignored by its worker too, as by a dbt run in this process
        ignored = [int(sig) for sig in _FORWARDED if signal.getsignal(sig) == signal.SIG_IGN]
        request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(), "umask": _umask(),
                   "main_file": getattr(sys.modules["__main__"], "__file__", None),
                   "client_pid": os.getpid(), "ignored_signals": ignored,
                   "stdio": [[s.encoding, s.errors] if s is not None else None
                             for s in (sys.stdin, sys.stdout, sys.stderr)]}
        body = json.dumps(request).encode()
        try:
            conn.sendmsg([struct.pack("!I", len(body)), body],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))])
            replies = _Lines(conn)
            started = json.loads(replies.readline() or b"null")
        except OSError:
            started = None
        if not started or "pid" not in started:
            return None  # the server went away before forking: run dbt here
        worker = int(started["pid"])
        for sig in _FORWARDED:
            if int(sig) not in ignored:
                signal.signal(sig, lambda signum, frame: _signal_quietly(worker, signum))
        if signal.getsignal(signal.SIGTSTP) == signal.SIG_DFL:
            signal.signal(signal.SIGTSTP, lambda signum, frame: _stop_with(worker))
        try:
            with _signal_wakeups() as wakeups:
                done = json.loads(replies.readline(wakeups) or b"null")
        except OSError:
            done = None
        if not done or "status" not in done:
            _signal_quietly(worker, signal.SIGKILL)
            print(f"{'benchwh' if kind == 'cli' else 'benchwh-dbt'}: the warm {kind} server stopped while "
                  f"{'the command' if kind == 'cli' else 'dbt'} ran; it was stopped", file=sys.stderr)
            return 1
        status = int(done["status"])
        if status < 0:  # the worker died of a signal: so does its stand-in, as one process would
            _die_of(-status)
        return status if status >= 0 else 128 - status


class _Lines:
    """The server's replies, a line at a time, with nothing read ahead that a wait could miss."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn, self.pending = conn, b""

    def readline(self, wakeups: socket.socket | None = None) -> bytes:
        while b"\n" not in self.pending:
            if wakeups is not None:
                _wait_readable(self.conn, wakeups)
            chunk = self.conn.recv(4096)
            if not chunk:
                line, self.pending = self.pending, b""
                return line
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line + b"\n"


@contextlib.contextmanager
def _signal_wakeups():
    """A socket that gets a byte for each signal this process takes (signal.set_wakeup_fd), or None
    off the main thread. A signal that lands after Python last ran its handlers but before a
    blocking read starts (a Ctrl-C right after `fg`, while the Ctrl-Z handler returns) only sets a
    flag, and the read would not end for it: the worker would never hear of the interrupt. A
    wait on this socket too ends for it, and the handlers run before the next read."""
    wake_r, wake_w = socket.socketpair()
    try:
        wake_w.setblocking(False)
        try:
            previous = signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
        except ValueError:  # not the main thread: Python runs no handlers here
            yield None
            return
        try:
            yield wake_r
        finally:
            signal.set_wakeup_fd(previous)
    finally:
        wake_r.close()
        wake_w.close()


def _wait_readable(conn: socket.socket, wakeups: socket.socket) -> None:
    with selectors.DefaultSelector() as selector:
        selector.register(conn, selectors.EVENT_READ)
        selector.register(wakeups, selectors.EVENT_READ)
        while True:
            ready = {key.fileobj for key, _ in selector.select()}
            if wakeups in ready:
                wakeups.recv(4096)  # the signal's handler runs on the way back to select
            if conn in ready:
                return


def _stop_with(worker: int) -> None:
    """Ctrl-Z: the worker stops with its stand-in and goes on when the shell continues the stand-in
    (`fg`, `bg`). SIGSTOP, not SIGTSTP: the worker's process group is the server's, which no
    terminal controls, and Linux discards a SIGTSTP sent to such an orphaned group."""
    _signal_quietly(worker, signal.SIGSTOP)
    handler = signal.signal(signal.SIGTSTP, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTSTP)  # stopped here until SIGCONT
    signal.signal(signal.SIGTSTP, handler)
    _signal_quietly(worker, signal.SIGCONT)


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


def _start_server(cache: Path, address: str, kind: str = "dbt") -> None:
    """In the background, in its own session, holding none of this process's files or pipes; on
    the address this process worked out (the server's own sys.path differs from a script's). A
    `benchwh` server imports from where this process does."""
    env = {k: v for k, v in os.environ.items() if k != "BENCHWH_PARENT_PID"}
    args = [str(cache), address[1:]]
    if kind == "cli":
        env["PYTHONPATH"] = os.pathsep.join(_import_path())
        args.append(kind)
    with contextlib.suppress(OSError):
        subprocess.Popen([sys.executable, "-P", "-m", "cli.dbt_server", *args], env=env, cwd="/",
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)


# ---- the server ---------------------------------------------------------------------------------
def serve(cache: Path, address: str, kind: str = "dbt") -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address)
    except OSError:
        return  # another server for the same code started first
    if kind == "cli":
        _preload(_CLI_MODULES)
    else:
        from cli import dbt_guard

        dbt_guard.prepare_dbt(cache)  # imports dbt and patches it, as each benchwh-dbt run would
        _preload(_BUILD_MODULES)  # what a build imports after that
        from orchestration.dbt_state import PARSE_STATE, install_parse_state

        dbt_guard.write_manifest_serializers(install_parse_state() / PARSE_STATE)
        gc.collect()  # the manifest read for it, before the freeze below
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
                started = _accept(listener, selector, running, kind)
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


def _preload(modules: tuple[str, ...]) -> None:
    for module in modules:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


def _accept(listener: socket.socket, selector, running: dict, kind: str) -> tuple[int, int, socket.socket] | None:
    conn, _ = listener.accept()
    fds: list[int] = []
    try:
        conn.settimeout(10)
        uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        if uid != os.getuid():
            raise PermissionError("another user")
        msg, ancdata, _, _ = conn.recvmsg(4, socket.CMSG_SPACE(3 * 4))
        for level, message_type, data in ancdata:
            if level == socket.SOL_SOCKET and message_type == socket.SCM_RIGHTS:
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
            code = _run_worker(request, fds, conn, kind)
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    selector.register(pidfd, selectors.EVENT_READ, pid)
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return pidfd, pid, conn


def _run_worker(request: dict, fds: list[int], conn: socket.socket, kind: str) -> int:
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
    if kind == "cli":
        import types

        # as a console script's: multiprocessing's children re-import __main__ from its file
        main = types.ModuleType("__main__")
        main.__file__ = request["main_file"]
        sys.modules["__main__"] = main
        sys.argv = list(request["argv"])
    else:
        sys.argv = ["benchwh-dbt", *request["argv"]]
        sys.modules["__main__"].__package__ = None  # click names the program from argv[0], not `-m cli.dbt_server`
    try:
        if kind == "cli":
            from cli.main import run_here

            run_here()
        else:
            from cli import dbt_guard

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
    serve(Path(sys.argv[1]), "\0" + sys.argv[2], *sys.argv[3:4])
