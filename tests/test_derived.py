"""What a start reads back instead of computing (packs/derived.py): the grammars' terminals and
rules, the dispatch heads split by their first character, the mined frame table, Lark's parse
tables. Kept data is equal to what is computed, a corrupt or stale file is computed again, a folder
that cannot be written is no error, nothing is written outside the cache folder or by a library
that did not ask, and ``LOGPHASE_CACHE_DIR=`` (empty) turns the cache off."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from logphase.packs import derived, grammars, kept_regex, rows_module
from logphase.packs.grammars import examples, grammar_sources
from logphase.packs.mined import mined_functions
from logphase.recognising import classify
from logphase.recognising.prefilter import alternatives, start_chars
from tests.conftest import ROOT, fixture_logs

KV_LOG = ROOT / "fixtures" / "logs" / "kv_cache_insufficient.log"


@pytest.fixture
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A kept-data folder of this test alone, written to (as the command line does)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(derived.CACHE_ENV, str(folder))
    monkeypatch.setattr(derived, "_writing", True)
    yield folder


def _counting_build(calls: list[int], value: object) -> object:
    calls.append(1)
    return value


def _kept(path: Path) -> object:
    return json.loads(zlib.decompress(path.read_bytes()))


def _write_kept(path: Path, text: str) -> None:
    path.write_bytes(zlib.compress(text.encode()))


def test_kept_data_is_read_back_without_computing_it(cache_folder: Path) -> None:
    calls: list[int] = []
    first = derived.cached("item", "k1", lambda: _counting_build(calls, {"a": [1, 2]}), dict)
    second = derived.cached("item", "k1", lambda: _counting_build(calls, {"a": [9]}), dict)
    assert first == second == {"a": [1, 2]}
    assert calls == [1]
    assert [p.name for p in cache_folder.iterdir()] == ["item-k1.json.zlib"]
    assert _kept(cache_folder / "item-k1.json.zlib") == {"a": [1, 2]}


def test_a_corrupt_file_is_computed_again_and_rewritten(cache_folder: Path) -> None:
    derived.cached("item", "k1", lambda: [1, 2, 3], list)
    path = cache_folder / "item-k1.json.zlib"
    for damage in (zlib.compress(b'[1, 2, "tru'), b"[1, 2, 3]", path.read_bytes()[:-3]):
        path.write_bytes(damage)
        assert derived.cached("item", "k1", lambda: [1, 2, 3], list) == [1, 2, 3]
        assert _kept(path) == [1, 2, 3]


def test_a_file_of_the_wrong_shape_is_computed_again(cache_folder: Path) -> None:
    def load(data: object) -> list[int]:
        if not isinstance(data, list):
            raise TypeError("not a list")
        return [int(x) for x in data]

    cache_folder.mkdir()
    _write_kept(cache_folder / "item-k1.json.zlib", '{"a": 1}')
    assert derived.cached("item", "k1", lambda: [4], load) == [4]


def test_a_changed_input_names_another_file_and_the_old_one_goes(cache_folder: Path) -> None:
    old_key, new_key = derived.digest(["grammar v1"]), derived.digest(["grammar v2"])
    assert old_key != new_key and len(old_key) == len(new_key)
    assert derived.cached("item", old_key, lambda: "old", str) == "old"
    (cache_folder / f"item-{old_key}.json").write_text('"an older format"', encoding="utf-8")
    (cache_folder / f"item-more-{old_key}.json.zlib").write_bytes(b"another item's")
    assert derived.cached("item", new_key, lambda: "new", str) == "new"
    assert sorted(p.name for p in cache_folder.iterdir()) == [f"item-{new_key}.json.zlib", f"item-more-{old_key}.json.zlib"]


def test_digest_tells_parts_apart() -> None:
    assert derived.digest(["ab", "c"]) != derived.digest(["a", "bc"])
    assert derived.digest([b"x"]) == derived.digest(["x"])


def test_a_folder_that_cannot_be_made_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv(derived.CACHE_ENV, str(blocker / "cache"))
    monkeypatch.setattr(derived, "_writing", True)
    assert derived.cache_dir() is None
    calls: list[int] = []
    for _ in range(2):
        assert derived.cached("item", "k", lambda: _counting_build(calls, [7]), list) == [7]
    assert calls == [1, 1]  # computed each time, kept nowhere


def test_the_folder_is_the_users_cache_and_nowhere_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$XDG_CACHE_HOME/logphase, else ~/.cache/logphase; a cache home that cannot be written keeps
    nothing (no folder of ours in the shared temporary folder, as there was)."""
    monkeypatch.delenv(derived.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(derived, "_writing", True)
    assert derived.cache_dir() == tmp_path / "xdg" / "logphase"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # not absolute: ignored, as the spec says
    assert derived.cache_dir() == tmp_path / "home" / ".cache" / "logphase"
    blocker = tmp_path / "blocked"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert derived.cache_dir() is None
    assert derived.cached("item", "k", lambda: [1], list) == [1]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_an_empty_cache_dir_turns_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LOGPHASE_CACHE_DIR= (empty): nothing read, nothing written, whatever the process asked."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(derived, "_writing", True)
    monkeypatch.delenv(derived.CACHE_ENV)
    derived.cached("item", "k1", lambda: "kept", str)  # kept in the default folder
    assert (tmp_path / "xdg" / "logphase" / "item-k1.json.zlib").is_file()
    monkeypatch.setenv(derived.CACHE_ENV, "")
    assert derived.cache_dir() is None
    assert derived.cached("item", "k1", lambda: "computed", str) == "computed"  # not read
    assert derived.cached("item", "k2", lambda: "computed", str) == "computed"
    assert sorted(p.name for p in (tmp_path / "xdg" / "logphase").iterdir()) == ["item-k1.json.zlib"]  # nor written
    # nor Lark's tables or the compiled patterns: no file is named to Lark, none to read patterns from
    asked: list[bool | str] = []
    grammars._with_kept_tables("tqdm", lambda cache: asked.append(cache))  # type: ignore[func-returns-value]
    assert asked == [False]
    engine = kept_regex._the_engine()
    assert engine is None or kept_regex._path(engine) is None


def test_a_library_that_did_not_ask_reads_but_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    monkeypatch.setenv(derived.CACHE_ENV, str(folder))
    monkeypatch.setattr(derived, "_writing", False)
    assert derived.cached("item", "k1", lambda: "computed", str) == "computed"
    assert not folder.exists()  # not even made
    monkeypatch.setattr(derived, "_writing", True)
    derived.cached("item", "k1", lambda: "kept", str)
    monkeypatch.setattr(derived, "_writing", False)
    assert derived.cached("item", "k1", lambda: "computed", str) == "kept"  # read
    assert derived.cached("item", "k2", lambda: "computed", str) == "computed"
    assert [p.name for p in folder.iterdir()] == ["item-k1.json.zlib"]


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file under ``folder`` with its size and modification time (a rewrite changes them)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def _run(code_or_args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, *code_or_args], cwd=ROOT, env=env, capture_output=True, check=False)


def test_only_the_command_line_and_who_asks_write_and_only_in_the_cache_folder(tmp_path: Path) -> None:
    """A parse by the command line keeps its data (Lark's parse tables too) in the cache folder, and
    nothing in the temporary folder (Lark's default for its tables); the library, given the same
    warm folder, writes nothing; ``logphase.keep_cache()`` writes, the patterns too, at exit."""
    temporary, folder = tmp_path / "tmp", tmp_path / "cache"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary), derived.CACHE_ENV: str(folder)}
    library = f"import logphase; logphase.parse_file({str(KV_LOG)!r})"
    done = _run(["-c", library], env)
    assert done.returncode == 0, done.stderr
    assert not folder.exists()
    done = _run(["-m", "logphase", "parse", str(KV_LOG)], env)
    assert done.returncode == 1, done.stderr
    kept = _files(folder)
    names = " ".join(kept)
    assert "grammar-sglang-" in names and "lark-sglang-" in names and "regex-" in names, names
    done = _run(["-c", library], env)
    assert done.returncode == 0, done.stderr
    assert _files(folder) == kept
    assert list(temporary.iterdir()) == []
    asked = tmp_path / "asked"
    done = _run(["-c", f"import logphase; logphase.keep_cache(); {library}"], {**env, derived.CACHE_ENV: str(asked)})
    assert done.returncode == 0, done.stderr
    assert {re.sub(r"-[0-9a-f]{32}", "", name) for name in _files(asked)} == {re.sub(r"-[0-9a-f]{32}", "", name) for name in kept}


def test_a_moved_cache_folder_is_read_and_not_rewritten(tmp_path: Path) -> None:
    """Lark's check of its file covers the file's path: a folder moved (or named by another path)
    would fail it, and Lark would write the file again; the file's name covers the folder too, so
    the library builds that parser without the file instead, and writes nothing."""
    first, moved = tmp_path / "first", tmp_path / "moved"
    env = {**os.environ, derived.CACHE_ENV: str(first)}
    assert _run(["-m", "logphase", "parse", str(KV_LOG)], env).returncode == 1
    first.rename(moved)
    kept = _files(moved)
    done = _run(["-c", f"import logphase; print(logphase.parse_file({str(KV_LOG)!r}).outcome)"], {**env, derived.CACHE_ENV: str(moved)})
    assert done.stdout == b"failed\n", done.stderr
    assert _files(moved) == kept


def test_a_parse_with_no_writable_folder_reports_the_same(tmp_path: Path) -> None:
    log = ROOT / "fixtures" / "logs" / "c10d_watchdog_abort.log"
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    outputs = []
    # cold, warm, none to be had, cache off
    for folder in (str(tmp_path / "cache"), str(tmp_path / "cache"), str(blocker / "cache"), ""):
        env = {"PATH": "/usr/bin:/bin", derived.CACHE_ENV: folder, "HOME": str(tmp_path)}
        done = subprocess.run(
            [sys.executable, "-m", "logphase", "parse", str(log), "--json"], cwd=ROOT, env=env, capture_output=True, check=False
        )
        assert done.stderr == b""
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2] == outputs[3] != b""
    assert not (tmp_path / ".cache").exists()  # the cache off is not the default folder


# -- what is kept equals what is computed -------------------------------------------------------------


@pytest.mark.parametrize("source", grammar_sources())
def test_grammar_facts_are_what_the_parser_says(source: str) -> None:
    parser = grammars.parser(source)
    facts = grammars.facts(source)
    assert facts == grammars._facts_from_data(json.loads(json.dumps(grammars._facts_of_parser(source))))
    for terminal in parser.terminals:
        assert facts.patterns[terminal.name] == terminal.pattern.to_regexp()
    assert [origin for origin, _ in facts.rules] == [r.origin.name for r in parser.rules]
    assert [[s.name for s in expansion] for _, expansion in facts.rules] == [
        [s.name for s in r.expansion] for r in parser.rules
    ]


def test_a_corrupt_grammar_file_is_read_again_from_the_grammar(cache_folder: Path) -> None:
    expected = grammars._facts_from_data(grammars._facts_of_parser("tqdm"))
    grammars.facts.cache_clear()
    try:
        assert grammars.facts("tqdm") == expected
        [kept] = cache_folder.glob("grammar-tqdm-*.json.zlib")
        _write_kept(kept, '{"patterns": {"BAR_METER": 1}, "literals": {}, "rules": []}')
        grammars.facts.cache_clear()
        assert grammars.facts("tqdm") == expected
    finally:
        grammars.facts.cache_clear()


def test_a_warm_start_builds_no_parser_for_the_dispatch() -> None:
    """Once kept, the heads, the envelope and the cause table need no Lark parser: one is built when
    a line needs a parse."""
    code = (
        "import logphase; logphase.keep_cache()\n"  # as the command line does
        "from logphase.diagnosing import signatures\nfrom logphase.packs import grammars\nfrom logphase.reading import envelope\nfrom logphase.recognising import classify\n"
        "classify._start_heads().match('Load weight begin.'); envelope._compiled(); signatures.read_error('CUDA out of memory')\n"
        "print(grammars.parser.cache_info().currsize)\n"
    )
    for expected in (None, "0"):  # the first run may keep what is not kept yet
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
        if expected is not None:
            assert done.stdout.strip() == expected


def test_the_mined_frame_table_is_kept_as_computed(cache_folder: Path) -> None:
    for pack, least in (("sglang", 1000), ("vllm", 1000)):
        rows = rows_module(pack)
        table = ROOT / "grammars" / pack / "functions.json"
        computed = mined_functions(table, rows._FUNCTIONS)
        assert list(cache_folder.glob(f"{pack}-mined-functions-*.json.zlib"))
        assert mined_functions(table, rows._FUNCTIONS) == computed
        assert computed == rows.PACK.functions[len(rows._FUNCTIONS) :]
        assert all(f.mined for f in computed) and len(computed) > least


# -- the dispatch heads by first character -----------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("abc", ["abc"]),
        ("A|(?:B|C)", ["A", "B", "C"]),
        ("(?:B|C)D", ["(?:B|C)D"]),
        (r"[|(]x|\|y", ["[|(]x", r"\|y"]),
        (r"[]|]a|[^]|]b", ["[]|]a", "[^]|]b"]),
        ("(?i:a|b)", ["(?i:a|b)"]),
        ("(?:a|b)+", ["(?:a|b)+"]),
        ("(?=a|b)c|d", ["(?=a|b)c", "d"]),
    ],
)
def test_alternatives(pattern: str, expected: list[str]) -> None:
    assert alternatives(pattern) == expected


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("abc", {"a"}),
        (r"[IWEF]\d", set("IWEF")),
        ("a?b", {"a", "b"}),
        ("[a-c]x", set("abc")),
        (r"\w+", None),
        ("(?i:ab)", None),
        ("x|", None),
        (".", None),
        ("[^a]", None),
    ],
)
def test_start_chars(pattern: str, expected: set[str] | None) -> None:
    found = start_chars(pattern)
    assert (None if found is None else set(found)) == expected


def _messages() -> list[str]:
    """Example lines of every grammar, and the messages of the fixtures' lines (as the engine cuts them)."""
    from logphase.reading.envelope import split_envelope

    texts = [line for source in grammar_sources() for lines in examples(source).values() for line in lines]
    for log in fixture_logs():
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines()[:400]:
            texts.append(split_envelope(line).message)
    return [t for t in texts if t] + ["", "%", "é", "\x00abc", " Load weight begin."]


def test_the_heads_by_first_character_find_what_all_heads_find() -> None:
    """The alternation of the heads a text's first character allows gives the grammar the
    alternation of every head gives (the dispatch as it was built before), and so does each grammar's."""
    grammars_in_order = [g for g in classify.DISPATCHED if g not in classify.PROBES]
    whole = re.compile("|".join(f"(?P<{g}>{'|'.join(f'(?:{h})' for h in classify._heads(g))})" for g in grammars_in_order))
    each = {g: re.compile("|".join(f"(?:{h})" for h in classify._heads(g))) for g in grammars_in_order}
    texts = _messages()
    assert len(texts) > 1000
    for text in texts:
        expected = whole.match(text)
        found = classify._start_heads().match(text)
        assert (found and found.lastgroup) == (expected and expected.lastgroup), text
        for g, pattern in each.items():
            assert classify.per_grammar_match(g, text) == (pattern.match(text) is not None), (g, text)


@pytest.mark.skipif(importlib.util.find_spec("hyperscan") is None, reason="hyperscan not installed (pip install 'logphase[fast]')")
def test_a_kept_hyperscan_database_finds_what_a_compiled_one_finds(cache_folder: Path) -> None:
    import hyperscan

    from logphase.recognising import prefilter

    literals = [b"Load weight begin.", b"Traceback (most recent call last):", b" is reset to "]
    data = (ROOT / "fixtures" / "logs" / "c10d_watchdog_abort.log").read_bytes() + b"\nx Load weight begin.\n"

    def hits(db: object) -> list[int]:
        found: list[int] = []
        db.scan(data, match_event_handler=lambda _i, _f, to, _fl, _c: found.append(to))  # type: ignore[attr-defined]
        return sorted(found)

    expected = hits(prefilter._compiled_database(hyperscan, literals))
    assert expected
    assert hits(prefilter._hyperscan_database(literals, "test")) == expected  # computed and kept
    assert hits(prefilter._hyperscan_database(literals, "test")) == expected  # read back
    [kept] = cache_folder.glob("prefilter-hyperscan-*.json.zlib")
    _write_kept(kept, json.dumps("AAAA" * 40))  # base64 of no database
    assert hits(prefilter._hyperscan_database(literals, "test")) == expected
    assert _kept(kept) != "AAAA" * 40


def test_the_bulk_literals_are_kept_as_computed(cache_folder: Path) -> None:
    from logphase.recognising import bulk

    for cached_function in (bulk.head_leads, bulk.event_literals):
        cached_function.cache_clear()
    try:
        assert bulk.head_leads() == bulk._head_leads(bulk.all_heads())
        assert bulk.event_literals() == bulk._event_literals()
        bulk.head_leads.cache_clear()
        bulk.event_literals.cache_clear()
        assert bulk.head_leads() == bulk._head_leads(bulk.all_heads())  # read back
        assert bulk.event_literals() == bulk._event_literals()
    finally:
        bulk.head_leads.cache_clear()
        bulk.event_literals.cache_clear()


def test_the_cause_table_reads_what_its_whole_patterns_read() -> None:
    """A row is searched only in a text holding one of its literals: the rows that decide are the
    ones their patterns, searched whole, give (on every example line of every grammar, the
    fixtures' lines, and texts that fold case)."""
    from logphase.diagnosing import signatures

    rows = signatures._compiled()
    assert sum(row.needs is not None for row in rows) > len(rows) // 2
    whole = [(row.signature, re.compile(row.text)) for row in rows]
    texts = [*_messages(), "torch.OutOfMemoryError: cuda OUT OF MEMORY", "CAPTURE CUDA GRAPH FAILED: x"]
    for text in texts:
        expected = next(((s, m.end()) for s, p in whole if (m := p.search(text)) is not None), None)
        assert signatures._first_row(text) == expected, text
