"""Regular expressions kept on disk (packs/kept_regex.py): a pattern built from kept code is the
pattern ``re.compile`` gives, on every pattern logphase compiles; a damaged or foreign file is never
used; without the interpreter's internals every call is ``re.compile``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from logphase.engine.whole import parse_bytes
from logphase.packs import derived, kept_regex
from tests.conftest import ROOT, fixture_logs


@pytest.fixture
def fresh_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A kept-data folder of this test alone, and the module's store read anew from it."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(derived.CACHE_ENV, str(folder))
    derived.cache_dir.cache_clear()
    monkeypatch.setattr(kept_regex, "_kept", None)
    monkeypatch.setattr(kept_regex, "_new", {})
    monkeypatch.setattr(kept_regex, "_built", {})
    yield folder
    derived.cache_dir.cache_clear()


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


def test_every_pattern_logphase_compiles_is_the_same_built_from_kept_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts: list[str] = []
    for log in fixture_logs():
        data = log.read_bytes()
        parse_bytes(data, source=log.name)
        texts += data.decode("utf-8", errors="replace").splitlines()[::7]
    # every pattern this process compiled or read back so far (other tests' too, in a shared worker)
    patterns = list(kept_regex._kept or {})
    assert len(patterns) > 50  # the recognisers, heads, scanners of Lark's lexers...
    # into a new file, then read back from it as a new process would
    monkeypatch.setenv(derived.CACHE_ENV, str(tmp_path / "cache"))
    derived.cache_dir.cache_clear()
    try:
        _reread(monkeypatch)
        for pattern, flags in patterns:
            kept_regex.compile(pattern, flags)
        kept_regex.save()
        _reread(monkeypatch)
        sample = texts[:400]
        for pattern, flags in patterns:
            _same(kept_regex.compile(pattern, flags), re.compile(pattern, flags), sample)
        assert not kept_regex._new, "every pattern was read back from the file"
    finally:
        derived.cache_dir.cache_clear()


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
    assert (pattern, 0) in kept_regex._new  # compiled anew, not read


def test_a_torn_or_foreign_file_is_compiled_anew(fresh_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pattern = rb"(?m)^\[(?P<t>.{19})"
    kept_regex.compile(pattern)
    kept_regex.save()
    (path,) = fresh_store.glob("regex-*.marshal")
    for content in (b"", path.read_bytes()[:40], b"not a kept file at all" * 3):
        path.write_bytes(content)
        _reread(monkeypatch)
        _same(kept_regex.compile(pattern), re.compile(pattern), ["[2026-01-01 00:00:00 TP0] x"])


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
