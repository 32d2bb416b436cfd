"""Regular expressions kept on disk (packs/kept_regex.py): a pattern built from kept code is the
pattern ``re.compile`` gives, on every pattern logphase compiles; a damaged or foreign file, or a
record of another pattern, is never used; nothing is written unless the process keeps the cache;
without the interpreter's internals every call is ``re.compile``."""

from __future__ import annotations

import marshal
import os
import re
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from logphase.engine.whole import parse_bytes
from logphase.packs import derived, kept_regex
from tests.conftest import ROOT, fixture_logs


@pytest.fixture
def fresh_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A kept-data folder of this test alone, written to (as the command line does), and the
    module's store read anew from it."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(derived.CACHE_ENV, str(folder))
    monkeypatch.setattr(derived, "_writing", True)
    _reread(monkeypatch)
    yield folder


def _reread(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a new process would: nothing in memory, the file read at the next compile."""
    monkeypatch.setattr(kept_regex, "_kept", None)
    monkeypatch.setattr(kept_regex, "_new", {})
    monkeypatch.setattr(kept_regex, "_built", {})


def _same(got: re.Pattern[str] | re.Pattern[bytes], expected: re.Pattern[str] | re.Pattern[bytes], texts: list[str]) -> None:
    assert (got.pattern, got.flags, got.groups, got.groupindex) == (
        expected.pattern,
        expected.flags,
        expected.groups,
        expected.groupindex,
    )
    for text in texts:
        subject: str | bytes = text.encode() if isinstance(got.pattern, bytes) else text
        a, b = got.search(subject), expected.search(subject)  # type: ignore[arg-type]
        assert (a and (a.span(), a.groups(), a.lastgroup)) == (b and (b.span(), b.groups(), b.lastgroup)), text


def test_the_interpreter_can_keep_patterns() -> None:
    """On CPython (every machine logphase runs on) the kept path is on, so the tests below test it."""
    assert sys.implementation.name != "cpython" or kept_regex._the_engine() is not None


@pytest.mark.parametrize(
    "sample",
    # lines of the fixtures each pattern is searched in, both ways (the code is compared to the
    # integer anyway): a few in the default tier, 400 in the long one (2-3 minutes: a search for a
    # pattern written for match is quadratic on a long line)
    [pytest.param(10, id="10-lines"), pytest.param(400, id="400-lines", marks=pytest.mark.long)],
)
def test_every_pattern_logphase_compiles_is_the_same_built_from_kept_code(
    sample: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts: list[str] = []
    for log in fixture_logs():
        data = log.read_bytes()
        parse_bytes(data, source=log.name)
        texts += data.decode("utf-8", errors="replace").splitlines()[::7]
    # every pattern this process compiled so far (other tests' too, in a shared worker)
    patterns = list(kept_regex._built)
    assert len(patterns) > 50  # the recognisers, heads, scanners of Lark's lexers...
    # into a new file, then read back from it as a new process would
    monkeypatch.setenv(derived.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(derived, "_writing", True)
    _reread(monkeypatch)
    for pattern, flags in patterns:
        kept_regex.compile(pattern, flags)
    kept_regex.save()
    _reread(monkeypatch)
    engine = kept_regex._the_engine()
    assert engine is not None
    sample_texts = texts[:: len(texts) // sample][:sample]  # from every fixture
    kept = kept_regex._read(kept_regex._path(engine))
    for pattern, flags in patterns:
        # the code read back is the code re's compiler gives now, to the integer
        assert kept_regex._unpack(kept[kept_regex._key(pattern, flags)], pattern, flags) == engine.entry(pattern, flags)
        _same(kept_regex.compile(pattern, flags), re.compile(pattern, flags), sample_texts)
    assert not kept_regex._new, "every pattern was read back from the file"


def test_a_damaged_file_is_never_used(fresh_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pattern = r"(?P<a>\d+) ranks?(?= ready)"
    kept_regex.compile(pattern)
    kept_regex.save()
    (path,) = fresh_store.glob("regex-*.marshal")
    content = bytearray(path.read_bytes())
    content[-5] ^= 0xFF  # one byte of the payload: its checksum no longer holds
    path.write_bytes(bytes(content))
    _reread(monkeypatch)
    _same(kept_regex.compile(pattern), re.compile(pattern), ["8 ranks ready", "1 rank"])
    assert kept_regex._key(pattern, 0) in kept_regex._new  # compiled anew, not read


def test_a_torn_or_foreign_file_is_compiled_anew(fresh_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pattern = rb"(?m)^\[(?P<t>.{19})"
    kept_regex.compile(pattern)
    kept_regex.save()
    (path,) = fresh_store.glob("regex-*.marshal")
    for content in (b"", path.read_bytes()[:40], b"not a kept file at all" * 3):
        path.write_bytes(content)
        _reread(monkeypatch)
        _same(kept_regex.compile(pattern), re.compile(pattern), ["[2026-01-01 00:00:00 TP0] x"])


def _rewrite(path: Path, change: dict[bytes, bytes]) -> None:
    """Change records of a kept file and give it a valid checksum again (a writer's mistake that a
    checksum cannot see)."""
    records = marshal.loads(path.read_bytes()[4:])
    records.update(change)
    payload = marshal.dumps(records)
    path.write_bytes(zlib.crc32(payload).to_bytes(4, "little") + payload)


def test_two_swapped_records_are_never_used(fresh_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each record is of the pattern it was compiled from: one filed under another pattern's key is
    compiled anew (before, ``compile(r'foo\\d+')`` built the code of ``bar\\w+`` and matched ``barxyz``)."""
    foo, bar = r"foo\d+", r"bar\w+"
    kept_regex.compile(foo)
    kept_regex.compile(bar)
    kept_regex.save()
    (path,) = fresh_store.glob("regex-*.marshal")
    records = marshal.loads(path.read_bytes()[4:])
    foo_key, bar_key = kept_regex._key(foo, 0), kept_regex._key(bar, 0)
    _rewrite(path, {foo_key: records[bar_key], bar_key: records[foo_key]})
    _reread(monkeypatch)
    assert kept_regex.compile(foo).match("barxyz") is None
    assert kept_regex.compile(bar).match("foo12") is None
    _same(kept_regex.compile(foo), re.compile(foo), ["foo12", "barxyz", "foo"])
    _same(kept_regex.compile(bar), re.compile(bar), ["foo12", "barxyz", "bar"])
    assert {foo_key, bar_key} <= set(kept_regex._new)  # compiled anew, and rewritten right at the next save
    kept_regex.save()
    _reread(monkeypatch)
    kept_regex.compile(foo)
    kept_regex.compile(bar)
    assert not kept_regex._new


def test_a_record_of_other_flags_or_type_is_never_used(fresh_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record names its flags and whether its text is str or bytes: the same text with
    IGNORECASE, or as bytes, is compiled anew."""
    pattern = r"Load (?P<what>weight) begin"
    kept_regex.compile(pattern)
    kept_regex.save()
    (path,) = fresh_store.glob("regex-*.marshal")
    record = marshal.loads(path.read_bytes()[4:])[kept_regex._key(pattern, 0)]
    _rewrite(path, {kept_regex._key(pattern, re.IGNORECASE): record, kept_regex._key(pattern.encode(), 0): record})
    _reread(monkeypatch)
    _same(kept_regex.compile(pattern, re.IGNORECASE), re.compile(pattern, re.IGNORECASE), ["load WEIGHT begin"])
    _same(kept_regex.compile(pattern.encode()), re.compile(pattern.encode()), ["Load weight begin"])
    assert kept_regex._key(pattern, re.IGNORECASE) in kept_regex._new
    assert kept_regex._key(pattern.encode(), 0) in kept_regex._new
    assert kept_regex._key(pattern, 0) not in kept_regex._new  # its own record is read


def test_a_record_that_does_not_decode_is_compiled_anew(fresh_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pattern = r"(?P<rank>TP\d+) ready"
    kept_regex.compile(pattern)
    kept_regex.save()
    (path,) = fresh_store.glob("regex-*.marshal")
    key = kept_regex._key(pattern, 0)
    for record in (b"", b"not zlib", zlib.compress(b"not marshal"), zlib.compress(marshal.dumps((pattern, 0, "short")))):
        _rewrite(path, {key: record})
        _reread(monkeypatch)
        _same(kept_regex.compile(pattern), re.compile(pattern), ["TP3 ready"])
        assert key in kept_regex._new


def test_nothing_is_written_unless_the_process_keeps_the_cache(fresh_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A library that did not call keep_cache writes nothing, at exit neither (no atexit hook of
    ours); a kept file is still read."""
    monkeypatch.setattr(derived, "_writing", False)
    kept_regex.compile(r"never (kept)")
    kept_regex.save()
    derived.flush()
    assert not fresh_store.exists()
    monkeypatch.setattr(derived, "_writing", True)
    kept_regex.save()
    assert len(list(fresh_store.glob("regex-*.marshal"))) == 1
    monkeypatch.setattr(derived, "_writing", False)
    _reread(monkeypatch)
    kept_regex.compile(r"never (kept)")
    assert not kept_regex._new  # read from the file


def test_a_bad_pattern_raises_as_re_does(fresh_store: Path) -> None:
    with pytest.raises(re.error):
        kept_regex.compile("(unclosed")


def test_without_the_interpreters_internals_it_is_re_compile(fresh_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept_regex, "_engine", None)
    monkeypatch.setattr(kept_regex, "_engine_checked", True)
    pattern = r"Load weight end\. (?P<rest>.*)"
    assert kept_regex.compile(pattern) is re.compile(pattern)  # re's own cache: the same object
    kept_regex.save()
    assert not list(fresh_store.glob("regex-*"))


def test_an_engine_that_builds_other_patterns_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = kept_regex._make_engine()
    assert engine is not None
    monkeypatch.setattr(engine, "build", lambda pattern, entry: re.compile(pattern, re.IGNORECASE))
    assert not kept_regex._probe(engine)


def test_the_command_line_keeps_what_it_compiled(tmp_path: Path) -> None:
    """``logphase parse`` leaves through os._exit, past atexit: it saves the patterns itself."""
    log = next(p for p in fixture_logs() if p.stem == "kv_cache_insufficient")
    env = {**os.environ, derived.CACHE_ENV: str(tmp_path / "cache")}
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "logphase", "parse", str(log), "--json"], cwd=ROOT, env=env, capture_output=True
        )
        assert done.returncode == 1, done.stderr
        (kept,) = (tmp_path / "cache").glob("regex-*.marshal")
        assert kept.stat().st_size > 10_000


def test_a_pattern_is_built_once_per_process(fresh_store: Path) -> None:
    """As re keeps its own: callers that compile the same pattern again get the same object."""
    pattern = r"(?P<rank>TP\d+) ready"
    assert kept_regex.compile(pattern) is kept_regex.compile(pattern)
