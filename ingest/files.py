"""Writing a file whole or not at all: the body goes to a temporary name beside it, then a rename.

The temporary is created with O_EXCL | O_NOFOLLOW (`create_temporary`): a file or link planted
under its name is never written through. A crash or a full disk leaves at most a `.<name>.tmp<pid>` file (publish.verify.sweep_temporaries
removes those of dead processes), never a torn file under the final name.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Iterator


def printable(text: str) -> str:
    """`text` with every character that is not printable (control characters such as ESC, CR and
    newline, DEL, C1, the Unicode line separators and bidirectional overrides) written as its
    escape (\\x1b, \\u202e): a file name printed in a log line, a `.reason` file or on a terminal
    can then neither forge a line nor rewrite one."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def tmp_name(final: Path) -> Path:
    return final.with_name(f".{final.name}.tmp{os.getpid()}")


def link_or_copy(source: Path, target: Path) -> None:
    """A hard link of `source` at `target` (no bytes copied), or a copy where links fail (another
    file system). Neither may be written in place afterwards: both names share the bytes."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def create_temporary(final: Path) -> tuple[Path, int]:
    """A new temporary file beside `final` and its descriptor, opened for writing with O_EXCL and
    O_NOFOLLOW: never a file that was there, never through a link planted under its name. The
    usual name is `tmp_name(final)`; when something holds it, a random part is added (the
    name still ends in `.tmp<pid>`, which the sweep of dead processes' temporaries knows)."""
    tmp = tmp_name(final)
    for _ in range(100):
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            tmp = final.with_name(f".{final.name}.{secrets.token_hex(4)}.tmp{os.getpid()}")
    raise FileExistsError(f"no free temporary name beside {final}")


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(final: Path, body: bytes | str, *, durable: bool = False) -> None:
    """`body` (str: UTF-8) under `final`, creating its folder. `durable`: on disk before this returns
    (the file and its folder fsynced), for what is published; else a crash may lose the write, never
    tear it."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp, fd = create_temporary(final)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(final.parent)


def write_quietly(final: Path, body: bytes | str) -> None:
    """`write_atomically` for what is only kept to save work (another process may write the same
    entry): a read-only or full disk only means the next process works it out again."""
    try:
        write_atomically(final, body)
    except OSError:
        pass


LINES_PER_CHUNK = 20_000


def file_line_chunks(path: Path, size: int = LINES_PER_CHUNK) -> Iterator[list[str]]:
    """The lines of a JSON-lines file ("\n" alone ends a line), without their newlines, `size` at a
    time; nothing when there is no file. A manifest or ledger log of a million lines is then never
    held whole as text, only one chunk of it."""
    try:
        fh = path.open(encoding="utf-8", newline="\n")
    except FileNotFoundError:
        return
    with fh:
        chunk: list[str] = []
        for line in fh:
            chunk.append(line[:-1] if line.endswith("\n") else line)
            if len(chunk) == size:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def json_lines_at_once(lines: list[str]) -> list | None:
    """Every line parsed, by one parse of them as a JSON array (half the time of a parse per line
    at 100,000 lines); None when some line is not one whole JSON value (torn, blank or bad): the
    caller then reads line by line as it would have. A torn line never parses as part of the
    array, since each line the writers here append is a whole object."""
    try:
        return json.loads("[" + ",".join(lines) + "]")
    except ValueError:
        return None
