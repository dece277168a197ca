"""`benchwh-dbt`: runs dbt so that it dies with the `benchwh` process that started it (issue #12).

A SIGKILL of a refresh used to leave dbt running as an orphan, still writing into build/ while
the next refresh cleaned that folder. This wrapper asks Linux to SIGKILL it when its parent dies
(prctl PR_SET_PDEATHSIG, kept across exec), records its pid beside the build file so that a
cleanup never deletes files a live dbt writes, then becomes dbt (exec: same pid). It runs dbt in
the warehouse home ($BENCHWH_HOME): the dbt project's paths are relative to it
(dbt_project/profiles.yml), which keeps dbt's parse the same for every home.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux: the pid file below still keeps cleanup away from a live dbt
    expected = os.environ.get("BENCHWH_PARENT_PID")
    if expected and os.getppid() != int(expected):
        os._exit(137)  # the parent died before prctl took effect


def enter_home() -> None:
    """dagster-dbt starts dbt in the project folder: keep it as the project, run in the home."""
    home = os.environ.get("BENCHWH_HOME")
    if home:
        os.environ.setdefault("DBT_PROJECT_DIR", os.getcwd())
        os.chdir(home)


def main() -> None:
    die_with_parent()
    enter_home()
    build = os.environ.get("BENCHWH_BUILD_PATH")
    if build:
        pid_file = Path(build + ".pid")
        pid_file.parent.mkdir(parents=True, exist_ok=True)
        pid_file.write_text(f"{os.getpid()}\n")
    dbt = str(Path(sys.executable).parent / "dbt")
    if not os.path.exists(dbt):
        dbt = "dbt"
    os.execvp(dbt, [dbt, *sys.argv[1:]])


if __name__ == "__main__":
    main()
