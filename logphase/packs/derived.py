"""Data derived from the packs' files, kept on disk between runs: a start reads it back instead of
loading every Lark grammar (and mining tables) to compute it again.

What is kept is plain JSON (regular expressions as strings, rule expansions, table rows), in one
file per item, named by the item and a hash of everything it is computed from (the files' bytes,
the versions of logphase and Lark, this module's format): a change of any input names another file,
so a stale file is never read, and a file that cannot be read or has the wrong shape is computed
again and rewritten. Compiled regular expressions cannot be kept (Python's ``re`` has no such
thing): what is kept is their text, compiled where it is needed.

The folder: ``$LOGPHASE_CACHE_DIR``, else ``$XDG_CACHE_HOME/logphase``, else ``~/.cache/logphase``;
when that cannot be written, a private folder of this user in the system's temporary folder, and
when that fails too nothing is kept (every run computes the data: slower, never an error).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

_T = TypeVar("_T")

# bumped when the shape of what is kept changes: older files are then never read
CACHE_FORMAT = 1
CACHE_ENV = "LOGPHASE_CACHE_DIR"
# what a kept file that cannot be turned back into its data raises (a corrupt or foreign file)
_UNREADABLE = (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError)


def digest(parts: Iterable[bytes | str]) -> str:
    """A short hash of ``parts`` (each one delimited, so that ('ab', 'c') and ('a', 'bc') differ)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(str(CACHE_FORMAT).encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _candidate_dirs() -> list[tuple[Path, bool]]:
    """The folders to try, in order, each with whether it must be this user's alone (one in the
    shared temporary folder: what is read from it must have been written by us)."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return [(Path(override), False)]
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return [(base / "logphase", False), (Path(tempfile.gettempdir()) / f"logphase-cache-{_user_id()}", True)]


def _user_id() -> str:
    getuid = getattr(os, "getuid", None)
    return str(getuid()) if getuid is not None else os.environ.get("USERNAME", "user")


def _private(folder: Path) -> bool:
    """Whether ``folder`` is ours alone: owned by this user, writable by no one else."""
    if not hasattr(os, "getuid"):
        return True
    info = folder.stat()
    return info.st_uid == os.getuid() and info.st_mode & 0o022 == 0


@functools.cache
def cache_dir() -> Path | None:
    """The folder the derived data is kept in, created if needed; None when no folder can be written."""
    for folder, shared in _candidate_dirs():
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if os.access(folder, os.W_OK | os.X_OK) and (not shared or _private(folder)):
                return folder
        except OSError:
            continue
    return None


def _path(name: str, key: str) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"{name}-{key}.json"


def write_whole(path: Path, content: bytes) -> None:
    """Write ``content`` whole or not at all (another process may read the file meanwhile); a file
    that cannot be written is no error (it is computed again next time)."""
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def cached(name: str, key: str, build: Callable[[], object], load: Callable[[object], _T]) -> _T:
    """``load(data)``, with ``data`` read from the file kept for (name, key), or computed by
    ``build()`` (JSON data) and kept when the file is missing, unreadable or ``load`` rejects it."""
    path = _path(name, key)
    if path is not None:
        try:
            with path.open(encoding="utf-8") as kept:
                return load(json.load(kept))
        except _UNREADABLE:
            pass  # not kept yet, or corrupt: computed again, and the file rewritten
    data = build()
    result = load(data)
    if path is not None:
        write_whole(path, json.dumps(data, separators=(",", ":")).encode())
        _forget_others(path, name)
    return result


def _forget_others(path: Path, name: str) -> None:
    """Remove what was kept for ``name`` under other keys (computed from files that changed since)."""
    for old in path.parent.glob(f"{name}-*.json"):
        if old != path and len(old.name) == len(path.name):
            with contextlib.suppress(OSError):
                old.unlink()
