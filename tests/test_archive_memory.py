"""Issue #53 item 4: a tar (tar.gz) whose GNU long-name or pax header declares a huge size is
refused without tarfile allocating what it declares, and any archive under the caps is read
in under 300 MB. Real archives, built here; each is collected (as the inbox and `runs add` do)
in a child process whose peak resident memory (VmHWM) is the measure."""
from __future__ import annotations

import gzip
import io
import json
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from ingest.sources.runs.files import MAX_FILE_BYTES, MAX_TOTAL_BYTES

MB = 1024 * 1024
PEAK_LIMIT_MB = 300

CHILD = r"""
import json, sys
from pathlib import Path
from ingest.sources.runs.files import collect

got = list(collect([Path(sys.argv[1])]))
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"peak_mb": peak_kb / 1024, "reasons": [r.reason for r in got if r.reason],
                  "members": [(r.name, len(r.body)) for r in got if r.body is not None]}))
"""


def collect_in_child(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True,
                         timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def tar_header(name: bytes, size: int, kind: bytes) -> bytes:
    """One ustar/GNU header block, written by hand: tarfile will not write a lying size."""
    block = bytearray(512)
    block[0:len(name)] = name
    block[100:108] = b"0000644\0"
    block[108:116] = b"0000000\0"
    block[116:124] = b"0000000\0"
    block[124:136] = b"%011o\0" % size
    block[136:148] = b"00000000000\0"
    block[156:157] = kind
    block[257:265] = b"ustar  \0"
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def gzip_of_zeros(n_mib: int) -> bytes:
    """n MiB of zeros as a gzip of n members (a valid stream: readers join members), cheap to build."""
    return gzip.compress(bytes(MB), 9) * n_mib


def lying_header_archive(kind: bytes, declared_mib: int, present_mib: int) -> bytes:
    """A tar.gz whose first header (GNU long name 'L' or pax 'x') declares `declared_mib` MiB
    and is followed by `present_mib` MiB of zeros, then one small regular member."""
    member = json.dumps({"hello": 1}).encode()
    tail = (tar_header(b"run.json", len(member), b"0") + member.ljust(512, b"\0") + bytes(1024))
    return (gzip.compress(tar_header(b"././@LongLink", declared_mib * MB, kind))
            + gzip_of_zeros(present_mib) + gzip.compress(tail))


@pytest.mark.parametrize("kind", [b"L", b"x"], ids=["gnu-long-name", "pax"])
def test_huge_declared_header_is_refused_within_memory(tmp_path, kind):
    # 400 MiB of header data: tarfile read it whole (400+ MB resident) before any check
    body = lying_header_archive(kind, declared_mib=400, present_mib=400)
    assert len(body) < MAX_FILE_BYTES  # a small file, under the file cap
    path = tmp_path / "runs.tar.gz"
    path.write_bytes(body)
    result = collect_in_child(path)
    assert result["members"] == []
    assert result["reasons"] == [f"archive expands beyond {MAX_TOTAL_BYTES // MB} MB"]
    assert result["peak_mb"] < PEAK_LIMIT_MB, result


@pytest.mark.parametrize("kind", [b"L", b"x"], ids=["gnu-long-name", "pax"])
def test_header_larger_than_any_real_one_is_refused(tmp_path, kind):
    # within the archive's size cap, but no path or attribute list is 20 MiB long
    path = tmp_path / "runs.tgz"
    path.write_bytes(lying_header_archive(kind, declared_mib=20, present_mib=20))
    result = collect_in_child(path)
    assert result["members"] == []
    assert len(result["reasons"]) == 1 and "header declares 20971520 bytes (cap 65536)" in result["reasons"][0]
    assert result["peak_mb"] < PEAK_LIMIT_MB, result


def test_archive_at_the_caps_is_read_within_memory(tmp_path):
    # ten members of 9.5 MiB (95 MiB in all, under the 100 MB total and 10 MB member caps) of
    # text that compresses about 20:1, so the archive is under the 10 MB file cap
    rng = random.Random(53)
    block = " ".join(rng.choice(("aaaa", "bbbb")) for _ in range(MB // 4)).encode()[:MB]
    data = block * 9 + block[:MB // 2]  # copies a MiB apart: deflate's window sees none of them
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tf:
        for i in range(10):
            # a long name: tarfile writes it as a GNU long-name header (pax with format=PAX_FORMAT)
            info = tarfile.TarInfo(f"runs/{'deep/' * 20}run-{i:02d}-{'x' * 120}.txt")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    body = buf.getvalue()
    assert len(body) < MAX_FILE_BYTES, len(body)
    path = tmp_path / "runs.tar.gz"
    path.write_bytes(body)
    result = collect_in_child(path)
    assert result["reasons"] == []
    assert len(result["members"]) == 10
    assert all(size == int(9.5 * MB) for _name, size in result["members"])
    assert result["peak_mb"] < PEAK_LIMIT_MB, result
