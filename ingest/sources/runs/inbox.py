"""The inbox's folders, held open as directory descriptors (issue #53 item 3).

Whoever may drop a file in `$BENCHWH_HOME/inbox/` may also rename or replace what is in it, at
any moment. So every folder is opened once, relative to the one above it and without following
a link (`O_DIRECTORY | O_NOFOLLOW`), and every move, write and read afterwards names a file
relative to those descriptors (`rename(src_dir_fd=, dst_dir_fd=)`, `open(dir_fd=)`): a folder
swapped for a link after it was opened changes nothing the sensor does, and one that is a link
when it is opened is refused. Folders the warehouse creates are mode 0750, and a folder below
the inbox that another user owns is refused (the warehouse's folders are the warehouse's).
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

FOLDER_MODE = 0o750
FILE_MODE = 0o640
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
SIDECAR_SUFFIX = ".meta.json"


class InboxUnsafe(Exception):
    """The inbox or one of its folders is a link, not a folder, or someone else's: nothing is moved."""


def _open_folder(parent_fd: int, name: str, path: Path, create: bool, own: bool = True) -> int | None:
    """`name` under the folder `parent_fd`, opened without following a link; created (0750) when
    missing and `create`, else None. `own`: refused unless the warehouse's user owns it."""
    if create:
        try:
            os.mkdir(name, FOLDER_MODE, dir_fd=parent_fd)
        except FileExistsError:
            pass
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        if create:
            raise InboxUnsafe(f"{path} vanished while it was opened") from None
        return None
    except OSError as exc:
        st = _lstat(parent_fd, name)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise InboxUnsafe(f"{path} is a symbolic link: refusing to move inbox files through it") from None
        if st is not None and not stat.S_ISDIR(st.st_mode):
            raise InboxUnsafe(f"{path} is not a folder") from None
        raise InboxUnsafe(f"cannot open {path}: {exc.strerror or exc}") from None
    owner = os.fstat(fd).st_uid
    if own and owner != os.geteuid():
        os.close(fd)
        raise InboxUnsafe(f"{path} belongs to uid {owner}, not to the warehouse's user (uid {os.geteuid()})")
    return fd


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


@dataclass
class Folder:
    """One folder of the inbox (or the inbox itself), by descriptor; `path` only names it in messages."""

    path: Path
    fd: int
    inbox: "Inbox"

    def exists(self, name: str) -> bool:
        return _lstat(self.fd, name) is not None

    def take(self, name: str) -> str:
        """Move `inbox/<name>` (a link is moved as the link) and its sidecar `<name>.meta.json` here,
        under a name that neither it nor its `.reason` takes yet. Returns the name it got."""
        stem, dot, suffix = name.rpartition(".")
        stem, suffix = (stem, dot + suffix) if stem else (name, "")
        target, n = name, 1
        while self.exists(target) or self.exists(target + ".reason"):
            target = f"{stem}.{n}{suffix}"
            n += 1
        os.rename(name, target, src_dir_fd=self.inbox.fd, dst_dir_fd=self.fd)
        if _lstat(self.inbox.fd, name + SIDECAR_SUFFIX) is not None:
            os.rename(name + SIDECAR_SUFFIX, target + SIDECAR_SUFFIX, src_dir_fd=self.inbox.fd, dst_dir_fd=self.fd)
        return target

    def create(self, name: str, text: str) -> None:
        """A new file `name` here, never through a link or over a file planted under that name."""
        fd = os.open(name, _NEW_FILE_FLAGS, FILE_MODE, dir_fd=self.fd)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)

    def append(self, name: str, text: str) -> None:
        fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.fd)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(text)

    def read_text(self, name: str, cap: int = 1024 * 1024) -> str:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise OSError(f"{name} is not a regular file")
            return fh.read(cap).decode("utf-8")

    def names(self) -> list[str]:
        return sorted(os.listdir(self.fd))

    def remove(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)


@dataclass
class Inbox:
    """`$BENCHWH_HOME/inbox` and the folders below it, open until `close()` (or the `with` block ends)."""

    path: Path
    fd: int
    folders: dict[str, Folder] = field(default_factory=dict)

    @classmethod
    def open(cls, home: Path, create: bool = True) -> "Inbox | None":
        """The inbox of `home` (the home itself may be reached through links its owner made; below
        it, none is followed). None when it does not exist and `create` is false."""
        home = Path(home)
        if create:
            home.mkdir(parents=True, exist_ok=True)
        try:
            home_fd = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            if create:
                raise
            return None
        try:
            # the inbox may be a shared drop folder of another owner: nothing in it is ever followed
            fd = _open_folder(home_fd, "inbox", home / "inbox", create, own=False)
        finally:
            os.close(home_fd)
        return None if fd is None else cls(home / "inbox", fd)

    def folder(self, name: str, create: bool = True) -> Folder | None:
        if name not in self.folders:
            fd = _open_folder(self.fd, name, self.path / name, create)
            if fd is None:
                return None
            self.folders[name] = Folder(self.path / name, fd, self)
        return self.folders[name]

    def close(self) -> None:
        for folder in self.folders.values():
            os.close(folder.fd)
        self.folders.clear()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "Inbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
