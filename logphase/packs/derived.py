"""Data derived from the packs' files, kept on disk between runs: a start reads it back instead of
loading every Lark grammar (and mining tables) to compute it again.

What is kept is JSON (regular expressions as strings, rule expansions, table rows), zlib-compressed
(a tenth of the size: the hash names and rule tables repeat), in one file per item, named by the
item and a hash of everything it is computed from (the files' bytes, the versions of logphase and
Lark, this module's format): a change of any input names another file, so a stale file is never
read, and a file that cannot be read or has the wrong shape is computed again. Compiled regular
expressions are kept by kept_regex.py, Lark's parse tables by grammars.py, in the same folder.

The folder: ``$LOGPHASE_CACHE_DIR``, else ``$XDG_CACHE_HOME/logphase``, else ``~/.cache/logphase``;
nothing is ever written anywhere else. ``LOGPHASE_CACHE_DIR`` set but empty turns the cache off:
nothing is read or written, every start computes it all (slower, never an error).

Reading is on by default; writing only when asked (``keep_cache()``): the command line asks, a
library user may (``logphase.keep_cache()``), and a library that was not asked leaves no file behind.
A folder that cannot be written is no error either: nothing is kept.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import tempfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

_T = TypeVar("_T")

# bumped when the shape of what is kept changes: older files are then never read
CACHE_FORMAT = 2
CACHE_ENV = "LOGPHASE_CACHE_DIR"
_SUFFIX = ".json.zlib"
# what a kept file that cannot be turned back into its data raises (a corrupt or foreign file)
_UNREADABLE = (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError, zlib.error)

# whether this process writes what it derives (keep_cache); off until asked
_writing = False
# what other modules keep in memory until the process ends (kept_regex's new patterns): flushed by
# flush(), which the command line calls before it leaves and an atexit hook once keep_cache() is called
_flushers: list[Callable[[], None]] = []
_flush_at_exit = False


def keep_cache(on: bool = True) -> None:
    """Let this process write what it derives from the grammars (and the regular expressions it
    compiles, at its exit) to the cache folder, for the next start to read; ``False`` stops it.
    Without this call nothing is written (what is already there is read).
    ``LOGPHASE_CACHE_DIR=`` (empty) turns the cache off whatever this says."""
    global _writing, _flush_at_exit
    _writing = on
    if on and not _flush_at_exit:
        _flush_at_exit = True
        atexit.register(flush)


def writing() -> bool:
    """Whether this process may write to the cache folder (keep_cache was called)."""
    return _writing


def on_flush(flusher: Callable[[], None]) -> None:
    """Have ``flusher`` write what its module kept in memory when the process flushes (flush())."""
    _flushers.append(flusher)


def flush() -> None:
    """Write what the modules kept in memory for the cache (nothing unless keep_cache was called)."""
    if _writing:
        for flusher in _flushers:
            flusher()


def digest(parts: Iterable[bytes | str]) -> str:
    """A short hash of ``parts`` (each one delimited, so that ('ab', 'c') and ('a', 'bc') differ)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(str(CACHE_FORMAT).encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def configured_dir() -> Path | None:
    """The cache folder the environment names, whether or not it exists; None when caching is off
    (``LOGPHASE_CACHE_DIR`` set but empty)."""
    override = os.environ.get(CACHE_ENV)
    if override is not None:
        return Path(override) if override else None
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "logphase"


def _writable_dir() -> Path | None:
    folder = configured_dir()
    if folder is None:
        return None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK | os.X_OK) else None


def cache_dir() -> Path | None:
    """The folder kept data is read from (and, when this process writes, written to: then created
    if needed); None when caching is off, or there is no folder to read (nothing was kept yet) or
    to write (one that cannot be made). Asked anew each time (a syscall or two, a few times a
    start): the environment decides, also when a test changes it."""
    if _writing:
        return _writable_dir()
    folder = configured_dir()
    return folder if folder is not None and folder.is_dir() else None


def _path(name: str, key: str) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"{name}-{key}{_SUFFIX}"


def write_whole(path: Path, content: bytes) -> None:
    """Write ``content`` whole or not at all (another process may read the file meanwhile); a file
    that cannot be written is no error (it is computed again next time). Nothing is written unless
    this process was asked to (keep_cache)."""
    if not _writing:
        return
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
    ``build()`` (JSON data), and kept when this process writes, when the file is missing,
    unreadable or ``load`` rejects it."""
    path = _path(name, key)
    if path is not None:
        try:
            return load(json.loads(zlib.decompress(path.read_bytes())))
        except _UNREADABLE:
            pass  # not kept yet, or corrupt: computed again, and the file rewritten
    data = build()
    result = load(data)
    if path is not None and _writing:
        write_whole(path, zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 6))
        forget_others(path, name, _SUFFIX)
    return result


def forget_others(path: Path, name: str, suffix: str) -> None:
    """Remove what was kept for ``name`` under other keys (computed from files that changed since),
    and what an older format kept for it (plain ``.json``)."""
    mine = re.compile(rf"{re.escape(name)}-[0-9a-f]{{32}}(?:{re.escape(suffix)}|\.json)")
    for old in path.parent.glob(f"{name}-*"):
        if old != path and mine.fullmatch(old.name):
            with contextlib.suppress(OSError):
                old.unlink()
