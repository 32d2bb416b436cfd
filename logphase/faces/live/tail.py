"""Following a file by name. Waiting for it to change without busy waiting: inotify on Linux
(through libc, no extra dependency), a short sleep elsewhere. The directory is watched, so
creation, replacement and rotation of the file wake us as well as writes to it."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import time
from enum import Enum
from typing import BinaryIO, NamedTuple

_IN_MODIFY, _IN_ATTRIB, _IN_MOVED_FROM, _IN_MOVED_TO = 0x002, 0x004, 0x040, 0x080
_IN_CREATE, _IN_DELETE, _IN_CLOEXEC, _IN_NONBLOCK = 0x100, 0x200, 0o2000000, 0o4000
_MASK = _IN_MODIFY | _IN_ATTRIB | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE


class ChangeWaiter:
    """``wait(timeout)`` returns when something in the file's directory changed, or at timeout."""

    def __init__(self, path: str, poll_interval: float = 0.02) -> None:
        self._poll = poll_interval
        self._fd: int | None = None
        directory = os.path.dirname(os.path.abspath(path)) or "."
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
            if fd >= 0 and libc.inotify_add_watch(fd, directory.encode(), _MASK) >= 0:
                self._fd = fd
            elif fd >= 0:
                os.close(fd)
        except (OSError, AttributeError):
            self._fd = None

    @property
    def event_driven(self) -> bool:
        return self._fd is not None

    def wait(self, timeout: float) -> None:
        if self._fd is None:
            time.sleep(min(timeout, self._poll))
            return
        ready, _, _ = select.select([self._fd], [], [], max(0.0, timeout))
        if ready:
            try:
                while os.read(self._fd, 65536):
                    pass
            except BlockingIOError:
                pass

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


REWRITE_HEAD_BYTES = 4096  # how much of the file's start is kept to recognise a rewrite


class Change(Enum):
    MISSING = "missing"  # the file does not exist (yet)
    ROTATED = "rotated"  # another file now has the name: ``data`` is the rest of the old one
    TRUNCATED = "truncated"  # the file was cut (or cut and written again): reading starts again at 0
    DELETED = "deleted"  # the name is gone (said once): what was written was read; waiting for it to reappear


class TailRead(NamedTuple):
    data: bytes
    change: Change | None = None
    at_byte: int = 0  # where reading stood when the change was seen


class FileTail:
    """A file followed by name, like ``tail -F``: read from its first byte, wait for it when it
    does not exist yet, and notice truncation and rotation (the old file is read to its end
    first). ``wait`` sleeps until the file's directory changes (inotify) or the timeout passes.
    The one implementation behind ``logphase follow FILE`` and ``logphase.testing.LogFollower``.

    A truncation is seen when the file is shorter than what was read, and also when it was cut
    and written again past that point before we looked (a restarted server's longer run): its
    first bytes are no longer the ones read first. A rewrite that starts with the very same bytes
    (no time stamp in its first line) and is already longer is not seen."""

    def __init__(self, path: str, poll_interval: float = 0.02, event_driven: bool = True) -> None:
        self.path = path
        self._handle: BinaryIO | None = None
        self._inode: tuple[int, int] | None = None
        self._head = b""  # the file's first bytes, as read: a rewrite changes them
        self._deleted_said = False
        self._waiter = ChangeWaiter(path, poll_interval) if event_driven else None
        self._poll = poll_interval

    @property
    def event_driven(self) -> bool:
        return self._waiter is not None and self._waiter.event_driven

    def read(self, limit: int) -> TailRead:
        """New bytes (at most ``limit``), or a change, or ``TailRead(b"")`` at the end of what is there."""
        if self._handle is None:
            try:
                self._handle = open(self.path, "rb")  # noqa: SIM115 - kept open across reads
            except FileNotFoundError:
                return TailRead(b"", Change.MISSING)
            st = os.fstat(self._handle.fileno())
            self._inode = (st.st_dev, st.st_ino)
            self._head = b""
        position = self._handle.tell()
        if position and self._rewritten(position):
            self._handle.seek(0)
            self._head = b""
            return TailRead(b"", Change.TRUNCATED, position)
        data = self._handle.read(limit)
        if data:
            if len(self._head) < REWRITE_HEAD_BYTES and position == len(self._head):
                self._head += data[: REWRITE_HEAD_BYTES - len(self._head)]
            return TailRead(data)
        # at the end of what is there: has the file been replaced, rotated or removed?
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            # removed: what was written was read through the open handle; said once, then
            # waited for, like tail -F (a new file of that name is a replacement)
            if self._deleted_said:
                return TailRead(b"")
            self._deleted_said = True
            return TailRead(b"", Change.DELETED, position)
        self._deleted_said = False
        if (st.st_dev, st.st_ino) != self._inode:
            rest = self._handle.read()
            self._handle.close()
            self._handle, self._inode = None, None
            return TailRead(rest, Change.ROTATED, position)
        return TailRead(b"")

    def _rewritten(self, position: int) -> bool:
        """The open file was cut since it was read up to ``position``: it is shorter, or its
        first bytes differ from the ones read (cut, then written again past ``position``)."""
        assert self._handle is not None
        fd = self._handle.fileno()
        if os.fstat(fd).st_size < position:
            return True
        return bool(self._head) and os.pread(fd, len(self._head), 0) != self._head

    def modified(self) -> float | None:
        """The open file's last modification time (seconds since the epoch)."""
        return os.fstat(self._handle.fileno()).st_mtime if self._handle is not None else None

    def wait(self, timeout: float) -> None:
        if self._waiter is not None:
            self._waiter.wait(timeout)
        else:
            time.sleep(min(timeout, self._poll))

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if self._waiter is not None:
            self._waiter.close()
