"""`benchwh-dbt`: the stock `dbt`, tied to the lifetime of the process that started it.

dagster-dbt starts dbt as a child process. If `benchwh refresh` is killed hard, a plain dbt child
would run on and keep writing build/building.duckdb. This asks Linux to SIGKILL it when its parent
dies (PR_SET_PDEATHSIG, kept across exec), then replaces itself with dbt: nothing else stands
between Dagster and dbt. Elsewhere than Linux it is plain dbt.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
from pathlib import Path

PR_SET_PDEATHSIG = 1


def make_build_folder() -> None:
    """dbt-duckdb opens the profile's build file but does not make its folder: make it when the
    home is named and exists (a new home has no build/ yet)."""
    if os.environ.get("BENCHWH_BUILD_PATH"):
        folder = Path(os.environ["BENCHWH_BUILD_PATH"]).parent
    elif os.environ.get("BENCHWH_HOME"):
        folder = Path(os.environ["BENCHWH_HOME"]) / "build"
    else:
        return
    if folder.parent.is_dir():
        folder.mkdir(mode=0o750, exist_ok=True)


def main() -> None:
    make_build_folder()
    parent = os.environ.get("BENCHWH_PARENT_PID")
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        # the parent may have died before the request took effect: then nobody waits for this dbt
        if parent and os.getppid() != int(parent):
            sys.exit("benchwh-dbt: the process that started dbt has exited")
    dbt = Path(sys.executable).parent / "dbt"
    os.execv(dbt, [str(dbt), *sys.argv[1:]])


if __name__ == "__main__":
    main()
