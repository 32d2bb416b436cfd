"""Details of the report page a user sees (faces/timeline/page.py): the free-memory column says
what it knows without a bare '?', and configuration values wrap only between their parts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from logphase.engine.whole import parse_file
from logphase.faces.timeline import render_html
from logphase.faces.timeline.layout import build_timeline
from logphase.faces.timeline.page import _free_memory, _phase_rows, breakable
from logphase.vocabulary.phases import Phase
from tests.conftest import FIXTURES, fixture_logs


def test_free_memory_with_one_edge_says_which_one() -> None:
    avail = {"TP0": {"memory_pool_start": 30.2, "memory_pool_end": 20.9}, "TP1": {"memory_pool_end": 21.4}}
    assert _free_memory(avail, Phase.MEMORY_POOL) == "30.2 → 20.9 GB"
    assert _free_memory({"TP0": {"memory_pool_end": 20.9}}, Phase.MEMORY_POOL) == "20.9 GB at end"
    assert _free_memory({"TP0": {"memory_pool_start": 20.9}}, Phase.MEMORY_POOL) == "20.9 GB at start"
    assert _free_memory(avail, Phase.WEIGHT_LOADING) == ""


@pytest.mark.parametrize("log", fixture_logs(), ids=lambda p: p.stem)
def test_no_phase_row_shows_an_unknown_memory_reading_as_a_question_mark(log: Path) -> None:
    report = parse_file(log)
    for *_, memory in _phase_rows(report, build_timeline(report)):
        assert "?" not in memory
        assert re.fullmatch(r"|\d+\.\d → \d+\.\d GB|\d+\.\d GB at (start|end)", memory), memory


def test_a_configuration_value_breaks_only_after_its_separators() -> None:
    assert breakable("meta-llama/Llama-3.1-8B-Instruct") == "meta-llama/<wbr>Llama-3.1-8B-Instruct"
    assert breakable("a=1,b='x&y'") == "a=<wbr>1,<wbr>b=<wbr>&#x27;x&amp;<wbr>y&#x27;"  # entities stay whole
    assert breakable("deepseek") == "deepseek"


def test_the_page_keeps_configuration_words_whole() -> None:
    page = render_html(parse_file(FIXTURES / "tp8_dp_attention_success.log"))
    css = page.split("<style>", 1)[1].split("</style>", 1)[0]
    config_rule = next(line for line in css.splitlines() if line.startswith(".config td:nth-child(even)"))
    assert "anywhere" not in config_rule and "break-all" not in config_rule
    config = page.split('<table class="config">', 1)[1].split("</table>", 1)[0]
    assert "/<wbr>" in config  # the model path may wrap at its slash
