"""Every fixture log against its expected report (``pytest --update-goldens`` rewrites them)."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from logphase import parse_bytes
from tests.conftest import FIXTURES, fixture_logs

# --expect values some fixtures are checked with (the stale-log scenario needs the launch command)
EXPECT: dict[str, dict[str, str]] = {
    "stale_expect_mismatch.log": {"mem_fraction_static": "0.88"},
}


def golden_report(path: Path) -> dict[str, object]:
    report = parse_bytes(path.read_bytes(), source=path.name, expect=EXPECT.get(path.name))
    return report.model_dump(mode="json")


@pytest.mark.parametrize("log", fixture_logs(), ids=lambda p: p.stem)
def test_fixture_matches_expectation(log: Path, update_goldens: bool) -> None:
    expected_path = log.with_name(log.stem + ".expected.json")
    actual = golden_report(log)
    if update_goldens:
        expected_path.write_bytes(orjson.dumps(actual, option=orjson.OPT_INDENT_2) + b"\n")
    assert expected_path.exists(), f"{expected_path.name} missing: run pytest --update-goldens and review it"
    expected = orjson.loads(expected_path.read_bytes())
    assert actual == expected


def test_every_fixture_has_an_expectation() -> None:
    logs = {p.stem for p in fixture_logs()}
    expectations = {p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json")}
    assert len(logs) >= 13
    assert expectations == logs


# -- the goldens agree with what MANIFEST.md says each fixture shows ----------------------------------


def manifest_rows() -> dict[str, dict[str, str]]:
    """file -> {outcome, phase, cause, rank, warnings} from the table in fixtures/logs/MANIFEST.md."""
    rows: dict[str, dict[str, str]] = {}
    for line in (FIXTURES / "MANIFEST.md").read_text().splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) == 8 and cells[0].startswith("`") and cells[0].endswith(".log`"):
            name = cells[0].strip("`")
            rows[name] = dict(zip(("outcome", "phase", "cause", "rank", "warnings"), cells[3:], strict=True))
    return rows


def _kinds(cell: str) -> set[str]:
    """'multiple_runs, memory_pressure' -> {...}; 'none (see note 3)' -> set(); before any ';'."""
    head = cell.split(";")[0].split("(")[0].strip()
    return set() if head == "none" else {k.strip() for k in head.split(",") if k.strip()}


# Rows whose right answer (MANIFEST.md) needs vLLM's process prefixes read as rank tags, which the
# envelope's branch (h/venv) brings: strict, so the mark must go once that lands
@pytest.mark.parametrize("log", fixture_logs(), ids=lambda p: p.stem)
def test_golden_agrees_with_the_manifest(log: Path) -> None:
    row = manifest_rows().get(log.name)
    assert row is not None, f"{log.name} has no row in MANIFEST.md"
    golden = orjson.loads(log.with_name(log.stem + ".expected.json").read_bytes())
    failure = golden["failure"] or {}
    assert golden["outcome"] == row["outcome"]
    assert golden["phase"] == row["phase"]
    assert (failure.get("cause") or "-") == row["cause"]
    assert (failure.get("rank") or "-") == row["rank"].split(" (")[0].strip()  # "TP1 (named in ...)", "DP2 TP2"
    # the golden is checked with EXPECT's --expect values, which the row's "with --expect" part names
    expected = _kinds(row["warnings"]) | ({"stale_log"} if log.name in EXPECT else set())
    assert {w["kind"] for w in golden["warnings"]} == expected
