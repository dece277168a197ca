"""ingest/files.py: a file is written whole or not at all, and a write that fails leaves nothing."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ingest.files import tmp_name, write_atomically
from publish.verify import _TMP_PID
from tests.helpers.paths import PROJECT_ROOT


@pytest.mark.parametrize("durable", [False, True])
def test_a_write_replaces_the_file_whole_and_leaves_no_temporary(tmp_path, durable):
    final = tmp_path / "a" / "b" / "index.json"  # folders made as needed
    write_atomically(final, b"old", durable=durable)
    write_atomically(final, "new \u00e9\n", durable=durable)  # str: UTF-8
    assert final.read_bytes() == "new \u00e9\n".encode("utf-8")
    assert sorted(p.name for p in final.parent.iterdir()) == ["index.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(tmp_path):
    final = tmp_path / "index.json"
    write_atomically(final, b"good")

    with pytest.raises(TypeError):
        write_atomically(final, ["not", "bytes"])  # type: ignore[arg-type]  # fails after the temporary is open
    assert final.read_bytes() == b"good"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.json"]


def test_a_full_disk_keeps_the_old_file_and_removes_its_temporary(tmp_path):
    """A real ENOSPC: a 64 KiB tmpfs, written by a child process in its own mount namespace."""
    if os.getuid() != 0 or not os.path.exists("/usr/bin/unshare"):
        pytest.skip("a tmpfs mount needs root and unshare")
    code = (
        "import os, sys; from pathlib import Path; from ingest.files import write_atomically\n"
        "d = Path(sys.argv[1]); final = d / 'index.json'; write_atomically(final, b'good')\n"
        "try:\n    write_atomically(final, b'x' * (1 << 20))\nexcept OSError as e:\n    print('errno', e.errno)\n"
        "print(final.read_bytes().decode(), sorted(os.listdir(d)))\n")
    mount_then_run = 'mount -t tmpfs -o size=64k tmpfs "$1" && exec "$2" -c "$3" "$1"'
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(["unshare", "-m", "sh", "-c", mount_then_run,
                           "sh", str(mnt), sys.executable, code], capture_output=True, text=True, timeout=60,
                          cwd=PROJECT_ROOT)
    if done.returncode != 0 and "mount" in done.stderr:
        pytest.skip(f"no tmpfs here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["errno 28", "good ['index.json']"]


def test_the_temporary_name_is_one_the_sweep_knows(tmp_path):
    tmp = tmp_name(tmp_path / "trusted_keys.json")
    assert tmp.parent == tmp_path and tmp.name.startswith(".trusted_keys.json")
    assert int(_TMP_PID.search(tmp.name).group(1)) == os.getpid()
