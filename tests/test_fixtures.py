"""Every fixture log against its expected report (``pytest --update-goldens`` rewrites them)."""

from __future__ import annotations

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
