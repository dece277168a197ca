"""The warm dbt server `benchwh-dbt` forks its runs from (cli/dbt_server.py), with the real
benchwh-dbt script and each test's own server (its own process cache folder: part of the key)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers.paths import PROJECT_ROOT

BENCHWH_DBT = str(Path(sys.executable).parent / "benchwh-dbt")
BENCHWH = str(Path(sys.executable).parent / "benchwh")
PROJECT = PROJECT_ROOT / "dbt_project"


@pytest.fixture
def cache(tmp_path) -> Path:
    """A process cache folder of this test's own, and after the test no server left for it."""
    folder = tmp_path / "dbt-cache"
    yield folder
    for pid in server_pids(folder):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def warm_dbt(tmp_path_factory) -> Path:
    """One warm dbt server for the tests of how its workers take signals (each starting its own
    cost ~6 CPU-s: dbt run in a cold process, then the server's imports): its process cache
    folder, the server started again by a test that finds it gone."""
    folder = tmp_path_factory.mktemp("warm-dbt") / "dbt-cache"
    yield folder
    for pid in server_pids(folder):
        os.kill(pid, signal.SIGKILL)


def started(cache: Path, build: Path) -> Path:
    """`cache` with its warm dbt server listening (started by a first benchwh-dbt if none is)."""
    if not listening(address(cache)):
        # idle long enough to outlast a test that keeps it busy only now and then (killed at the end)
        benchwh_dbt(cache, "--help", build=build, BENCHWH_DBT_SERVER_IDLE="600")
        wait_for_server(cache)
    return cache


def env_for(cache: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHWH_")}
    return {**env, "BENCHWH_DBT_CACHE": str(cache), "BENCHWH_DBT_SERVER_IDLE": "60", **extra}


def benchwh_dbt(cache: Path, *args: str, build: Path, **extra: str) -> tuple[subprocess.CompletedProcess, bool]:
    """benchwh-dbt run to its end, and whether dbt ran in a process of its own (the pid file, written
    by the process that runs dbt, names another process than benchwh-dbt's)."""
    proc = subprocess.Popen([BENCHWH_DBT, *args], env=env_for(cache, BENCHWH_BUILD_PATH=str(build), **extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT)
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), _pid_in(build) != proc.pid


def _pid_in(build: Path) -> int | None:
    pid_file = Path(f"{build}.pid")
    return int(pid_file.read_text()) if pid_file.exists() else None


def server_pids(cache: Path, kind: str | None = None) -> list[int]:
    """Servers (and their workers: the same command line) for this folder; of one kind if given."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"cli.dbt_server" in cmdline and str(cache).encode() in cmdline and (
                    kind is None or (cmdline[-2] == b"cli") == (kind == "cli")):
                found.append(int(entry.name))
    return found


def address(cache: Path, kind: str = "dbt", cwd: Path = PROJECT_ROOT, **extra: str) -> str:
    """The server address a benchwh-dbt (or for kind "cli" a `python -c` running benchwh in `cwd`:
    its import path starts there) with this environment works out."""
    code = "from pathlib import Path; import sys; from cli.dbt_server import server_address;" \
           "sys.stdout.write(server_address(Path(sys.argv[1]), sys.argv[2])[1:])"
    done = subprocess.run([sys.executable, "-c", code, str(cache), kind], env=env_for(cache, **extra),
                          capture_output=True, text=True, check=True, cwd=cwd)
    return "\0" + done.stdout


def listening(where: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(where)
            return True
        except OSError:
            return False


def wait_for_server(cache: Path, kind: str = "dbt", timeout: float = 120, **at) -> None:
    where = address(cache, kind, **at)
    assert wait_until(lambda: listening(where), timeout), f"the warm {kind} server never listened"


def alive(pid: int) -> bool:
    from publish.verify import pid_alive

    return pid_alive(pid)


def wait_until(predicate, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_the_first_run_starts_the_server_and_the_next_ones_run_in_its_workers(cache, tmp_path):
    build = tmp_path / "b.duckdb"
    first, in_worker = benchwh_dbt(cache, "--help", build=build)
    assert first.returncode == 0 and not in_worker  # no server yet: dbt in benchwh-dbt's process
    assert "Usage: dbt" in first.stdout
    wait_for_server(cache)
    assert len(server_pids(cache)) == 1

    second, in_worker = benchwh_dbt(cache, "--help", build=build)
    assert second.returncode == 0 and in_worker
    assert second.stdout == first.stdout and second.stderr == first.stderr

    # dbt's exit status and its message on standard error pass through the worker
    for env in ({"BENCHWH_DBT_SERVER": "0"}, {}):
        failed, _ = benchwh_dbt(cache, "no-such-command", build=build, **env)
        assert failed.returncode == 2 and "No such command 'no-such-command'" in failed.stderr


def test_a_refresh_starts_the_dbt_server_before_its_build(cache, tmp_path):
    """A refresh starts the warm dbt server as it begins: by its build (here the refresh dies just
    before dbt starts, BENCHWH_FAULT=dbt-start) one is listening though no benchwh-dbt ran. With
    the switch off, none is started."""
    for switch, home in (("0", tmp_path / "off"), ("1", tmp_path / "on")):
        env = env_for(cache, BENCHWH_HOME=str(home), BENCHWH_FAULT="dbt-start", BENCHWH_CLI_SERVER="0",
                      BENCHWH_DBT_SERVER=switch)
        proc = subprocess.run([BENCHWH, "refresh", "--offline"], env=env, capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
        assert "dbt: building into" in proc.stdout + proc.stderr  # killed at the build, after landing
        assert not list((home / "logs").glob("dbt-*.log"))  # dbt never started
        if switch == "0":
            time.sleep(2)
            assert server_pids(cache) == [] and not listening(address(cache))
    wait_for_server(cache, timeout=60)
    assert len(server_pids(cache, "dbt")) == 1


def start_waiting_dbt(cache: Path, work: Path, sigint=signal.SIG_DFL, job: bool = False,
                      **extra: str) -> tuple[subprocess.Popen, int]:
    """`dbt init` waiting at its first prompt for a line this test never writes (it holds the pipe
    open: the run never ends by itself), its output to files (nothing breaks for a worker when
    benchwh-dbt is gone, as a pipe would); benchwh-dbt's process and the one running dbt.

    benchwh-dbt starts with SIGINT set to `sigint`, whatever this test process has (pytest-xdist's
    workers ignore SIGINT, and a child inherits that), SIGTERM and SIGHUP to their defaults (a CI
    started in the background may ignore them too). `job`: in a process group of its own, as a
    shell starts a job (Linux discards a SIGTSTP to a group with no parent in its session outside
    it, as this test's group is under a CI started in the background)."""
    work.mkdir()
    build, out, err = work / "b.duckdb", open(work / "out.txt", "w"), open(work / "err.txt", "w")
    proc = subprocess.Popen([BENCHWH_DBT, "init"], env=env_for(cache, BENCHWH_BUILD_PATH=str(build), **extra),
                            cwd=work, stdin=subprocess.PIPE, stdout=out, stderr=err,
                            preexec_fn=lambda: _start_signals(sigint), process_group=0 if job else None)
    out.close()
    err.close()
    asking = wait_until(lambda: "Enter a name for your project" in (work / "out.txt").read_text(), 120)
    assert asking, (work / "out.txt").read_text() + (work / "err.txt").read_text()
    return proc, _pid_in(build)


def _start_signals(sigint) -> None:
    signal.signal(signal.SIGINT, sigint)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    proc.stdin.close()


def test_a_killed_benchwh_dbt_takes_its_worker_with_it(warm_dbt, tmp_path):
    """Issue #12: nothing of dbt outlives the process that started it."""
    cache = started(warm_dbt, tmp_path / "warm.duckdb")
    proc, worker = start_waiting_dbt(cache, tmp_path / "run")
    try:
        assert worker != proc.pid and alive(worker)
        proc.kill()
        assert proc.wait(timeout=60) == -signal.SIGKILL
        assert wait_until(lambda: not alive(worker), 60), "the worker outlived benchwh-dbt"
    finally:
        stop(proc)
    assert server_pids(cache), "the server outlived its worker's end"


def test_an_interrupt_reaches_the_worker_and_ends_as_in_one_process(warm_dbt, tmp_path):
    cache = started(warm_dbt, tmp_path / "warm.duckdb")
    statuses = {}
    for name, extra in (("here", {"BENCHWH_DBT_SERVER": "0"}), ("worker", {})):
        proc, runner = start_waiting_dbt(cache, tmp_path / name, **extra)
        try:
            assert (runner != proc.pid) == (name == "worker")
            # Linux gives a process's SIGINT to any thread not blocking it; only the main thread
            # can end dbt's read (a worker's watcher thread blocks it)
            assert threads_taking(runner, signal.SIGINT) == [runner]
            proc.send_signal(signal.SIGINT)
            statuses[name] = proc.wait(timeout=60)
            assert wait_until(lambda: not alive(runner), 60)
        finally:
            stop(proc)
    assert statuses["worker"] == statuses["here"] > 0, statuses  # dbt's own status for the interrupt


def test_a_signal_the_caller_ignores_is_ignored_by_its_worker_as_in_one_process(warm_dbt, tmp_path):
    cache = started(warm_dbt, tmp_path / "warm.duckdb")
    for name, extra in (("here", {"BENCHWH_DBT_SERVER": "0"}), ("worker", {})):
        proc, runner = start_waiting_dbt(cache, tmp_path / name, sigint=signal.SIG_IGN, **extra)
        try:
            assert (runner != proc.pid) == (name == "worker")
            assert signal_mask(runner, "SigIgn") & (1 << (signal.SIGINT - 1)), name
            assert signal_mask(proc.pid, "SigIgn") & (1 << (signal.SIGINT - 1)), name
            # SIGTERM is not ignored: forwarded to the worker, it ends the run
            assert not signal_mask(runner, "SigIgn") & (1 << (signal.SIGTERM - 1)), name
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == -signal.SIGTERM, name  # the worker's end is its stand-in's
            assert wait_until(lambda: not alive(runner), 60)
        finally:
            stop(proc)


def test_ctrl_z_stops_the_worker_with_its_stand_in_and_fg_continues_both(warm_dbt, tmp_path):
    """A shell's Ctrl-Z and `fg` as on one process: the run stops and goes on, then ends as before."""
    cache = started(warm_dbt, tmp_path / "warm.duckdb")
    statuses = {}
    for name, extra in (("here", {"BENCHWH_DBT_SERVER": "0"}), ("worker", {})):
        proc, runner = start_waiting_dbt(cache, tmp_path / name, job=True, **extra)
        try:
            assert (runner != proc.pid) == (name == "worker")
            proc.send_signal(signal.SIGTSTP)
            assert wait_until(lambda: process_state(proc.pid) == process_state(runner) == "T", 30), name
            time.sleep(0.5)  # and stays stopped
            assert process_state(runner) == "T", name
            proc.send_signal(signal.SIGCONT)
            assert wait_until(lambda: "T" not in (process_state(proc.pid), process_state(runner)), 30), name
            proc.send_signal(signal.SIGINT)  # the same run, still waiting at its prompt
            statuses[name] = proc.wait(timeout=60)
            assert wait_until(lambda: not alive(runner), 60)
        finally:
            stop(proc)
    assert statuses["worker"] == statuses["here"] > 0, statuses


def test_an_interrupt_that_only_sets_pythons_flag_still_reaches_the_worker(warm_dbt, tmp_path):
    """A signal can land after the stand-in last ran its handlers and before its blocking wait
    starts (a Ctrl-C right after `fg`: the run then never ended). Sent to a second thread of the
    stand-in, it does the same every time: Python's flag is set, the main thread's wait goes on."""
    cache = started(warm_dbt, tmp_path / "warm.duckdb")
    work = tmp_path / "run"
    work.mkdir()
    stand_in = textwrap.dedent("""
        import signal, sys, threading, time
        from pathlib import Path
        from cli import dbt_server

        def interrupt_from_a_second_thread():
            while "Enter a name for your project" not in Path("out.txt").read_text():
                time.sleep(0.05)
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)

        threading.Thread(target=interrupt_from_a_second_thread, daemon=True).start()
        status = dbt_server.run_in_warm_worker(Path(sys.argv[1]), ["init"])
        sys.exit(99 if status is None else status)
    """)
    with open(work / "out.txt", "w") as out:
        proc = subprocess.Popen([sys.executable, "-c", stand_in, str(cache)], cwd=work, stdin=subprocess.PIPE,
                                stdout=out, stderr=subprocess.STDOUT, preexec_fn=lambda: _start_signals(signal.SIG_DFL),
                                env=env_for(cache, BENCHWH_BUILD_PATH=str(work / "b.duckdb")))
    try:
        status = proc.wait(timeout=60)
    finally:
        stop(proc)
    runner = _pid_in(work / "b.duckdb")
    assert runner != proc.pid and status not in (0, 99), (work / "out.txt").read_text()
    assert "Abort" in (work / "out.txt").read_text()  # dbt's own end for the interrupt, in the worker
    assert wait_until(lambda: not alive(runner), 60)


def process_state(pid: int) -> str:
    """/proc's one-letter state of `pid` (T: stopped by a signal); "" once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2]


@pytest.mark.skipif(os.getuid() != 0, reason="connecting as another user needs root")
def test_the_server_serves_only_its_own_user(warm_dbt, tmp_path):
    """A process of another user that reaches the socket gets no worker (SO_PEERCRED): its
    request is refused before a fork, and the caller would run dbt itself."""
    cache = started(warm_dbt, tmp_path / "warm.duckdb")
    # imports first, then the user: another user cannot read this interpreter's files
    code = textwrap.dedent("""
        import os, sys
        from pathlib import Path
        import cli.dbt_server as server
        where = "\\0" + sys.argv[1]
        server.server_address = lambda cache, kind="dbt": where
        server._start_server = lambda *args: None
        if sys.argv[2] != "root":
            os.setgid(65534)
            os.setuid(65534)
        status = server.run_in_warm_worker(Path(sys.argv[3]), ["--help"])
        print("status", status, file=sys.stderr)
    """)
    outcome = {}
    for user in ("root", "nobody"):
        done = subprocess.run([sys.executable, "-c", code, address(cache)[1:], user, str(cache)], cwd=PROJECT_ROOT,
                              env=env_for(cache, BENCHWH_BUILD_PATH=str(tmp_path / f"{user}.duckdb")),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        outcome[user] = (done.stderr.strip().splitlines()[-1], "Usage: dbt" in done.stdout)
    assert outcome == {"root": ("status 0", True), "nobody": ("status None", False)}


def test_the_server_writes_the_manifests_serializers_before_it_forks(cache):
    """dbt's (de)serializers are written on first call (lazy compilation), in each run otherwise:
    the server reads the install's parse state and writes manifest.json's dict once (what a
    build's reading and writing of the manifest would write), before any worker is forked."""
    code = textwrap.dedent("""
        import json, sys
        from pathlib import Path
        from cli import dbt_guard, dbt_server

        def written(cls, name):  # a lazy method is a stub that calls mashumaro's CodeBuilder
            return "CodeBuilder" not in getattr(getattr(cls, name), "__func__", getattr(cls, name)).__code__.co_names

        seen = {}
        def recorded(parse_state):
            from dbt.artifacts.schemas.manifest import WritableManifest
            from dbt.contracts.graph.manifest import Manifest
            methods = [(Manifest, "from_msgpack"), (WritableManifest, "to_dict")]
            seen.update(path=str(parse_state), before=[written(c, n) for c, n in methods])
            seen["result"] = original(parse_state)
            seen["after"] = [written(c, n) for c, n in methods]
            return seen["result"]
        original, dbt_guard.write_manifest_serializers = dbt_guard.write_manifest_serializers, recorded
        dbt_server.serve(Path(sys.argv[1]), "\\0" + sys.argv[2], "dbt")  # no worker: it idles out
        print(json.dumps(seen))
    """)
    done = subprocess.run([sys.executable, "-c", code, str(cache), address(cache)[1:] + "-test"], cwd=PROJECT_ROOT,
                          env=env_for(cache, BENCHWH_DBT_SERVER_IDLE="1"), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert seen == {"path": str(PROJECT / "target" / "partial_parse.msgpack"), "result": True,
                    "before": [False, False], "after": [True, True]}


def signal_mask(pid: int, field: str) -> int:
    """One of /proc's signal masks of `pid` (SigIgn: ignored, SigCgt: caught)."""
    line = next(l for l in Path(f"/proc/{pid}/status").read_text().splitlines() if l.startswith(f"{field}:"))
    return int(line.split()[1], 16)


def threads_taking(pid: int, sig: int) -> list[int]:
    """The threads of `pid` that do not block `sig` (/proc's SigBlk mask)."""
    taking = []
    for task in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda t: int(t.name)):
        blocked = next(int(l.split()[1], 16) for l in (task / "status").read_text().splitlines()
                       if l.startswith("SigBlk:"))
        if not blocked & (1 << (sig - 1)):
            taking.append(int(task.name))
    return taking


def test_off_runs_dbt_here_and_starts_no_server(cache, tmp_path):
    build = tmp_path / "b.duckdb"
    proc = subprocess.Popen([BENCHWH_DBT, "--help"], cwd=PROJECT, stdout=subprocess.DEVNULL,
                            env=env_for(cache, BENCHWH_BUILD_PATH=str(build), BENCHWH_DBT_SERVER="0"))
    assert proc.wait(timeout=120) == 0 and _pid_in(build) == proc.pid
    time.sleep(2)
    assert server_pids(cache) == []


def test_an_idle_server_exits(cache):
    """Started as benchwh-dbt starts it; it listens, then exits after its idle time with no run."""
    where = address(cache)
    server = subprocess.Popen([sys.executable, "-P", "-m", "cli.dbt_server", str(cache), where[1:]],
                              env=env_for(cache, BENCHWH_DBT_SERVER_IDLE="5"), cwd="/")
    try:
        wait_for_server(cache)
        assert server.wait(timeout=120) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe, pytest.raises(ConnectionRefusedError):
        probe.connect(where)


def test_a_run_that_finds_the_server_starting_waits_for_it_and_runs_in_its_worker(cache, tmp_path):
    """As a refresh's build finds the server its refresh started a moment before: bound, still
    importing dbt. The run waits for it rather than import dbt beside it, and starts no other."""
    from cli.dbt_server import _starting

    where = address(cache)
    server = subprocess.Popen([sys.executable, "-P", "-m", "cli.dbt_server", str(cache), where[1:]],
                              env=env_for(cache), cwd="/")
    try:
        assert wait_until(lambda: _starting(where) or listening(where), 60)
        assert not listening(where), "the server listened before it was seen starting"
        build = tmp_path / "b.duckdb"
        proc, in_worker = benchwh_dbt(cache, "--help", build=build)
        assert proc.returncode == 0 and "Usage: dbt" in proc.stdout
        assert in_worker and server.poll() is None
        assert server_pids(cache) == [server.pid]  # no second server was started
    finally:
        server.kill()
        server.wait()


def test_a_bound_socket_is_a_starting_server_until_it_listens():
    from cli.dbt_server import _starting

    where = f"\0benchwh-test-starting-{os.getpid()}"
    assert not _starting(where)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as bound:
        bound.bind(where)
        assert _starting(where) and not listening(where)
        bound.listen(1)
        assert not _starting(where) and listening(where)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(where)
            accepted, _ = bound.accept()
            with accepted:
                assert not _starting(where)
    assert not _starting(where)  # gone with its socket


def test_the_address_names_the_code_a_worker_would_run(tmp_path):
    one, other = tmp_path / "a", tmp_path / "b"
    assert address(one) == address(one) != address(other)
    # read at interpreter start
    assert address(one, PYTHONHASHSEED="7") != address(one)
    assert address(one, LC_ALL="C") != address(one, LC_ALL="C.UTF-8")
    # set by dagster-dbt for its dbt: the worker sets up its streams from the request instead
    assert address(one, PYTHONUNBUFFERED="1", PYTHONLEGACYWINDOWSSTDIO="1") == address(one)


def test_an_idle_time_that_is_no_positive_number_is_the_default(monkeypatch):
    from cli.dbt_server import IDLE_S_DEFAULT, idle_seconds

    for text, seconds in (("5", 5.0), ("2.5", 2.5), ("abc", IDLE_S_DEFAULT), ("0", IDLE_S_DEFAULT),
                          ("-3", IDLE_S_DEFAULT), ("", IDLE_S_DEFAULT)):
        monkeypatch.setenv("BENCHWH_DBT_SERVER_IDLE", text)
        assert idle_seconds() == seconds, text


# ---- the same server for `benchwh` itself (kind "cli") --------------------------------------------
def benchwh_here_or_in_worker(cache: Path, home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    """`benchwh args` as the program runs it, printing on its last line whether a warm server's
    worker ran the command (cli.main._run_in_warm_worker gave its status) or this process did."""
    code = textwrap.dedent("""
        import sys
        from cli import main
        sys.argv = ["benchwh", *sys.argv[1:]]
        status = main._run_in_warm_worker()
        if status is None:
            try:
                main.run_here()
            except SystemExit as done:
                status = done.code
            where = "here"
        else:
            where = "worker"
        sys.stdout.flush()
        print("ran", where)
        sys.exit(status)
    """)
    return subprocess.run([sys.executable, "-c", code, *args], env=env_for(cache, BENCHWH_HOME=str(home), **extra),
                          capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT)


def test_benchwh_commands_run_in_a_worker_of_the_warm_server_with_the_same_output(cache, tmp_path):
    home = tmp_path / "home"
    first = benchwh_here_or_in_worker(cache, home, "rollback", "no-such-version")
    assert first.stdout.endswith("ran here\n")  # no server yet: one is started for the next command
    wait_for_server(cache, "cli")

    second = benchwh_here_or_in_worker(cache, home, "rollback", "no-such-version")
    assert second.stdout.endswith("ran worker\n")
    # the command's exit code and its one line on standard error, as in its own process
    assert (second.returncode, second.stderr) == (first.returncode, first.stderr) == (
        2, "benchwh: no published versions in history/ to roll back to\n")
    off = benchwh_here_or_in_worker(cache, home, "rollback", "no-such-version", BENCHWH_CLI_SERVER="0")
    assert off.stdout.endswith("ran here\n") and off.stderr == first.stderr

    # the real program: a usage mistake and a command with output, through the worker
    env = env_for(cache, BENCHWH_HOME=str(home))
    usage = subprocess.run([BENCHWH, "no-such-command"], env=env, capture_output=True, text=True)
    assert usage.returncode == 2 and "invalid choice: 'no-such-command'" in usage.stderr
    listed = subprocess.run([BENCHWH, "sources", "list"], env=env, capture_output=True, text=True)
    assert listed.returncode == 0 and "localscore" in listed.stdout, listed.stderr


def test_dev_and_the_switch_keep_the_command_in_its_own_process(cache, tmp_path):
    home = tmp_path / "home"
    benchwh_here_or_in_worker(cache, home, "status")
    wait_for_server(cache, "cli")
    # the program run from anywhere is one server (its import path names no working folder)
    env = env_for(cache, BENCHWH_HOME=str(home))
    assert subprocess.run([BENCHWH, "status"], env=env, cwd=tmp_path, capture_output=True).returncode == 0
    wait_for_server(cache, "cli", cwd=Path(BENCHWH).parent)  # its import path starts at its folder
    servers = server_pids(cache, "cli")
    assert subprocess.run([BENCHWH, "status"], env=env, cwd="/", capture_output=True).returncode == 0
    assert server_pids(cache, "cli") == servers  # a worker of that server ran it: no other server started
    # `dev` runs for hours and owns its process group: never a worker's (--help: it stops at once)
    dev = benchwh_here_or_in_worker(cache, home, "dev", "--help")
    assert dev.returncode == 0 and dev.stdout.endswith("ran here\n")
    off = benchwh_here_or_in_worker(cache, home, "status", BENCHWH_CLI_SERVER="0")
    assert off.returncode == 0 and off.stdout.endswith("ran here\n")


def test_the_benchwh_address_names_the_import_path(tmp_path):
    cache = tmp_path / "cache"
    assert address(cache, "cli") == address(cache, "cli") != address(cache)  # a server of its own kind
    # `python -m cli.main` imports from where it runs: another folder, another server
    (tmp_path / "elsewhere").mkdir()
    assert address(cache, "cli", cwd=tmp_path / "elsewhere") != address(cache, "cli")
