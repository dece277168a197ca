"""What the command-line processes cost beyond their work: the garbage collector (cli/collector.py)
and the imports every command pays for.

Each case runs in a new interpreter: a frozen object stays frozen for the life of its process.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

from tests.helpers.paths import PROJECT_ROOT


def python(code: str, *, cwd: Path = PROJECT_ROOT, **env: str) -> subprocess.CompletedProcess:
    """`code` in a new interpreter, with no BENCHWH_ setting but those given."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BENCHWH_")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env={**clean, **env},
                          capture_output=True, text=True, timeout=120)


def test_benchwh_dbt_freezes_dbts_loaded_project_before_the_nodes_run():
    proc = python("""
        import gc, threading
        from dbt.task.runnable import GraphRunnableTask
        from cli.dbt_guard import freeze_the_loaded_project

        def execute_nodes(self):
            return gc.get_freeze_count(), threading.active_count()

        GraphRunnableTask.execute_nodes = execute_nodes
        print(gc.get_freeze_count(), freeze_the_loaded_project(), freeze_the_loaded_project())
        frozen, threads = GraphRunnableTask.execute_nodes(None)
        print(frozen > 100_000, threads)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "True", "True", "True", "1"]  # dbt's imports alone are >100k objects


def test_the_exit_keeps_its_code_atexit_handlers_and_unclosed_files(tmp_path):
    proc = python(f"""
        import atexit, sys
        from cli.collector import exit_without_collecting

        atexit.register(lambda: open({str(tmp_path / "atexit")!r}, "w").write("ran"))
        unclosed = open({str(tmp_path / "unclosed")!r}, "w")
        unclosed.write("all of it")
        sys.stdout.write("buffered")
        exit_without_collecting(3)
    """)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "buffered"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "unclosed").read_text() == "all of it"


def test_benchwh_exits_through_it_and_main_alone_does_not(tmp_path, monkeypatch):
    scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    assert scripts["benchwh"] == "cli.main:run"
    assert scripts["benchwh-dbt"] == "cli.dbt_guard:main"
    proc = python("""
        import atexit, gc, sys
        atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))
        sys.argv = ["benchwh", "rollback", "no-such-version"]
        from cli.main import run
        run()
    """, BENCHWH_HOME=str(tmp_path / "home"), BENCHWH_CLI_SERVER="0")  # here, not in a warm server's worker
    assert proc.returncode == 2, proc.stderr  # the command's own code: a usage mistake
    assert "frozen at exit: True" in proc.stdout

    from cli.main import main

    monkeypatch.setenv("BENCHWH_HOME", str(tmp_path / "home"))
    before = gc.get_freeze_count()
    assert main(["rollback", "no-such-version"]) == 2  # as tests call it, in their own process
    assert gc.get_freeze_count() == before


def test_benchwh_dbt_freezes_with_no_collector_callback_and_exits_with_dbts_code(tmp_path):
    """No `gc.callbacks` in dbt's process: Python run inside a collection lets dbt's threads
    interleave in CPython 3.11's AST construction (cli/collector.py)."""
    proc = python("""
        import atexit, gc, sys
        def report():
            from mashumaro.jsonschema.models import JSONSchema
            print("callbacks:", len(gc.callbacks), "frozen at exit:", gc.get_freeze_count() > 0,
                  "orjson serializers written:", any("_dict_json" in name for name in vars(JSONSchema)))
        atexit.register(report)
        sys.argv = ["benchwh-dbt", "--help"]  # not --version: that one asks PyPI for dbt's latest
        from cli.dbt_guard import main
        main()
    """, cwd=tmp_path, BENCHWH_DBT_SERVER="0")  # dbt in this process, not a warm server's worker
    assert proc.returncode == 0, proc.stderr
    # and mashumaro wrote no serializer at dbt's import (compile_serializers_lazily)
    assert "callbacks: 0 frozen at exit: True orjson serializers written: False" in proc.stdout
    assert "Usage: dbt" in proc.stdout  # dbt --help ran

    failed = python("""
        import sys
        sys.argv = ["benchwh-dbt", "no-such-command"]
        from cli.dbt_guard import main
        main()
    """, cwd=tmp_path, BENCHWH_DBT_SERVER="0")
    assert failed.returncode == 2, failed.stdout + failed.stderr  # click's usage error, as dbt's own CLI


def test_a_refresh_loads_the_pipeline_with_the_collector_paused_then_frozen(tmp_path):
    """The program loads Dagster, the definitions and the dbt manifest in `collector.loading()`:
    no collection inside, what it loaded frozen after (the refresh is stopped there)."""
    proc = python("""
        import gc, sys
        from contextlib import contextmanager
        from cli import collector

        real_loading = collector.loading

        @contextmanager
        def watched():
            with real_loading():
                yield
                print("paused:", not gc.isenabled(), "definitions:", "orchestration.definitions" in sys.modules)
            print("frozen after:", gc.get_freeze_count() > 100_000, "collecting again:", gc.isenabled())
            raise SystemExit(7)

        collector.loading = watched
        sys.argv = ["benchwh", "refresh", "--no-fetch"]
        from cli.main import run
        run()
    """, BENCHWH_HOME=str(tmp_path / "home"), BENCHWH_CLI_SERVER="0")  # here, not in a warm server's worker
    assert proc.returncode == 7, proc.stderr
    assert "paused: True definitions: True" in proc.stdout
    assert "frozen after: True collecting again: True" in proc.stdout


def test_loading_pauses_the_collector_and_freezes_only_in_the_program():
    from cli import collector

    before = gc.get_freeze_count()
    with collector.loading():
        assert not gc.isenabled()
        kept = [[] for _ in range(1000)]
    assert gc.isenabled() and gc.get_freeze_count() == before  # as tests call main(): nothing frozen
    gc.disable()
    try:
        with collector.loading():
            pass
        assert not gc.isenabled()  # left as it was
    finally:
        gc.enable()
    proc = python("""
        import gc
        from cli import collector
        collector.freeze_what_loads = True
        with collector.loading():
            kept = [[] for _ in range(1000)]
        print(gc.get_freeze_count() >= 1000, gc.isenabled())
    """)
    assert proc.stdout.split() == ["True", "True"], proc.stderr
    assert kept


def test_the_command_line_parser_loads_no_command_s_libraries():
    """Every `benchwh` command builds the whole parser first: it must not import what only one
    command uses (the measuring client's requests and pandas, Dagster, dbt)."""
    proc = python("""
        import sys
        from cli.main import build_parser
        build_parser().parse_args(["status"])
        print(sorted(m for m in ("pandas", "requests", "dagster", "dbt", "duckdb") if m in sys.modules))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
