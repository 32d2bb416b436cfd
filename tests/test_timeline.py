"""The startup timeline picture (logphase/faces/timeline/, `logphase report`): the structure of the SVG
and HTML for every fixture, 1 and 64 ranks, 20-second and 40-minute startups, missing timestamps."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest

from logphase.engine.whole import parse_file, parse_text
from logphase.faces.timeline import PHASE_COLORS, render_html, render_svg
from logphase.faces.timeline.layout import build_timeline
from logphase.faces.timeline.style import MAX_RANK_ROWS, PLOT_W, PLOT_X, compress_ranks
from logphase.faces.wording import fmt_duration
from logphase.reporting.report import Report
from tests.conftest import FIXTURES, fixture_logs
from tests.logs import logphase_cli

SVG_NS = "{http://www.w3.org/2000/svg}"
ALL_FIXTURES = fixture_logs()


# -- synthetic logs ----------------------------------------------------------------------------------


def synthetic_log(
    ranks: int = 2,
    load_s: float = 20.0,
    capture_s: float = 8.0,
    slow: dict[int, float] | None = None,
    fail_rank: int | None = None,
    ready: bool = True,
    start: datetime = datetime(2026, 5, 9, 9, 20, 0),
    stamps: bool = True,
) -> str:
    """An SGLang-shaped startup with ``ranks`` TP ranks; ``slow`` adds seconds of weight loading to
    some ranks; ``fail_rank`` makes that rank's KV cache not fit (and nothing after it happens)."""
    slow = slow or {}
    events: list[tuple[float, int, str]] = []
    order = 0

    def at(t: float, text: str, rank: int | None = None) -> None:
        nonlocal order
        order += 1
        when = (start + timedelta(seconds=t)).strftime("%Y-%m-%d %H:%M:%S")
        tag = f" TP{rank}" if rank is not None else ""
        events.append((t, order, f"[{when}{tag}] {text}" if stamps else text))

    def raw(t: float, text: str) -> None:
        nonlocal order
        order += 1
        events.append((t, order, text))

    at(0, f"server_args=ServerArgs(model_path='org/model', tp_size={ranks}, dp_size=1, mem_fraction_static=0.85, port=30000)")
    pool_t: dict[int, float] = {}
    for r in range(ranks):
        at(5, "Init torch distributed begin.", r)
        at(7, "Init torch distributed ends. mem usage=0.50 GB", r)
        at(7, "Load weight begin. avail mem=78.00 GB", r)
        end = 7 + load_s + slow.get(r, 0.0)
        at(end, "Load weight end. type=M, dtype=torch.bfloat16, avail mem=20.00 GB, mem usage=58.00 GB.", r)
        pool_t[r] = end + 1
    if fail_rank is not None:
        t = pool_t[fail_rank]
        at(t, "Scheduler hit an exception: Traceback (most recent call last):", fail_rank)
        for line in (
            '  File "/sglang/srt/managers/scheduler.py", line 10, in run_scheduler_process',
            "    scheduler = Scheduler()",
            '  File "/sglang/srt/model_executor/model_runner.py", line 20, in init_memory_pool',
            "    raise RuntimeError(...)",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.85",
            "",
        ):
            raw(t, line)
        at(t, "Received sigquit from a child process. It usually means the child failed.")
        return "\n".join(text for _, _, text in sorted(events)) + "\n"
    cap_end = 0.0
    for r in range(ranks):
        t = pool_t[r]
        at(t, "KV Cache is allocated. #tokens: 100000, K size: 6.00 GB, V size: 6.00 GB", r)
        at(t, "Memory pool end. avail mem=7.00 GB", r)
        at(t + 1, "Capture cuda graph begin. This can take up to several minutes. avail mem=6.90 GB", r)
        end = t + 1 + capture_s
        at(end, f"Capture cuda graph end. Time elapsed: {capture_s:.2f} s. mem usage=0.50 GB. avail mem=6.40 GB.", r)
        at(end + 1, "max_total_num_tokens=100000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
           "max_running_requests=64, context_len=8192, available_gpu_mem=6.40 GB", r)  # fmt: skip
        cap_end = max(cap_end, end + 1)
    at(cap_end + 1, "INFO:     Started server process [100]")
    at(cap_end + 1, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    at(cap_end + 2, 'INFO:     127.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK')
    if ready:
        at(cap_end + 3, "The server is fired up and ready to roll!")
    return "\n".join(text for _, _, text in sorted(events)) + "\n"


# -- reading what was drawn --------------------------------------------------------------------------


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.chunks: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)


def page_text(page: str) -> str:
    parser = _Text()
    parser.feed(page)
    return " ".join(parser.chunks)


def inline_svg(page: str) -> ET.Element:
    m = re.search(r"<svg\b.*?</svg>", page, re.DOTALL)
    assert m, "no inline SVG in the page"
    return ET.fromstring(m.group(0))


def texts(svg: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in svg.iter(f"{SVG_NS}text")]


def by_class(svg: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in svg.iter() if cls in (e.get("class") or "").split()]


def row_labels(svg: ET.Element) -> list[tuple[str, float]]:
    """(label, y of the row's middle) for each Gantt row, top to bottom."""
    out = []
    for t in by_class(svg, "lp-row-label"):
        title = t.find(f"{SVG_NS}title")
        label = (title.tail if title is not None else t.text) or ""
        out.append((label.strip(), float(t.get("y", "0")) - 4))
    return out


def marker_row(svg: ET.Element, element: ET.Element) -> str:
    circle = element if element.tag == f"{SVG_NS}circle" else element.find(f"{SVG_NS}circle")
    assert circle is not None
    cy = float(circle.get("cy", "0"))
    return min(row_labels(svg), key=lambda lr: abs(lr[1] - cy))[0]


def assert_bars_do_not_overlap(svg: ET.Element) -> None:
    """On one lane of one row, bars follow each other: overlapping phases go in lanes."""
    lanes: dict[float, list[tuple[float, float, str]]] = {}
    for bar in by_class(svg, "lp-bar"):
        x, w = float(bar.get("x", "0")), float(bar.get("width", "0"))
        if w > 3:  # a zero-length phase is drawn 2 px wide at its neighbour's edge
            lanes.setdefault(float(bar.get("y", "0")), []).append((x, x + w, bar.get("class", "")))
    for y, bars in lanes.items():
        bars.sort()
        for (_, end, a), (start, _, b) in itertools.pairwise(bars):
            assert end <= start + 0.5, f"{a} and {b} overlap at y={y}"


def report_for(path: Path) -> Report:
    expect = {"mem_fraction_static": "0.88"} if path.name in ("kv_cache_insufficient.log", "stale_expect_mismatch.log") else None
    return parse_file(str(path), expect=expect)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``logphase ARGS`` in this process (no interpreter start-up per call), its output as text."""
    done = logphase_cli(*args)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def assert_self_contained(page: str) -> None:
    lowered = page.lower()
    assert "<script" not in lowered and "<link" not in lowered and "@import" not in lowered and "@font-face" not in lowered
    assert not re.search(r"\b(?:src|href)\s*=", lowered), "nothing may be loaded from elsewhere"
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"} | _log_urls(page), urls
    assert all(u.startswith("url(#") for u in re.findall(r"url\([^)]*\)", page))


def _log_urls(page: str) -> set[str]:
    # URLs quoted from the log (an error message, the config) are text, not references
    return {u for u in re.findall(r"https?://[^\s\"'<>)]+", page_text(page))}


# -- every fixture ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=[p.stem for p in ALL_FIXTURES])
def test_every_fixture_draws_its_phases_failure_and_memory(path: Path) -> None:
    report = report_for(path)
    page = render_html(report)
    assert_self_contained(page)
    text = page_text(page)
    svg = inline_svg(page)
    drawn = " ".join(texts(svg))
    for p in report.phases:
        assert p.name.value in text, p.name.value
        assert by_class(svg, f"lp-{p.name.value}"), f"no bar for {p.name.value}"
    # one row for the server, one per rank (fixtures have at most 8 ranks)
    labels = [label for label, _ in row_labels(svg)]
    assert labels == ["server (all ranks)", *report.ranks]
    # every bar inside the plot
    for bar in by_class(svg, "lp-bar"):
        x, w = float(bar.get("x", "0")), float(bar.get("width", "0"))
        assert x >= PLOT_X - 0.01 and x + w <= PLOT_X + PLOT_W + 16, (bar.get("class"), x, w)
    assert_bars_do_not_overlap(svg)
    # the time axis, both ways (a window on a traceback may hold no phase with a time)
    if any(p.start for p in report.phases):
        assert any(re.fullmatch(r"\d\d:\d\d(:\d\d)?", t) for t in texts(svg)), "no wall-clock tick"
        assert any(re.fullmatch(r"\+\d+ s|\+\d+ min|\+\d+:\d\d", t) for t in texts(svg)), "no since-launch tick"
    f = report.failure
    if f is None:
        assert not by_class(svg, "lp-failure-marker") and "✖" not in drawn
    else:
        assert f.cause.value in text and f.cause.value in drawn
        assert f"line {f.line}" in text
        assert f.hint.split(":")[0] in text
        assert len(by_class(svg, "lp-failure-marker")) == 1
        assert len(by_class(svg, "lp-echo")) == len(f.consequences)
    if report.memory.avail_gb:
        assert by_class(svg, "lp-mem-point")
        # the memory-pressure threshold is about CUDA graph capture: only on runs that reached it
        reached_capture = any(p.name.value == "cuda_graph_capture" for p in report.phases)
        assert bool(by_class(svg, "lp-threshold")) == reached_capture
    for w in report.warnings:
        assert w.kind in text
    # the SVG alone: valid XML, the same facts
    alone = render_svg(report)
    assert_self_contained(alone)
    root = ET.fromstring(alone)
    alone_text = " ".join(texts(root))
    assert all(p.name.value in alone_text for p in report.phases)
    assert f is None or f.cause.value in alone_text
    assert render_html(report) == page, "the picture must not depend on anything but the report"


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=[p.stem for p in ALL_FIXTURES])
def test_report_command_on_every_fixture(path: Path, tmp_path: Path) -> None:
    report = report_for(path)
    out, svg = tmp_path / "startup.html", tmp_path / "startup.svg"
    result = cli("report", str(path), "-o", str(out), "--svg", str(svg))
    assert result.returncode == {"ready": 0, "failed": 1, "starting": 3}[report.outcome], result.stderr
    assert out.read_text().startswith("<!DOCTYPE html>") and "Startup timeline" in out.read_text()
    ET.fromstring(svg.read_text())
    assert report.outcome.upper() in result.stdout


# -- the failure on the right row -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("kv_cache_insufficient.log", "TP0"),
        ("nccl_error.log", "TP3"),
        ("oom_killed.log", "TP1"),
        ("torchrun_rank_crash.log", "TP1"),  # torchrun's rank1 is the process that tags its lines TP1
        ("port_in_use.log", "server (all ranks)"),
    ],
)
def test_failure_marker_sits_on_the_failing_rank(name: str, row: str, tmp_path: Path) -> None:
    out = tmp_path / "p.html"
    cli("report", str(FIXTURES / name), "-o", str(out))
    svg = inline_svg(out.read_text())
    (marker,) = by_class(svg, "lp-failure-marker")
    assert marker_row(svg, marker) == row


def test_consequences_are_placed_at_their_own_line(tmp_path: Path) -> None:
    out = tmp_path / "p.html"
    cli("report", str(FIXTURES / "kv_cache_insufficient.log"), "-o", str(out))
    svg = inline_svg(out.read_text())
    rows = sorted(marker_row(svg, e) for e in by_class(svg, "lp-echo"))
    # line 51: the main process's sigquit; line 52: TP1's identical traceback
    assert rows == ["TP1", "server (all ranks)"]
    titles = [e.find(f"{SVG_NS}title").text for e in by_class(svg, "lp-echo")]  # type: ignore[union-attr]
    assert any("line 51" in t for t in titles) and any("line 52" in t for t in titles)  # type: ignore[operator]


def test_failure_time_without_the_log_lines_falls_back_to_the_report() -> None:
    report = parse_file(str(FIXTURES / "kv_cache_insufficient.log"))
    tl = build_timeline(report)  # no line context: the report alone
    assert tl.failure is not None and tl.failure.x == pytest.approx(report.total_startup_s)


# -- runs, exit codes, input errors ------------------------------------------------------------------------


def test_run_option_draws_another_run(tmp_path: Path) -> None:
    log = FIXTURES / "stale_two_runs.log"
    first, last = tmp_path / "1.html", tmp_path / "2.html"
    r1 = cli("report", str(log), "--run", "1", "-o", str(first))
    r2 = cli("report", str(log), "-o", str(last))
    assert (r1.returncode, r2.returncode) == (1, 0)
    assert "kv_cache_insufficient_memory" in page_text(first.read_text())
    assert "run 1 of 2" in page_text(first.read_text()) and "run 2 of 2" in page_text(last.read_text())
    assert "ready" in " ".join(texts(inline_svg(last.read_text())))


@pytest.mark.parametrize("args", [["--run", "3"], ["--run", "0"], ["--run", "-1"]])
def test_run_out_of_range_is_one_line_exit_2(args: list[str], tmp_path: Path) -> None:
    result = cli("report", str(FIXTURES / "stale_two_runs.log"), *args, "-o", str(tmp_path / "x.html"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr and "run" in result.stderr
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/nonexistent/server.log"], "no such file"),
        ([str(FIXTURES / "tp1_success.log"), "-o", "/nonexistent/dir/x.html"], "cannot write"),
        ([str(FIXTURES / "tp1_success.log"), "--expect", "nonsense"], "KEY=VALUE"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], message: str) -> None:
    result = cli("report", *args)
    assert result.returncode == 2 and message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_stdin_and_stdout(tmp_path: Path) -> None:
    data = (FIXTURES / "kv_cache_insufficient.log").read_bytes()
    result = subprocess.run(
        [sys.executable, "-m", "logphase", "report", "-", "-o", "-"], input=data, capture_output=True, timeout=60
    )
    assert result.returncode == 1
    page = result.stdout.decode()
    assert page.startswith("<!DOCTYPE html>") and "kv_cache_insufficient_memory" in page
    assert "wrote stdout" in result.stderr.decode()


def test_expect_shows_the_stale_log_warning(tmp_path: Path) -> None:
    out = tmp_path / "p.html"
    cli("report", str(FIXTURES / "kv_cache_insufficient.log"), "--expect", "mem_fraction_static=0.88", "-o", str(out))
    text = page_text(out.read_text())
    assert "stale_log" in text and "0.88" in text and "mem_fraction_static" in text


# -- scale: ranks --------------------------------------------------------------------------------------------


def test_one_rank() -> None:
    report = parse_file(str(FIXTURES / "tp1_success.log"))
    svg = inline_svg(render_html(report))
    assert [label for label, _ in row_labels(svg)] == ["server (all ranks)", "TP0"]
    assert not any("thin:" in t for t in texts(svg)), "no 'other ranks' legend with one rank"


def test_sixty_four_identical_ranks_share_a_row() -> None:
    report = parse_text(synthetic_log(ranks=64))
    assert len(report.ranks) == 64
    page = render_html(report)
    svg = inline_svg(page)
    labels = [label for label, _ in row_labels(svg)]
    assert labels == ["server (all ranks)", "TP0–TP63 (64)"]
    assert "64 ranks in 1 distinct timelines" in page_text(page)


def test_sixty_four_ranks_in_a_few_groups() -> None:
    # a slow node: TP24..TP31 load weights 30 s longer
    report = parse_text(synthetic_log(ranks=64, slow={r: 30.0 for r in range(24, 32)}))
    svg = inline_svg(render_html(report))
    labels = [label for label, _ in row_labels(svg)]
    assert labels[0] == "server (all ranks)" and len(labels) <= MAX_RANK_ROWS + 2
    assert "TP24–TP31 (8)" in labels
    assert any(label.startswith("TP0–TP23") for label in labels)
    # the server row: the slow node still loads weights while the others capture graphs
    assert_bars_do_not_overlap(svg)
    lanes = {b.get("y") for b in by_class(svg, "lp-bar") if "lp-cuda_graph_capture" in (b.get("class") or "")}
    assert len(lanes) == 3, "server row (its own lane), and the two groups"
    assert "out of step" in page_text(render_html(report))


def test_sixty_four_distinct_ranks_are_summarised_and_the_failing_rank_keeps_its_row() -> None:
    report = parse_text(synthetic_log(ranks=64, slow={r: r * 0.5 for r in range(64)}, fail_rank=17))
    assert report.failure is not None and report.failure.rank == "TP17"
    page = render_html(report)
    svg = inline_svg(page)
    labels = [label for label, _ in row_labels(svg)]
    assert labels == ["server (all ranks)", "earliest rank", "median rank", "latest rank", "TP17"]
    (marker,) = by_class(svg, "lp-failure-marker")
    assert marker_row(svg, marker) == "TP17"
    assert "earliest, median and latest" in page_text(page) and "TP17" in page_text(page)
    # the picture does not grow with the ranks: 64 memory lines, one chart
    assert len(by_class(svg, "lp-memory")) == 1


def test_row_height_stays_bounded_at_64_ranks() -> None:
    for slow in ({}, {r: r * 0.5 for r in range(64)}):
        svg = ET.fromstring(render_svg(parse_text(synthetic_log(ranks=64, slow=slow))))
        assert len(row_labels(svg)) <= MAX_RANK_ROWS + 2
        assert float(svg.get("height", "0")) < 1000


def test_compress_ranks() -> None:
    assert compress_ranks(["TP0", "TP1", "TP2", "TP5"]) == "TP0–TP2, TP5"
    assert compress_ranks(["TP0", "TP1"]) == "TP0, TP1"
    assert compress_ranks(["DP0 TP0 EP0"]) == "DP0 TP0 EP0"
    assert compress_ranks([f"TP{i}" for i in range(0, 40, 2)], 20).endswith("…")


# -- scale: time ------------------------------------------------------------------------------------------


def _ticks(svg: ET.Element) -> list[str]:
    return [t for t in texts(svg) if re.fullmatch(r"\+\d+ s|\+\d+ min|\+\d+:\d\d|\+\d+ h", t)]


def test_twenty_second_startup() -> None:
    report = parse_text(synthetic_log(ranks=2, load_s=5, capture_s=2))
    assert report.total_startup_s is not None and report.total_startup_s <= 20
    svg = inline_svg(render_html(report))
    ticks = _ticks(svg)
    assert 4 <= len(ticks) <= 14 and all(t.endswith(" s") for t in ticks), ticks
    assert "5.0 s" in texts(svg)  # the weight-loading duration written on its bar


def test_forty_minute_startup() -> None:
    report = parse_text(synthetic_log(ranks=8, load_s=39 * 60, capture_s=90))
    assert report.total_startup_s is not None and 40 * 60 <= report.total_startup_s <= 45 * 60
    svg = inline_svg(render_html(report))
    ticks = _ticks(svg)
    assert 4 <= len(ticks) <= 14 and all("min" in t for t in ticks), ticks
    drawn = texts(svg)
    assert "weight_loading 39.0 min" in drawn and "39.0 min" in drawn
    # the 1-second memory_pool is still drawn, at least 2 px wide, without a label that does not fit
    pools = [b for b in by_class(svg, "lp-memory_pool")]
    assert pools and all(float(b.get("width", "0")) >= 2 for b in pools)
    wall = [t for t in drawn if re.fullmatch(r"\d\d:\d\d", t)]
    assert len(wall) >= 4, "wall-clock ticks on whole minutes"


def test_fmt_duration() -> None:
    assert [fmt_duration(x) for x in (0.0, 3.04, 32.0, 119.0, 275.0, 2400.0, 9000.0, None)] == [
        "0.0 s",
        "3.0 s",
        "32 s",
        "119 s",
        "4.6 min",
        "40.0 min",
        "2.5 h",
        "?",
    ]


# -- missing timestamps -------------------------------------------------------------------------------------


def test_no_timestamps_at_all_is_drawn_in_order() -> None:
    report = parse_text(synthetic_log(ranks=1, fail_rank=0, stamps=False))
    assert all(p.start is None for p in report.phases) and report.failure is not None
    page = render_html(report)
    svg = inline_svg(page)
    drawn = " ".join(texts(svg))
    assert "no timestamps" in drawn and "not to scale" in page_text(page)
    for p in report.phases:
        assert p.name.value in drawn
    bars = by_class(svg, "lp-bar")
    assert bars and all("lp-unknown" in (b.get("class") or "") for b in bars)
    xs = [float(b.get("x", "0")) for b in bars if "lp-" in (b.get("class") or "")]
    assert len(set(xs)) >= len(report.phases), "phases side by side, in order"
    assert len(by_class(svg, "lp-failure-marker")) == 1


def test_some_phases_without_timestamps() -> None:
    report = parse_file(str(FIXTURES / "kv_cache_insufficient.log"))
    data = report.model_dump()
    for p in data["phases"]:
        if p["name"] == "distributed_init":
            p["start"] = p["end"] = p["duration_s"] = None
            for span in p["ranks"].values():
                span["start"] = span["end"] = span["duration_s"] = None
    broken = Report.model_validate(data)
    page = render_html(broken)
    svg = inline_svg(page)
    unknown = by_class(svg, "lp-unknown")
    assert unknown and all("lp-distributed_init" in (b.get("class") or "") for b in unknown)
    assert len(unknown) == 1 + len(broken.ranks)
    # drawn dashed between launch and weight loading, and said in words
    launch = by_class(svg, "lp-launch")[0]
    weights = by_class(svg, "lp-weight_loading")[0]
    dist = unknown[0]
    assert float(launch.get("x", "0")) < float(dist.get("x", "0")) < float(weights.get("x", "0"))
    assert "distributed_init: no timestamps" in page_text(page)
    assert "no timestamp" in page_text(page)  # the phase table
    for p in broken.phases:
        assert p.name.value in page_text(page)


def test_an_open_phase_of_a_starting_server() -> None:
    report = parse_file(str(FIXTURES / "stops_during_capture.log"))
    svg = inline_svg(render_html(report))
    opened = by_class(svg, "lp-open")
    assert opened and all("lp-cuda_graph_capture" in (b.get("class") or "") for b in opened)
    assert any(t.endswith("s+") for t in texts(svg)), "an open phase's duration is a lower bound"


def test_empty_log(tmp_path: Path) -> None:
    log = tmp_path / "empty.log"
    log.write_text("")
    out = tmp_path / "p.html"
    result = cli("report", str(log), "-o", str(out))
    # an empty file is no log to draw: one line, exit 2 (issue 18), and no page
    assert result.returncode == 2 and "empty" in result.stderr and result.stderr.count("\n") == 1
    assert not out.exists()


def test_colours_are_distinct_per_phase() -> None:
    assert len(set(PHASE_COLORS.values())) == len(PHASE_COLORS)


def test_control_characters_in_an_error_keep_the_svg_and_page_well_formed() -> None:
    """Issue 30, point 5: an error text holding control characters (a stray byte, an escape code the
    log kept, a form feed) made the SVG ill-formed XML. They are shown escaped, as Python writes them."""
    log = (FIXTURES / "kv_cache_insufficient.log").read_text().replace(
        "RuntimeError: Not enough memory.", "RuntimeError: Not enough\x01 memory\x0b\x0c\x7f\x9b."
    )
    report = parse_text(log, source="weird\x02name.log")
    assert report.failure is not None and "\x01" in report.failure.message
    svg = render_svg(report)
    ET.fromstring(svg)  # well-formed: raises otherwise
    assert "Not enough\\x01 memory\\x0b\\x0c\\x7f\\x9b." in svg
    page = render_html(report)
    inline_svg(page)  # well-formed too
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", page)
