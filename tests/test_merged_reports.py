"""A merged report (`parse --merge --json`) is a saved report like any other: `parse` prints it again
as `--merge` did, `check` and `compare` read the startup it describes, and `report` draws it. And
its phase table names the rank (and node) that held a phase up, never 'same on all' for ranks that
were not in the phase together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logphase.faces import cli
from logphase.faces.merged import render_merged
from logphase.faces.text import slowest_rank
from logphase.reporting.report import PhaseReport, RankSpan
from logphase.vocabulary.phases import Phase
from tests.conftest import FIXTURES
from tests.test_merge import case_report

MERGE = FIXTURES / "merge"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as stopped:
        code = int(stopped.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def saved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Path]:
    """Each merge fixture's `parse --merge --json`, saved as a user would."""
    paths = {}
    for case in ("node1_fails", "two_nodes_ready", "pd_disaggregation"):
        code, out, _ = run(["parse", "--merge", "--json", *map(str, sorted((MERGE / case).glob("*.log")))], capsys)
        assert code in (0, 1)
        paths[case] = tmp_path / f"{case}.json"
        paths[case].write_text(out)
    return paths


def test_parse_prints_a_saved_merged_report_as_merge_did(saved: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    for case, path in saved.items():
        logs = list(map(str, sorted((MERGE / case).glob("*.log"))))
        live = run(["parse", "--merge", "--color", "never", *logs], capsys)
        again = run(["parse", "--color", "never", str(path)], capsys)
        assert again == live, case
        code, out, err = run(["parse", "--json", str(path)], capsys)
        assert json.loads(out) == json.loads(path.read_text()) and code == live[0] and err == ""


def test_check_reads_the_startup_of_a_saved_merged_report(saved: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    path = str(saved["node1_fails"])
    assert run(["check", path, "--cause", "kv_cache_insufficient_memory"], capsys)[0] == 0
    code, out, _ = run(["check", path, "--cause", "cuda_oom"], capsys)
    assert code == 1 and "expected cuda_oom, got kv_cache_insufficient_memory" in out
    assert run(["check", str(saved["two_nodes_ready"]), "--max", "weight_loading=600"], capsys)[0] == 0
    code, out, _ = run(["check", str(saved["two_nodes_ready"]), "--max", "weight_loading=1"], capsys)
    assert code == 1 and "weight_loading" in out


def test_compare_reads_saved_merged_reports(saved: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    ready, failed = str(saved["two_nodes_ready"]), str(saved["node1_fails"])
    code, out, _ = run(["compare", ready, ready], capsys)
    assert code == 0 and "weight_loading" in out
    code, out, _ = run(["compare", ready, failed], capsys)  # ready -> failed: the outcome got worse
    assert code == 1
    code, out, _ = run(["compare", "--json", ready, str(MERGE / "two_nodes_ready" / "node0.log")], capsys)
    assert code in (0, 1) and json.loads(out)["phases"]


def test_check_checks_each_server_of_a_saved_deployment_and_compare_refuses_it_in_one_line(
    saved: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(saved["pd_disaggregation"])
    code, out, _ = run(["check", path], capsys)
    assert code == 0 and out.count("expectation") == 3  # prefill, decode and router: each ready
    code, out, _ = run(["check", path, "--max", "cuda_graph_capture=1"], capsys)
    assert code == 1 and "cuda_graph_capture" in out
    code, out, err = run(["compare", path, path], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "merged report of 3 servers" in err


def test_report_draws_a_saved_merged_report(saved: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "merged.html"
    code, out, _ = run(["report", str(saved["node1_fails"]), "-o", str(page)], capsys)
    assert code == 1 and "wrote" in out
    html = page.read_text()
    assert "kv_cache_insufficient_memory" in html and "node1" in html


# -- the phase table of a merged server -----------------------------------------------------------


def test_no_phase_row_says_same_on_all_unless_every_rank_was_in_it_from_its_start_to_its_end() -> None:
    shown = 0
    for case in ("four_nodes_ready", "node1_fails", "two_nodes_ready"):
        for server in case_report(case).servers:
            text = render_merged(case_report(case), color=False)
            for p in server.report.phases:
                said = slowest_rank(p, server.rank_nodes)
                if said == "same on all":
                    starts = {span.start for span in p.ranks.values()} | {p.start}
                    ends = {span.end for span in p.ranks.values()} | {p.end}
                    assert len(starts) == 1 and len(ends) == 1, (case, p.name)
                elif said:
                    rank = said.split(" ")[0]
                    assert f"on {server.rank_nodes[rank]}" in said, said  # the node of the rank
                    assert said in text
                    shown += 1
    assert shown >= 3


def _phase(ranks: dict[str, tuple[str, str]]) -> PhaseReport:
    spans = {
        rank: RankSpan(start=f"2026-08-14T09:00:{a}", end=f"2026-08-14T09:00:{b}", duration_s=float(int(b) - int(a)))
        for rank, (a, b) in ranks.items()
    }
    starts = [s.start for s in spans.values() if s.start]
    ends = [s.end for s in spans.values() if s.end]
    return PhaseReport(name=Phase.WEIGHT_LOADING, start=min(starts), end=max(ends), duration_s=None, ranks=spans)


def test_ranks_as_long_but_apart_show_the_last_one_out_and_its_node() -> None:
    """Node 1 started 3 s later: each rank took 30 s, the server's row 33 s."""
    p = _phase({"TP0": ("10", "40"), "TP1": ("10", "40"), "TP2": ("13", "43"), "TP3": ("13", "43")})
    nodes = {"TP0": "node0", "TP1": "node0", "TP2": "node1", "TP3": "node1"}
    assert slowest_rank(p, nodes) in ("TP2 on node1 30 s, last out", "TP3 on node1 30 s, last out")
    together = _phase({"TP0": ("10", "40"), "TP1": ("10", "40")})
    assert slowest_rank(together, nodes) == "same on all"
    slower = _phase({"TP0": ("10", "40"), "TP1": ("10", "45")})
    assert slowest_rank(slower, nodes) == "TP1 on node0 35 s"
    assert slowest_rank(slower) == "TP1 35 s"  # one log: no node to name
