"""The model of the picture: from a report to rows of bars, markers and memory points, in seconds
since launch (or in phase order when the log has no timestamps). No drawing here."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from logphase.faces.timeline.style import LANE_H, MAX_RANK_ROWS, MAX_ROWS, ROW_H, compress_ranks, parse_ts
from logphase.faces.wording import fmt_duration
from logphase.reporting.report import FailureReport, PhaseReport, Report, UnaccountedReport, rank_sort_key, resolve_rank
from logphase.vocabulary.phases import Phase

# -- the model of the picture ----------------------------------------------------------------------


@dataclass
class Bar:
    phase: Phase
    x0: float | None  # seconds since launch (ordinal position when the run has no timestamps)
    x1: float | None
    duration: float | None
    kind: str = "closed"  # closed, open (still running), cut (interrupted by the failure), failed, unknown
    title: str = ""
    lane: int = 0  # phases that overlap in time (the server row of ranks out of step) go in lanes


@dataclass
class Row:
    label: str
    kind: str  # server, node (a node's ranks together, --merge), rank, group, summary
    ranks: list[str] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    title: str = ""
    lanes: int = 1

    @property
    def height(self) -> float:
        return ROW_H + (self.lanes - 1) * LANE_H


@dataclass
class Mark:
    x: float
    row: int
    title: str


@dataclass
class Timeline:
    report: Report
    t0: datetime | None
    span: float
    ordinal: bool
    rows: list[Row]
    notes: list[str]
    failure: Mark | None
    echoes: list[Mark]
    ready_x: float | None
    memory: dict[str, list[tuple[float, float, str]]]  # rank -> [(x, GB, boundary)]
    memory_unplaced: list[str]
    gaps: list[tuple[float, float, UnaccountedReport]] = field(default_factory=list)  # (x0, x1, gap)


def seconds_since(t0: datetime | None, ts: str | None) -> float | None:
    when = parse_ts(ts)
    if when is None or t0 is None:
        return None
    return (when - t0).total_seconds()


# seconds since launch of a timestamp of the report (None when it has none, or the run has no launch time)
Seconds = Callable[[str | None], float | None]


def build_timeline(report: Report, nodes: Mapping[str, str] | None = None) -> Timeline:
    """``nodes`` (rank -> node, from a merged report) draws a row group per node: the node's row,
    then its ranks."""
    t0 = _first_stamp(report)
    ordinal = t0 is None
    sec: Seconds = partial(seconds_since, t0)
    notes: list[str] = []
    tf = None if ordinal else _failure_time(report, sec)
    rows = [_server_row(report, sec, tf), *_rank_rows(report, nodes, sec, tf, notes)]
    _lay_out(rows, ordinal, notes)
    end = _drawn_end(rows, tf)
    failure_mark, echoes, end = _failure_marks(report, rows, sec, tf, end)
    if ordinal:
        end = max(float(len(report.phases)), 1.0)
    memory, unplaced = _memory_points(report, sec, ordinal)
    return Timeline(
        report=report,
        t0=t0,
        span=max(end, 1.0),
        ordinal=ordinal,
        rows=rows,
        notes=notes,
        failure=failure_mark,
        echoes=echoes,
        ready_x=_ready_x(report, rows[0]),
        memory=memory,
        memory_unplaced=unplaced,
        gaps=[] if ordinal else _gaps(report, sec),
    )


def _first_stamp(report: Report) -> datetime | None:
    """The launch of the picture: the earliest time of any phase, on the server row or a rank's."""
    stamps: list[datetime] = []
    for p in report.phases:
        for ts in (p.start, p.end, *(t for s in p.ranks.values() for t in (s.start, s.end))):
            when = parse_ts(ts)
            if when is not None:
                stamps.append(when)
    return min(stamps) if stamps else None


def _failure_time(report: Report, sec: Seconds) -> float | None:
    """When the failure struck: its own line's time, else where the report ends startup, else the
    end of its phase, else the end of the last bar."""
    failure = report.failure
    if failure is None:
        return None
    for estimate in (_failure_line_time, _launch_plus_startup, _failing_phase_end):
        when = estimate(report, failure, sec)
        if when is not None:
            return when
    return max((_bar_end(p, sec) or 0.0 for p in report.phases), default=0.0)


def _failure_line_time(report: Report, failure: FailureReport, sec: Seconds) -> float | None:
    return sec(failure.ts)


def _launch_plus_startup(report: Report, failure: FailureReport, sec: Seconds) -> float | None:
    if report.total_startup_s is None:
        return None
    launch = next((p for p in report.phases if p.name is Phase.LAUNCH and p.start), None)
    return None if launch is None else (sec(launch.start) or 0.0) + report.total_startup_s


def _failing_phase_end(report: Report, failure: FailureReport, sec: Seconds) -> float | None:
    failing = next((p for p in report.phases if p.name == failure.phase), None)
    return sec(failing.end) if failing is not None and failing.end else None


def _server_row(report: Report, sec: Seconds, tf: float | None) -> Row:
    server = Row(label="server", kind="server", title="the server as a whole: each phase from its first to its last rank")
    failure = report.failure
    for i, p in enumerate(report.phases):
        struck = failure is not None and failure.phase == p.name
        server.bars.append(_bar(report, p, p.start, p.end, p.duration_s, sec, tf, i, struck))
    return server


def _rank_rows(report: Report, nodes: Mapping[str, str] | None, sec: Seconds, tf: float | None, notes: list[str]) -> list[Row]:
    """The rows under the server's: its ranks (grouped or summarised when many), under a row per
    node when the ranks are on several."""
    rank_rows = [_rank_row(report, r, sec, tf) for r in report.ranks]
    node_names = list(dict.fromkeys(nodes[r] for r in report.ranks if r in nodes)) if nodes else []
    if len(node_names) <= 1 or nodes is None:
        return _collapse(report, rank_rows, notes)
    rows: list[Row] = []
    for node in node_names:
        members = [row for row in rank_rows if nodes.get(row.ranks[0]) == node]
        rows.append(_node_row(node, members))
        rows.extend(_collapse(report, members, notes))
    return rows


def _lay_out(rows: list[Row], ordinal: bool, notes: list[str]) -> None:
    """Bars without timestamps placed between their neighbours, overlapping bars in lanes."""
    if ordinal:
        notes.append("this run has no timestamps: phases are shown in order, not to scale")
    else:
        _place_unknown(rows, notes)
    for row in rows:
        _assign_lanes(row)
    if rows[0].lanes > 1:
        notes.append("the ranks are out of step: on the server row, phases that overlap in time are drawn one under the other")


def _drawn_end(rows: list[Row], tf: float | None) -> float:
    """The latest time drawn: the end of the last bar, or the failure when later."""
    end = max([0.0, *(max(b.x1 or 0.0, b.x0 or 0.0) for row in rows for b in row.bars)])
    return end if tf is None else max(end, tf)


def _failure_marks(
    report: Report, rows: list[Row], sec: Seconds, tf: float | None, end: float
) -> tuple[Mark | None, list[Mark], float]:
    """The failure's marker (at ``tf``, else at ``end``) and its consequences' (at their own time,
    else at the failure's); and the end of the drawing, pushed out to the latest of them."""
    failure = report.failure
    if failure is None:
        return None, [], end
    failure_mark = Mark(
        x=tf if tf is not None else end,
        row=_row_of(rows, failure.rank),
        title=f"{failure.cause.value} on {failure.rank or 'the server'}, line {failure.line}: {failure.message[:300]}",
    )
    echoes: list[Mark] = []
    for c in failure.consequences:
        x = sec(c.ts)
        x = failure_mark.x if x is None else x
        end = max(end, x)
        echoes.append(Mark(x=x, row=_row_of(rows, c.rank), title=f"consequence, line {c.line}: {c.message[:200]}"))
    return failure_mark, echoes, end


def _ready_x(report: Report, server: Row) -> float | None:
    if not any(p.name is Phase.READY for p in report.phases):
        return None
    return next((b.x0 for b in server.bars if b.phase is Phase.READY), None)


def _gaps(report: Report, sec: Seconds) -> list[tuple[float, float, UnaccountedReport]]:
    """Time between phases that no phase accounts for, where both its ends have a time."""
    gaps = []
    for gap in report.unaccounted:
        x0, x1 = sec(gap.start), sec(gap.end)
        if x0 is not None and x1 is not None:
            gaps.append((x0, x1, gap))
    return gaps


def _bar_end(p: PhaseReport, sec: Callable[[str | None], float | None]) -> float | None:
    start = sec(p.start)
    end = sec(p.end)
    if end is None and start is not None and p.duration_s is not None:
        end = start + p.duration_s
    return end


# what a bar's tooltip adds after its duration, by the bar's kind
_KIND_WORDS = {
    "closed": "",
    "open": " (still running at the end of the log)",
    "cut": " (never finished: the failure stopped it)",
    "failed": " (the failure struck here)",
    "unknown": " (no timestamp for its start)",
}


def _bar(
    report: Report,
    p: PhaseReport,
    start: str | None,
    end: str | None,
    duration: float | None,
    sec: Seconds,
    tf: float | None,
    index: int,
    failing: bool,
) -> Bar:
    name = p.name
    if sec(start) is None and not any(parse_ts(x) for x in (start, end)):
        return _untimed_bar(report, name, duration, index)
    x0, x1, kind = _extent(report, sec(start), sec(end), duration, tf, failing)
    dur = _drawn_duration(x0, x1, duration, kind)
    if failing and kind != "unknown":
        kind = "failed"
    when = f", from {start.replace('T', ' ')}" if start else ""
    return Bar(name, x0, x1, dur, kind, f"{name.value}: {fmt_duration(dur)}{when}{_KIND_WORDS[kind]}")


def _untimed_bar(report: Report, name: Phase, duration: float | None, index: int) -> Bar:
    """A phase with neither start nor end time: in phase order when the whole run lacks them, else
    unplaced (placed later between its neighbours)."""
    if report.phases and all(parse_ts(q.start) is None for q in report.phases):
        return Bar(name, index + 0.04, index + 0.96, None, "unknown", f"{name.value}: no timestamps")
    return Bar(name, None, None, duration, "unknown", f"{name.value}: no timestamps")


def _extent(
    report: Report, x0: float | None, x1: float | None, duration: float | None, tf: float | None, failing: bool
) -> tuple[float | None, float | None, str]:
    """Where a bar starts and ends and its kind (closed, unknown, open or cut), from the times it has."""
    if x0 is None:  # an end without a start
        return (x1 - duration if x1 is not None and duration is not None else x1), x1, "unknown"
    if x1 is not None:
        return x0, x1, "closed"
    x1 = x0 + (duration or 0.0)
    if report.outcome != "failed":
        return x0, x1, "open"
    # never closed: the failure stopped it (on the failing rank, exactly at the failure)
    if tf is not None and tf >= x0:
        x1 = tf if failing else min(x1, tf)
    return x0, x1, "cut"


def _drawn_duration(x0: float | None, x1: float | None, duration: float | None, kind: str) -> float | None:
    """The report's duration; a cut bar's is as drawn (to the failure); measured when the report has none."""
    measured = x1 - x0 if x0 is not None and x1 is not None else None
    if kind == "cut" and measured is not None:
        return measured
    return duration if duration is not None else measured


def _rank_row(report: Report, rank: str, sec: Seconds, tf: float | None) -> Row:
    row = Row(label=rank, kind="rank", ranks=[rank], title=rank)
    failure = report.failure
    for i, p in enumerate(report.phases):
        span = p.ranks.get(rank)
        if span is None:
            continue
        failing = failure is not None and failure.phase == p.name and _same_rank(failure.rank, rank, report.ranks)
        row.bars.append(_bar(report, p, span.start, span.end, span.duration_s, sec, tf, i, failing))
    return row


def _node_row(node: str, members: list[Row]) -> Row:
    """A node's row: each phase from its first rank's start to its last rank's end."""
    row = Row(label=node, kind="node", ranks=[m.ranks[0] for m in members], title=f"{node}: each phase across its ranks")
    by_phase: dict[Phase, list[Bar]] = {}
    for member in members:
        for b in member.bars:
            by_phase.setdefault(b.phase, []).append(b)
    for phase, bars in by_phase.items():
        x0s = [b.x0 for b in bars if b.x0 is not None]
        x1s = [b.x1 for b in bars if b.x1 is not None]
        x0, x1 = (min(x0s) if x0s else None), (max(x1s) if x1s else None)
        kinds = [b.kind for b in bars]
        kind = next((k for k in ("failed", "cut", "open", "unknown") if k in kinds), "closed")
        duration = x1 - x0 if x0 is not None and x1 is not None else None
        row.bars.append(Bar(phase, x0, x1, duration, kind, f"{node} {phase.value}: {fmt_duration(duration)}"))
    return row


def _same_rank(wanted: str | None, rank: str, ranks: list[str]) -> bool:
    return wanted is not None and resolve_rank(wanted, ranks) == rank


def _row_of(rows: list[Row], rank: str | None) -> int:
    every = [r for row in rows for r in row.ranks]
    resolved = resolve_rank(rank, every)
    if resolved is None:
        return 0
    for i, row in enumerate(rows):
        if row.kind != "summary" and resolved in row.ranks:
            return i
    return 0


def _collapse(report: Report, rank_rows: list[Row], notes: list[str]) -> list[Row]:
    """Many ranks: one row per group of ranks whose phases are identical; still too many rows: the
    earliest, median and latest rank per phase, and the failing rank's own row."""
    n = len(rank_rows)
    if n <= MAX_RANK_ROWS:
        return rank_rows
    failing = resolve_rank(report.failure.rank, report.ranks) if report.failure else None
    groups = _identical_timelines(rank_rows, failing)
    if len(groups) <= MAX_ROWS - 1:
        notes.append(
            f"{n} ranks in {len(groups)} distinct timelines: each row is a group of ranks whose phases are identical "
            "(the count is in brackets)"
        )
        return _group_rows(groups)
    notes.append(
        f"{n} ranks in {len(groups)} distinct timelines: the rank rows show, per phase, the earliest, median and "
        "latest start and end across ranks" + (f"; the failing rank {failing} has its own row" if failing else "")
    )
    rows = [_summary_row(report, rank_rows, label, pick) for label, pick in _SUMMARY_PICKS]
    return rows + [r for r in rank_rows if failing is not None and r.ranks[0] == failing]


def _identical_timelines(rank_rows: list[Row], failing: str | None) -> list[list[Row]]:
    """The rank rows grouped by their bars (the failing rank apart from ranks like it)."""
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for row in rank_rows:
        key: tuple[Any, ...] = tuple((b.phase, b.x0, b.x1, b.kind) for b in row.bars)
        if row.ranks[0] == failing:
            key = ("failing", *key)
        groups.setdefault(key, []).append(row)
    return list(groups.values())


def _group_rows(groups: list[list[Row]]) -> list[Row]:
    out: list[Row] = []
    for members in groups:
        ranks = [m.ranks[0] for m in members]
        label = compress_ranks(ranks, 24)
        if len(ranks) > 1:
            label += f" ({len(ranks)})"
        out.append(Row(label=label, kind="group", ranks=ranks, bars=members[0].bars, title=", ".join(ranks)))
    out.sort(key=lambda r: rank_sort_key(r.ranks[0]))
    return out


# the summary rows of too many distinct timelines: which start and end each takes per phase
_SUMMARY_PICKS: tuple[tuple[str, Callable[[list[float]], float]], ...] = (
    ("earliest rank", min),
    ("median rank", statistics.median_low),
    ("latest rank", max),
)


def _summary_row(report: Report, rank_rows: list[Row], label: str, pick: Callable[[list[float]], float]) -> Row:
    n = len(rank_rows)
    row = Row(label=label, kind="summary", ranks=[], title=f"{label} of {n}: per phase, the {label.split()[0]} start and end")
    for phase in [p.name for p in report.phases]:
        bar = _summary_bar(rank_rows, phase, pick)
        if bar is not None:
            row.bars.append(bar)
    return row


def _summary_bar(rank_rows: list[Row], phase: Phase, pick: Callable[[list[float]], float]) -> Bar | None:
    """The phase's bar picked from every rank's timed bar of it; its tooltip gives the spread of durations."""
    spans = [b for r in rank_rows for b in r.bars if b.phase is phase and b.x0 is not None and b.x1 is not None]
    if not spans:
        return None
    starts = [b.x0 for b in spans if b.x0 is not None]
    ends = [b.x1 for b in spans if b.x1 is not None]
    x0, x1 = pick(starts), pick(ends)
    durations = sorted(e - s for s, e in zip(starts, ends, strict=True))
    timed = {id(b) for b in spans}
    slowest = max((r for r in rank_rows for b in r.bars if id(b) in timed), key=lambda r: _dur(r, phase))
    title = (
        f"{phase.value} over {len(spans)} ranks: duration min {fmt_duration(durations[0])}, "
        f"median {fmt_duration(statistics.median_low(durations))}, max {fmt_duration(durations[-1])} "
        f"({slowest.ranks[0]})"
    )
    kinds = {b.kind for b in spans}
    kind = "open" if "open" in kinds and pick is max else "closed"
    return Bar(phase, x0, max(x0, x1), max(x1 - x0, 0.0), kind, title)


def _assign_lanes(row: Row) -> None:
    ends: list[float] = []
    for b in row.bars:
        x0 = b.x0 if b.x0 is not None else 0.0
        x1 = b.x1 if b.x1 is not None else x0
        for lane, end in enumerate(ends):
            if end <= x0 + 1e-6:
                b.lane = lane
                ends[lane] = x1
                break
        else:
            b.lane = len(ends)
            ends.append(x1)
    row.lanes = max(1, len(ends))


def _dur(row: Row, phase: Phase) -> float:
    return next(((b.x1 or 0.0) - (b.x0 or 0.0) for b in row.bars if b.phase is phase), 0.0)


def _place_unknown(rows: list[Row], notes: list[str]) -> None:
    """Phases without timestamps go between their row's known neighbours, drawn dashed."""
    missing: dict[str, list[str]] = {}
    for row in rows:
        for i, b in enumerate(row.bars):
            if b.x0 is not None and b.x1 is not None:
                continue
            before = [x for c in row.bars[:i] for x in (c.x0, c.x1) if x is not None]
            after = [x for c in row.bars[i + 1 :] for x in (c.x0, c.x1) if x is not None]
            lo = max(before) if before else (b.x1 if b.x1 is not None else 0.0)
            hi = min(after) if after else None
            b.x0 = lo if b.x0 is None else b.x0
            b.x1 = hi if b.x1 is None else b.x1
            b.kind = "unknown"
            b.duration = None
            missing.setdefault(b.phase.value, []).append(row.label)
    for phase, where in missing.items():
        who = "on the server row" if where == ["server"] else "on " + ", ".join(where[:4]) + (" …" if len(where) > 4 else "")
        notes.append(f"{phase}: no timestamps {who}; drawn dashed between the phases around it")


def _memory_points(report: Report, sec: Seconds, ordinal: bool) -> tuple[dict[str, list[tuple[float, float, str]]], list[str]]:
    """Each rank's free-memory readings placed at their phase boundary, in time order; the readings
    that have no time listed apart ('TP0 weight_loading_end')."""
    phases = {p.name.value: p for p in report.phases}
    out: dict[str, list[tuple[float, float, str]]] = {}
    unplaced: list[str] = []
    for rank, values in report.memory.avail_gb.items():
        points: list[tuple[float, float, str]] = []
        for boundary, gb in values.items():
            x = _boundary_x(report, phases, rank, boundary, sec, ordinal)
            if x is None:
                unplaced.append(f"{rank} {boundary}")
                continue
            points.append((x, gb, boundary))
        points.sort(key=lambda t: (t[0], _boundary_order(t[2])))
        if points:
            out[rank] = points
    return out, unplaced


def _boundary_x(
    report: Report, phases: Mapping[str, PhaseReport], rank: str, boundary: str, sec: Seconds, ordinal: bool
) -> float | None:
    """Where a boundary ('weight_loading_end') of ``rank`` is drawn: by phase order in a run without
    timestamps, else at the rank's own time of it, else the server row's."""
    name, _, edge = boundary.rpartition("_")
    p = phases.get(name)
    if p is None:
        return None
    if ordinal:
        index = [q.name.value for q in report.phases].index(name)
        return index + (0.04 if edge == "start" else 0.96)
    span = p.ranks.get(rank)
    ts = (span.start if edge == "start" else span.end) if span is not None else None
    if ts is None:
        ts = p.start if edge == "start" else p.end
    x = sec(ts)
    if x is None and edge == "end" and span is not None:
        began = sec(span.start)
        if began is not None:  # an end without its time: the start and the duration
            x = began + (span.duration_s or 0.0)
    return x


def _boundary_order(boundary: str) -> int:
    name, _, edge = boundary.rpartition("_")
    try:
        return Phase(name).order * 2 + (edge == "end")
    except ValueError:
        return 99


# -- drawing ---------------------------------------------------------------------------------------
