"""The lnav format `logphase lnav-format` prints (logphase/faces/fleet/lnav.py): derived from the
envelope grammar, its samples read by logphase's own envelope as the server's lines, and then the
real lnav: the format installs, its samples pass lnav's own check (`lnav -C`, which fails on a bad
sample), and the fixtures open with the rank, level, call site and process fields filled.

The lnav tests carry the ``lnav`` marker. Without lnav they are skipped with the reason in pytest's
summary; with ``LOGPHASE_REQUIRE_LNAV=1`` (set by .ci/run, which installs Debian's lnav first) a
missing lnav fails them instead. lnav writes its configuration under $HOME: each run gets a home of
its own in a temporary folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from logphase.faces.fleet.lnav import TIME_FORMATS, lnav_formats
from logphase.packs import packs
from logphase.packs.grammars import rules
from logphase.reading.envelope import split_envelope
from tests.conftest import FIXTURES

MISSING = (
    "lnav is not installed: the lnav format tests need Debian's lnav package "
    "(apt-get install -y --no-install-recommends lnav; .ci/run installs it and sets LOGPHASE_REQUIRE_LNAV=1)"
)


def _formats() -> dict[str, dict[str, object]]:
    return {k: v for k, v in lnav_formats().items() if k != "$schema"}  # type: ignore[misc]


def _python(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.replace("(?<", "(?P<").replace("(?P<=", "(?<=").replace("(?P<!", "(?<!"))


def test_each_server_with_a_logger_prefix_has_a_format_of_its_grammar_s_patterns() -> None:
    formats = _formats()
    assert set(formats) == {f"{p.name}_log" for p in packs() if p.logger_rules} >= {"sglang_log", "vllm_log"}
    for pack in packs():
        for rule in pack.logger_rules:
            assert any(origin == rule for origin, _ in rules("envelope")), rule  # a rule of the envelope
            for _, expansion in (r for r in rules("envelope") if r[0] == rule):
                times = [s.name for s in expansion if s.terminal and (s.name.endswith("_TIME") or s.name == "TIMESTAMP")]
                assert times and all(t in TIME_FORMATS for t in times), (rule, times)  # no time lnav cannot read


def test_the_samples_are_the_server_s_lines_and_match_a_pattern() -> None:
    for pack in packs():
        if not pack.logger_rules:
            continue
        regex = _formats()[f"{pack.name}_log"]["regex"]
        patterns = [_python(p["pattern"]) for p in regex.values()]  # type: ignore[attr-defined]
        assert len(pack.sample_lines) >= 3
        for line in pack.sample_lines:
            envelope = split_envelope(line)
            assert envelope.server_stamp is not None, line  # logphase reads the server's own clock in it
            matched = [m for p in patterns if (m := p.match(line))]
            assert matched, line
            assert matched[0]["body"] and envelope.message.endswith(matched[0]["body"].strip()), line


def test_the_patterns_fill_the_fields_logphase_reads() -> None:
    sglang = [_python(p["pattern"]) for p in _formats()["sglang_log"]["regex"].values()]  # type: ignore[attr-defined]
    m = next(m for p in sglang if (m := p.match("[2026-05-09 09:20:26 DP0 TP1 EP1] Load weight begin. avail mem=7 GB")))
    assert m["rank"] == "DP0 TP1 EP1" and m["timestamp"] == "2026-05-09 09:20:26" and m["body"].startswith("Load weight")
    vllm = [_python(p["pattern"]) for p in _formats()["vllm_log"]["regex"].values()]  # type: ignore[attr-defined]
    line = "(EngineCore_DP0 pid=3) (Worker_DP0_TP1 pid=9) WARNING 08-17 22:48:22 [gpu_model_runner.py:2007] Model loading took 7.5 GiB"
    fields = [m.groupdict() for p in vllm if (m := p.match(line))]
    assert {"rank": "DP0_TP1", "pid": "pid=9", "level": "WARNING", "src": "gpu_model_runner.py:2007"}.items() <= fields[0].items()


def test_the_command_prints_it_and_refuses_a_server_without_one() -> None:
    done = subprocess.run([sys.executable, "-m", "logphase", "lnav-format", "--server", "vllm"], capture_output=True, timeout=60)
    assert done.returncode == 0 and list(json.loads(done.stdout)) == ["$schema", "vllm_log"]


# -- the real lnav ----------------------------------------------------------------------------------------


def lnav_required() -> bool:
    return os.environ.get("LOGPHASE_REQUIRE_LNAV", "") not in ("", "0")


@pytest.fixture(scope="module")
def lnav() -> str:
    path = shutil.which("lnav")
    if path is None:
        if lnav_required():
            pytest.fail(MISSING, pytrace=False)
        pytest.skip(MISSING)
    return path


def _run(lnav: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"), "TERM": "dumb"}
    return subprocess.run([lnav, *args], capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)


def _installed(lnav: str, tmp_path: Path, formats: dict[str, object]) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    path = tmp_path / "logphase.json"
    path.write_text(json.dumps(formats))
    done = _run(lnav, home, "-i", str(path))
    assert done.returncode == 0 and "installed" in done.stdout + done.stderr, done.stdout + done.stderr
    return home


@pytest.mark.lnav
def test_lnav_installs_the_format_and_its_samples_pass_its_check(lnav: str, tmp_path: Path) -> None:
    home = _installed(lnav, tmp_path, lnav_formats())
    done = _run(lnav, home, "-C")
    assert done.returncode == 0 and "error" not in (done.stdout + done.stderr).lower(), done.stdout + done.stderr


@pytest.mark.lnav
def test_lnav_s_check_fails_a_sample_no_pattern_reads(lnav: str, tmp_path: Path) -> None:
    """The check above can fail: a sample of another shape is refused by lnav itself."""
    formats = lnav_formats()
    formats["vllm_log"]["sample"].append({"line": "[2026-05-09 09:20:26 TP0] an SGLang line"})  # type: ignore[index]
    home = _installed(lnav, tmp_path, formats)
    done = _run(lnav, home, "-C")
    assert done.returncode != 0 and "sample does not match any patterns" in done.stdout + done.stderr


def _query(lnav: str, home: Path, sql: str, log: Path) -> list[list[str]]:
    done = _run(lnav, home, "-n", "-c", f";{sql}", "-c", ":write-csv-to -", str(log))
    assert done.returncode == 0, done.stderr
    rows = [line.split(",") for line in done.stdout.splitlines() if line.strip()]
    return rows[1:] if rows else []


@pytest.mark.lnav
def test_the_fixtures_open_with_the_fields_filled(lnav: str, tmp_path: Path) -> None:
    home = _installed(lnav, tmp_path, lnav_formats())
    sglang = _query(
        lnav,
        home,
        "SELECT log_line, log_level, rank FROM sglang_log WHERE rank IS NOT NULL",
        FIXTURES / "kv_cache_insufficient.log",
    )
    assert {row[2] for row in sglang} >= {"TP0", "TP1"}
    levels = _query(
        lnav, home, "SELECT log_level, src FROM sglang_log WHERE src IS NOT NULL", FIXTURES / "ms_stamps_call_sites.log"
    )
    assert levels and {row[0] for row in levels} & {"warning", "info"}
    vllm = _query(
        lnav, home, "SELECT log_level, rank, process, pid, src FROM vllm_log", FIXTURES / "vllm_c10d_store_timeout_v1_0_9.log"
    )
    assert any(row[0] == "error" and row[1] == "0" and row[3] == "pid=1713" for row in vllm), vllm[:12]
    assert all(row[4].endswith(tuple("0123456789")) for row in vllm)  # every line's call site, file.py:line
    engine = _query(
        lnav, home, "SELECT process FROM vllm_log WHERE process IS NOT NULL", FIXTURES / "vllm_nccl_echoes_first_v1_0_10.log"
    )
    assert {row[0] for row in engine} >= {"APIServer", "EngineCore_DP0"}
