"""Collecting received files safely: plain files, folders and .zip / .tar.gz archives.

Hostile input (DESIGN §6) is refused before anything is parsed: files above the size cap, links,
devices and FIFOs (never opened: a FIFO would block), archives with too many members, too many
uncompressed bytes, a suspicious compression ratio, `..` or absolute member paths, link or
device members, or archives nested in archives. Archive members are extracted only into a
temporary folder that is removed afterwards; nothing is ever written outside it.
"""
from __future__ import annotations

import os
import stat
import tarfile
import tempfile
import zipfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_MEMBERS = 1000
MAX_TOTAL_BYTES = 100 * 1024 * 1024
MAX_RATIO = 200.0
SIDECAR_SUFFIX = ".meta.json"
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")


@dataclass
class Received:
    """One file to consider: its display name, bytes (None when refused) and sidecar bytes."""

    name: str
    body: bytes | None = None
    sidecar: bytes | None = None
    reason: str | None = None  # set when refused before parsing
    check: str | None = None
    path: Path | None = None  # the file on disk, for the inbox (None for archive members)


class Refused(Exception):
    def __init__(self, reason: str, check: str):
        super().__init__(reason)
        self.reason, self.check = reason, check


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def is_sidecar(name: str) -> bool:
    return name.lower().endswith(SIDECAR_SUFFIX)


def read_capped(path: Path, cap: int = MAX_FILE_BYTES) -> bytes:
    """Read a regular file, refusing links, devices and anything above the cap."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise Refused("no such file", "not_found") from None
    except OSError as exc:
        raise Refused(f"cannot read ({exc.strerror})", "unreadable") from None
    if stat.S_ISLNK(st.st_mode):
        raise Refused("is a symbolic link (links are refused)", "link")
    if not stat.S_ISREG(st.st_mode):
        raise Refused("not a regular file (devices, FIFOs and sockets are refused)", "not_regular")
    if st.st_size > cap:
        raise Refused(f"larger than the {cap // (1024 * 1024)} MB cap ({st.st_size} bytes)", "too_large")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise Refused(f"cannot read ({exc.strerror})", "unreadable") from None
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise Refused(f"larger than the {cap // (1024 * 1024)} MB cap", "too_large")
    return data


def collect(paths: list[Path], cap: int = MAX_FILE_BYTES) -> Iterator[Received]:
    """Yield every file to consider, in a stable order (folders sorted, recursively)."""
    for path in paths:
        path = Path(path)
        try:
            st = os.lstat(path)
        except OSError:
            yield Received(str(path), reason="no such file or folder", check="not_found", path=path)
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from _folder(path, cap)
        else:
            yield from _one(path, path.name, cap)


def _folder(folder: Path, cap: int) -> Iterator[Received]:
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(root, d)))
        for name in sorted(files):
            if name.startswith(".") or is_sidecar(name) or name.endswith(".reason"):
                continue
            path = Path(root) / name
            yield from _one(path, str(path.relative_to(folder.parent)), cap)


def _sidecar_for(path: Path) -> bytes | None:
    side = path.with_name(path.name + SIDECAR_SUFFIX)
    if not os.path.lexists(side):
        return None
    return read_capped(side, 1024 * 1024)


def _one(path: Path, name: str, cap: int) -> Iterator[Received]:
    if is_sidecar(path.name):
        return
    try:
        body = read_capped(path, cap)
        sidecar = _sidecar_for(path)
    except Refused as exc:
        yield Received(name, reason=exc.reason, check=exc.check, path=path)
        return
    if is_archive(path.name):
        try:
            members = list(extract_archive(body, path.name, cap))
        except Refused as exc:
            yield Received(name, reason=exc.reason, check=exc.check, path=path)
            return
        for member_name, member_body, member_side in members:
            yield Received(f"{name}!{member_name}", member_body, member_side)
        return
    yield Received(name, body, sidecar, path=path)


def _check_member_name(name: str) -> str:
    if "\x00" in name:
        raise Refused("archive member name contains NUL", "archive_bad_name")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise Refused(f"archive member {name[:80]!r} has an absolute path", "archive_absolute_path")
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if ".." in parts:
        raise Refused(f"archive member {name[:80]!r} climbs out with '..'", "archive_path_traversal")
    if not parts:
        raise Refused("archive member with an empty name", "archive_bad_name")
    return "/".join(p for p in parts if p not in (".", ""))


def extract_archive(body: bytes, name: str, cap: int = MAX_FILE_BYTES) -> Iterator[tuple[str, bytes, bytes | None]]:
    """Check then extract an archive into a temporary folder; yield (member, bytes, sidecar)."""
    lower = name.lower()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="benchwh-archive-")))
        if lower.endswith(".zip"):
            names = _extract_zip(body, tmp, cap)
        else:
            names = _extract_tar(body, tmp, cap)
        results = []
        for member in names:
            if is_sidecar(member):
                continue
            target = tmp / member
            side = tmp / (member + SIDECAR_SUFFIX)
            results.append((member, target.read_bytes(), side.read_bytes() if side.exists() else None))
    yield from results


def _safe_target(tmp: Path, member: str) -> Path:
    target = (tmp / member).resolve()
    if not str(target).startswith(str(tmp.resolve()) + os.sep):
        raise Refused(f"archive member {member[:80]!r} would land outside the extraction folder",
                      "archive_path_traversal")
    return target


def _account(total: int, size: int, member: str, cap: int) -> int:
    if size > cap:
        raise Refused(f"archive member {member[:80]!r} is larger than the {cap // (1024 * 1024)} MB cap",
                      "archive_member_too_large")
    total += size
    if total > MAX_TOTAL_BYTES:
        raise Refused(f"archive expands beyond {MAX_TOTAL_BYTES // (1024 * 1024)} MB", "archive_too_large")
    return total


def _extract_zip(body: bytes, tmp: Path, cap: int) -> list[str]:
    import io
    try:
        zf = zipfile.ZipFile(io.BytesIO(body))
        infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError):
        raise Refused("not a readable zip archive", "archive_corrupt") from None
    if len(infos) > MAX_MEMBERS:
        raise Refused(f"archive has {len(infos)} members (cap {MAX_MEMBERS})", "archive_too_many_members")
    declared = sum(i.file_size for i in infos)
    if declared > MAX_TOTAL_BYTES:
        raise Refused(f"archive expands beyond {MAX_TOTAL_BYTES // (1024 * 1024)} MB", "archive_too_large")
    if declared > 1024 * 1024 and declared / max(1, len(body)) > MAX_RATIO:
        raise Refused(f"archive compression ratio above {MAX_RATIO:g} (a zip bomb?)", "archive_ratio")
    names, total = [], 0
    for info in infos:
        ftype = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip was made without types
        member = _check_member_name(info.filename)
        if ftype == stat.S_IFLNK:
            raise Refused(f"archive member {member[:80]!r} is a link", "archive_link")
        if ftype and ftype not in (stat.S_IFREG, stat.S_IFDIR):
            raise Refused(f"archive member {member[:80]!r} is a device or special file", "archive_special")
        if info.is_dir():
            continue
        if is_archive(member):
            raise Refused(f"archive member {member[:80]!r} is itself an archive (not unpacked)", "archive_nested")
        if info.compress_size and info.file_size > 1024 * 1024 and info.file_size / info.compress_size > MAX_RATIO:
            raise Refused(f"archive member {member[:80]!r} compression ratio above {MAX_RATIO:g}", "archive_ratio")
        target = _safe_target(tmp, member)
        try:
            with zf.open(info) as fh:
                data = fh.read(cap + 1)  # the header may lie about the size: read with a cap
        except (zipfile.BadZipFile, RuntimeError, ValueError, EOFError, NotImplementedError, OSError) as exc:
            raise Refused(f"archive member {member[:80]!r} cannot be read ({exc.__class__.__name__})",
                          "archive_corrupt") from None
        total = _account(total, len(data), member, cap)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        names.append(member)
    if total > 1024 * 1024 and total / max(1, len(body)) > MAX_RATIO:
        raise Refused(f"archive compression ratio above {MAX_RATIO:g} (a zip bomb?)", "archive_ratio")
    return names


# A tar's GNU long-name/long-link and pax headers are read whole by tarfile before any of our
# checks, as much as their header declares (issue #53: a 1 MB tar.gz declaring 1 GB took 1.1 GB).
# Real ones hold a path or a few attributes.
MAX_TAR_META_BYTES = 64 * 1024
# the decompressed tar: every member under the total cap, plus a header and padding each
MAX_TAR_BYTES = MAX_TOTAL_BYTES + (MAX_MEMBERS + 2) * 2 * 512 + 2 * MAX_TAR_META_BYTES
_TAR_META_TYPES = {b"L": "GNU long name", b"K": "GNU long link", b"x": "pax", b"g": "pax global"}


def _decompressed_tar(body: bytes, tmp: Path):
    """The tar inside `body` (gzip, bzip2, xz or none) in a temporary file under `tmp`, decompressed
    a block at a time and refused past MAX_TAR_BYTES, so nothing is ever held whole in memory."""
    import bz2
    import gzip
    import io
    import lzma

    opener = {b"\x1f\x8b": lambda f: gzip.GzipFile(fileobj=f), b"BZh": bz2.BZ2File, b"\xfd7zXZ": lzma.LZMAFile}
    wrap = next((f for magic, f in opener.items() if body.startswith(magic)), None)
    out = tempfile.TemporaryFile(dir=tmp)
    try:
        if wrap is None:
            out.write(body)
        else:
            size = 0
            with wrap(io.BytesIO(body)) as stream:
                while block := stream.read(1024 * 1024):
                    size += len(block)
                    if size > MAX_TAR_BYTES:
                        raise Refused(f"archive expands beyond {MAX_TOTAL_BYTES // (1024 * 1024)} MB",
                                      "archive_too_large")
                    out.write(block)
    except (OSError, EOFError, lzma.LZMAError, ValueError):
        out.close()
        raise Refused("not a readable tar archive", "archive_corrupt") from None
    except BaseException:
        out.close()
        raise
    out.seek(0)
    _check_tar_headers(out)
    out.seek(0)
    return out


def _tar_size(field: bytes) -> int:
    """A tar header's size field: octal text, or base-256 when its first byte has the high bit."""
    if field[:1] and field[0] & 0x80:
        return int.from_bytes(field[1:], "big")
    text = field.split(b"\0", 1)[0].strip()
    try:
        return int(text, 8) if text else 0
    except ValueError:
        raise Refused("tar archive is corrupt (bad size field)", "archive_corrupt") from None


def _check_tar_headers(fh) -> None:
    """Walk the headers (512-byte blocks) before tarfile reads them: a long-name or pax header may
    declare at most MAX_TAR_META_BYTES."""
    while True:
        header = fh.read(512)
        if len(header) < 512 or header == bytes(512):
            return  # the end (tarfile reports a torn archive itself)
        size = _tar_size(header[124:136])
        kind = _TAR_META_TYPES.get(header[156:157])
        if kind and size > MAX_TAR_META_BYTES:
            raise Refused(f"tar {kind} header declares {size} bytes (cap {MAX_TAR_META_BYTES})",
                          "archive_bad_header")
        fh.seek(-(-size // 512) * 512, os.SEEK_CUR)


def _extract_tar(body: bytes, tmp: Path, cap: int) -> list[str]:
    names, total, count = [], 0, 0
    plain = _decompressed_tar(body, tmp)
    try:
        tf = tarfile.open(fileobj=plain, mode="r:")
    except (tarfile.TarError, EOFError, OSError):
        plain.close()
        raise Refused("not a readable tar archive", "archive_corrupt") from None
    try:
        while True:
            try:
                info = tf.next()
            except (tarfile.TarError, EOFError, OSError):
                raise Refused("tar archive is corrupt", "archive_corrupt") from None
            if info is None:
                break
            count += 1
            if count > MAX_MEMBERS:
                raise Refused(f"archive has more than {MAX_MEMBERS} members", "archive_too_many_members")
            member = _check_member_name(info.name)
            if info.issym() or info.islnk():
                raise Refused(f"archive member {member[:80]!r} is a link", "archive_link")
            if info.ischr() or info.isblk() or info.isfifo() or info.isdev():
                raise Refused(f"archive member {member[:80]!r} is a device or special file", "archive_special")
            if info.isdir():
                continue
            if not info.isfile():
                raise Refused(f"archive member {member[:80]!r} is not a regular file", "archive_special")
            if is_archive(member):
                raise Refused(f"archive member {member[:80]!r} is itself an archive (not unpacked)", "archive_nested")
            _account(total, info.size, member, cap)
            target = _safe_target(tmp, member)
            fh = tf.extractfile(info)
            data = fh.read(cap + 1) if fh else b""
            total = _account(total, len(data), member, cap)
            if total > 1024 * 1024 and total / max(1, len(body)) > MAX_RATIO:
                raise Refused(f"archive compression ratio above {MAX_RATIO:g} (a tar bomb?)", "archive_ratio")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            names.append(member)
    finally:
        tf.close()
        plain.close()
    return names
