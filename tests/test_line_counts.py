"""The text's `lines` row adds up: its parts sum to the logical lines it names, the physical count
stands beside them when it differs (\\r redraws and glued lines split), and what was cut short or
read in part is shown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from logphase.engine.whole import parse_bytes, parse_file
from logphase.faces.text import line_counts, render_text
from logphase.reporting.report import LinesReport
from tests.conftest import fixture_logs

ROW = re.compile(r"  lines (?P<total>\d+)(?: \((?P<physical>\d+) physical\))?: (?P<parts>[^;]*)(?:; (?P<partly>.*))?")


def shown(text: str) -> tuple[int, int | None, dict[str, int], str]:
    """(total, physical or None, {part: count}, what was read in part) of a text report's row."""
    m = ROW.fullmatch(text.rstrip("\n").splitlines()[-1])
    assert m is not None, text.splitlines()[-1]
    parts = {}
    for part in m["parts"].split(", "):
        count, _, name = part.partition(" ")
        parts[name] = int(count)
    return int(m["total"]), int(m["physical"]) if m["physical"] else None, parts, m["partly"] or ""


@pytest.mark.parametrize("log", fixture_logs(), ids=lambda p: p.stem)
def test_the_lines_row_adds_up_on_every_fixture(log: Path) -> None:
    report = parse_file(log)
    total, physical, parts, _ = shown(render_text(report))
    assert sum(parts.values()) == total == report.lines.total
    assert physical == (report.lines.physical if report.lines.physical != total else None)
    if report.lines.truncated:
        assert parts["cut short at the end of the input"] == report.lines.truncated


def test_redraws_glued_lines_a_cut_last_line_and_an_overlong_line_are_all_shown() -> None:
    stamp = "[2026-05-09 09:20:{:02d}]"
    data = (
        f"{stamp.format(1)} server_args=ServerArgs(model_path='m', tp_size=2)\n"
        f"{stamp.format(2)} Load weight begin. avail mem=70.00 GB\n"
        "Loading safetensors checkpoint shards:  50% Completed | 1/2\rLoading safetensors checkpoint shards: 100% Completed | 2/2\n"
        f"{stamp.format(3)} just a line {'x' * 70_000}\n"
        "\n"
        f"{stamp.format(4)} cut before its newline ["
    ).encode()
    report = parse_bytes(data)
    total, physical, parts, partly = shown(render_text(report))
    assert sum(parts.values()) == total and physical is not None and physical < total
    assert parts["blank"] == 1
    assert "1 line over 64 KiB read in part" in partly


def test_line_counts_says_each_kind_that_happened() -> None:
    counts = LinesReport(total=10, events=4, unrecognized=2, blank=1, ignored=2, truncated=1, physical=8, invalid_utf8=3, overlong=1)
    assert line_counts(counts) == (
        "10 (8 physical): 4 in events, 2 unrecognized, 1 blank, 2 before --since, 1 cut short at the end of the input; "
        "1 line over 64 KiB read in part, 3 lines with bytes that are not UTF-8"
    )
    same = LinesReport(total=3, events=3, unrecognized=0, blank=0, physical=3)
    assert line_counts(same) == "3: 3 in events, 0 unrecognized, 0 blank"
