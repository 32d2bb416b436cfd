"""A server logphase has never heard of, added as a pack folder and nothing else: its grammars and its
rows (tests/toy_pack/, copied to a temporary folder) named by LOGPHASE_PACKS, read by every stage
and face without a line of code of their own."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TOY_PACK = Path(__file__).resolve().parent / "toy_pack"

READY = """\
2026-11-30T10:00:00.000000Z ToyLLM server 1.2.3 starting
2026-11-30T10:00:05.000000Z Loading weights from /models/toy
2026-11-30T10:00:35.000000Z ToyLLM is ready to serve
"""
FAILED = """\
2026-11-30T10:00:00.000000Z ToyLLM server 1.2.3 starting
2026-11-30T10:00:05.000000Z Loading weights from /models/toy
2026-11-30T10:00:40.000000Z Traceback (most recent call last):
2026-11-30T10:00:40.000000Z   File "/opt/toyllm/engine.py", line 10, in allocate_cache
2026-11-30T10:00:40.000000Z RuntimeError: no room for the toy cache
"""


@pytest.fixture
def toy(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The pack in a folder of its own, and the environment that names it."""
    folder = tmp_path / "packs" / "toyllm"
    shutil.copytree(TOY_PACK, folder)
    (tmp_path / "ready.log").write_text(READY, encoding="utf-8")
    (tmp_path / "failed.log").write_text(FAILED, encoding="utf-8")
    env = {"LOGPHASE_PACKS": str(folder), "LOGPHASE_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    return tmp_path, env


def logphase(args: list[str], env: dict[str, str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[1]
    return subprocess.run(
        [sys.executable, "-m", "logphase", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(root)},
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_a_third_server_is_read_from_its_pack_folder_alone(toy: tuple[Path, dict[str, str]]) -> None:
    where, env = toy
    done = logphase(["parse", "--json", "ready.log"], env, where)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["server"], report["version"], report["outcome"]) == ("toyllm", "1.2.3", "ready")
    assert [(p["name"], p["duration_s"]) for p in report["phases"]] == [("launch", 5.0), ("weight_loading", 30.0), ("ready", 0.0)]
    assert report["total_startup_s"] == 35.0

    done = logphase(["parse", "failed.log"], env, where)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0] == "failed.log (ToyLLM 1.2.3): FAILED in memory_pool after 40 s: kv_cache_insufficient_memory"
    assert "hint    ToyLLM's cache did not fit: raise --toy-cache-memory." in done.stdout


def test_every_face_reads_the_third_server(toy: tuple[Path, dict[str, str]]) -> None:
    where, env = toy
    followed = logphase(["follow", "--json", "-"], env, where, stdin=FAILED.encode())
    records = [json.loads(line) for line in followed.stdout.splitlines()]
    assert [r["phase"] for r in records if r["kind"] == "phase"] == ["launch", "weight_loading"]
    assert [r["failure"]["cause"] for r in records if r["kind"] == "failure"] == ["kv_cache_insufficient_memory"]
    assert followed.returncode == 1
    checked = logphase(["check", "ready.log", "--max-total", "60", "--max", "weight_loading=31"], env, where)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    forced = logphase(["parse", "--json", "--server", "toyllm", "failed.log"], env, where)
    assert json.loads(forced.stdout)["server"] == "toyllm"


def test_a_message_is_added_in_its_grammar_alone(toy: tuple[Path, dict[str, str]]) -> None:
    """A note of a phase is one grammar rule with its example and its row beside it (//@): no other
    file changes."""
    where, env = toy
    grammar = where / "packs" / "toyllm" / "toyllm.lark"
    text = grammar.read_text(encoding="utf-8").replace("| toy_ready", "| toy_ready | toy_cache")
    grammar.write_text(text + '//: ToyLLM cache sized\n//@ memory_pool evidence server\ntoy_cache: "ToyLLM cache sized"\n')
    log = where / "cache.log"
    log.write_text(READY.replace("2026-11-30T10:00:35.000000Z", "2026-11-30T10:00:30.000000Z ToyLLM cache sized\n2026-11-30T10:00:35.000000Z"))
    report = json.loads(logphase(["parse", "--json", "cache.log"], env, where).stdout)
    assert [(p["name"], p["duration_s"]) for p in report["phases"]] == [
        ("launch", 5.0), ("weight_loading", 25.0), ("memory_pool", 5.0), ("ready", 0.0)
    ]


def test_without_the_folder_named_the_lines_are_no_server_s() -> None:
    """The registry alone does not know it: the same log read without LOGPHASE_PACKS names no server."""
    from logphase import parse_text

    report = parse_text(READY)
    assert report.server is None and report.lines.unrecognized == 3
