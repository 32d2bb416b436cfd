"""Waiting for a file to change without busy waiting: inotify on Linux (through libc, no extra
dependency), a short sleep elsewhere. The directory is watched, so creation, replacement and
rotation of the file wake us as well as writes to it."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import time

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
