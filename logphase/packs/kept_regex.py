"""Regular expressions compiled once per machine, not once per process.

Python compiles a pattern in Python code (``re._parser``, ``re._compiler``) and keeps nothing between
processes. logphase builds its recognisers from the grammars, long alternations of every message
head: compiling them costs 0.03 s of a 50-line parse and 0.26 s of the 21 real logs, 11-13 % of the
CPU time of a warm start (docs/performance.md, issue 29). What that compiler produces is plain
data: a list of integers (the "SRE code") plus the group names, which the C engine ``_sre.compile``
turns into a pattern object in microseconds. This module keeps that data on disk, next to
derived.py's, and builds patterns from it.

Safe by construction, and optional:

* The file is named by the interpreter's exact version and its engine's ``MAGIC`` and code size: the
  code is only ever given back to the interpreter that made it.
* CPython's check of code handed to ``_sre.compile`` is not complete (random damage to the code can
  crash the interpreter), so the file carries a checksum of its content and is read only when it
  holds: a torn or damaged file is never used.
* Each stored pattern is a record of the exact pattern text and flags it was compiled from, with
  its code, and is used only for that text and those flags: a record that names another pattern
  (two swapped, one written under a wrong key) or does not decode is compiled anew, never used. The
  file is found by a hash of the text, not trusted for it. What is not checked is that a record's
  code is what its text compiles to (only compiling it again would tell): records are written
  by ``save()`` alone, from ``re``'s own parser and code generator, into the user's own folder
  (derived.py), trusted as Python trusts its ``__pycache__``.
* At first use a probe pattern is built both ways and compared; when this interpreter's internals
  differ in any way (another implementation, a changed signature), every call is ``re.compile``.
* What ``compile`` returns matches what ``re.compile`` returns for the same arguments (flags, groups,
  names, matches): tests/test_kept_regex.py compares them on the patterns logphase compiles.

Records are zlib-compressed one by one (the code is 32-bit integers, mostly small: a tenth of the
size; only the records a start uses are decompressed). New patterns are written back by ``save()``,
merged with what another process wrote meanwhile, only when the process was asked to keep the cache
(derived.keep_cache: the command line asks, and calls ``derived.flush()`` before it exits).
"""

from __future__ import annotations

import array
import hashlib
import importlib
import marshal
import re
import sys
import threading
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any, AnyStr

from logphase.packs import derived
from logphase.packs.derived import cache_dir, digest, write_whole

# bumped when the shape of the kept file changes
KEPT_FORMAT = 4
# kept patterns beyond which the file starts afresh (patterns vary with the input: the dispatch
# compiles the heads that a line's first character allows; a cap keeps the file bounded)
MAX_KEPT = 4000
_CHECKSUM_SIZE = 4

# what re.compile computes in Python for (pattern, flags): (flags the pattern ends with, code as
# bytes, groups, groupindex, indexgroup)
_Entry = tuple[int, bytes, int, dict[str, int], tuple[str | None, ...]]
# the file: a hash of (pattern, flags) -> zlib of the marshalled record (pattern, flags, *_Entry)
_Kept = dict[bytes, bytes]

_lock = threading.Lock()
_kept: _Kept | None = None
# compiled in this process and not read from the file: (pattern, flags, entry) by key, for save()
_new: dict[bytes, tuple[str | bytes, int, _Entry]] = {}
# the patterns built in this process, as re keeps its own (some callers compile the same pattern
# again and again, trusting re's cache)
_built: dict[tuple[str | bytes, int], re.Pattern[Any]] = {}


class _Engine:
    """The interpreter's own parser, code generator and C constructor, when they are as expected."""

    def __init__(self) -> None:
        if sys.implementation.name != "cpython":
            raise ImportError("not CPython")
        sre = importlib.import_module("_sre")
        try:  # 3.11+
            compiler, parser = importlib.import_module("re._compiler"), importlib.import_module("re._parser")
        except ImportError:  # 3.10
            compiler, parser = importlib.import_module("sre_compile"), importlib.import_module("sre_parse")
        typecode = next((t for t in "IL" if array.array(t).itemsize == sre.CODESIZE), None)
        if typecode is None:
            raise ImportError("no array type of the engine's code size")
        self.sre: Any = sre
        self.parse: Any = parser.parse
        self.code: Any = compiler._code
        self.typecode = typecode
        self.version = digest([sys.version, str(sys.hexversion), str(sre.MAGIC), str(sre.CODESIZE), str(KEPT_FORMAT)])

    def entry(self, pattern: str | bytes, flags: int) -> _Entry:
        """What ``re.compile(pattern, flags)`` computes in Python before it calls the C engine."""
        parsed = self.parse(pattern, flags)
        code = array.array(self.typecode, [int(c) for c in self.code(parsed, flags)]).tobytes()
        groupindex = {str(k): int(v) for k, v in parsed.state.groupdict.items()}
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        return int(flags | parsed.state.flags), code, parsed.state.groups - 1, groupindex, tuple(indexgroup)

    def build(self, pattern: AnyStr, entry: _Entry) -> re.Pattern[AnyStr]:
        final_flags, code, groups, groupindex, indexgroup = entry
        compiled: re.Pattern[AnyStr] = self.sre.compile(
            pattern, final_flags, array.array(self.typecode, code).tolist(), groups, groupindex, indexgroup
        )
        return compiled


def _probe(engine: _Engine) -> bool:
    """Whether patterns built from kept code behave as ``re.compile``'s, on a pattern with names,
    flags, classes, repeats and look-arounds, in str and bytes."""
    for pattern, text in (
        (r"(?i)(?P<head>ab+c)(?:\s+(?P<n>\d{2,})|x)?(?=\.)|[^\W\d]+", "xx ABbC 123. rest"),
        (rb"(?m)^\[(?P<t>.{3})\](?!\d)", b"no\n[abc]x"),
    ):
        expected = re.compile(pattern)
        got = engine.build(pattern, engine.entry(pattern, 0))  # type: ignore[type-var]
        if (got.flags, got.groups, got.groupindex) != (expected.flags, expected.groups, expected.groupindex):
            return False
        if [m.groupdict() for m in got.finditer(text)] != [m.groupdict() for m in expected.finditer(text)]:  # type: ignore[arg-type]
            return False
    return True


def _make_engine() -> _Engine | None:
    try:
        engine = _Engine()
        return engine if _probe(engine) else None
    except Exception:
        return None


_engine: _Engine | None = None
_engine_checked = False


def _the_engine() -> _Engine | None:
    global _engine, _engine_checked
    if not _engine_checked:
        _engine, _engine_checked = _make_engine(), True
    return _engine


def _path(engine: _Engine) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"regex-{engine.version}.marshal"


def _checksum(payload: bytes) -> bytes:
    # CRC-32 finds a torn write or flipped bits at 1+ GB/s (blake2b took 7 ms of a start on 2.5 MB);
    # the folder is the user's own, so no one is expected to forge one
    return zlib.crc32(payload).to_bytes(_CHECKSUM_SIZE, "little")


def _key(pattern: str | bytes, flags: int) -> bytes:
    """Where the record of (pattern, flags) is filed: a hash, so that the file holds each text once
    (in its record); two texts under one hash only miss, as each record names its own text."""
    h = hashlib.blake2b(digest_size=16)
    h.update(b"s" if isinstance(pattern, str) else b"b")
    h.update(flags.to_bytes(8, "little", signed=True))
    h.update(pattern.encode("utf-8", "surrogatepass") if isinstance(pattern, str) else pattern)
    return h.digest()


def _pack(pattern: str | bytes, flags: int, entry: _Entry) -> bytes:
    return zlib.compress(marshal.dumps((pattern, flags, *entry)), 6)


def _unpack(record: bytes, pattern: str | bytes, flags: int) -> _Entry | None:
    """The entry of a kept record, when the record is of exactly this pattern text and these flags;
    None for any other (another pattern's, filed under the wrong key) or one that does not decode."""
    try:
        fields = marshal.loads(zlib.decompress(record))
    except (zlib.error, ValueError, EOFError, TypeError):
        return None
    if not isinstance(fields, tuple) or len(fields) != 7:
        return None
    source, source_flags, final_flags, code, groups, groupindex, indexgroup = fields
    if type(source) is not type(pattern) or source != pattern or source_flags != flags:
        return None
    if not (
        isinstance(final_flags, int) and isinstance(code, bytes) and isinstance(groups, int)
        and isinstance(groupindex, dict) and isinstance(indexgroup, tuple)
    ):
        return None
    return final_flags, code, groups, groupindex, indexgroup


def _read(path: Path | None) -> _Kept:
    """The kept records, or none when the file is missing or its checksum does not hold."""
    if path is None:
        return {}
    try:
        content = path.read_bytes()
        checksum, payload = content[:_CHECKSUM_SIZE], content[_CHECKSUM_SIZE:]
        if checksum != _checksum(payload):
            return {}
        data = marshal.loads(payload)
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def compile(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """``re.compile(pattern, flags)``, from the code kept on disk when there is some."""
    engine = _the_engine()
    if engine is None:
        return re.compile(pattern, flags)
    flags = int(flags)
    built = _built.get((pattern, flags))
    if built is not None:
        return built
    compiled = _compile(engine, pattern, flags)
    _built[pattern, flags] = compiled
    return compiled


def _compile(engine: _Engine, pattern: AnyStr, flags: int) -> re.Pattern[AnyStr]:
    global _kept
    key = _key(pattern, flags)
    with _lock:
        if _kept is None:
            _kept = _read(_path(engine))
        record = _kept.get(key)
    entry = None if record is None else _unpack(record, pattern, flags)
    if entry is not None:
        try:
            return engine.build(pattern, entry)
        except (RuntimeError, TypeError, ValueError, OverflowError):
            pass  # an entry of the wrong shape: compiled anew below
    try:
        entry = engine.entry(pattern, flags)  # what re.compile does in Python, kept
        compiled = engine.build(pattern, entry)
    except re.error:
        raise  # a bad pattern, as re.compile says it
    except Exception:  # a pattern the recording cannot handle is still compiled
        return re.compile(pattern, flags)
    with _lock:
        _new[key] = (pattern, flags, entry)
    return compiled


def save() -> None:
    """Write the patterns compiled since the file was read, merged with the file as it is now (when
    this process keeps the cache: derived.keep_cache)."""
    engine = _engine
    if engine is None or not _new or not derived.writing():
        return
    path = _path(engine)
    if path is None:
        return
    with _lock:
        pending = dict(_new)
        _new.clear()
    merged = _read(path)
    if len(merged) + len(pending) > MAX_KEPT:
        merged = {}
    merged.update((key, _pack(pattern, flags, entry)) for key, (pattern, flags, entry) in pending.items())
    payload = marshal.dumps(merged)
    write_whole(path, _checksum(payload) + payload)


derived.on_flush(save)


def _match(pattern: str, text: str, flags: int = 0) -> re.Match[str] | None:
    return compile(pattern, flags).match(text)


# What Lark's lexers ask of the ``re`` module they are given (``compile``, ``match``, ``error``):
# grammars.py hands them this, so that their scanners are kept too.
RE_MODULE = SimpleNamespace(compile=compile, match=_match, error=re.error)

__all__ = ["KEPT_FORMAT", "MAX_KEPT", "RE_MODULE", "compile", "save"]
