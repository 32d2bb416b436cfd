"""Several logs: the logs of one deployment read together.

    one Report per log -> servers (the nodes of a multi-node server; prefill, decode and router
    apart) -> per server: each node's clock skew, phases across nodes, the lagging rank, the root
    cause across nodes -> MergedReport

Works on reports alone (a log read now or a saved ``--json`` report), so every face can merge.
Node clocks differ: each node's times are moved onto the first node's clock by the skew measured
on an event all nodes pass together (distributed init completes when the last node joins; else a
collective NCCL's watchdog timed out on both nodes, by its sequence number), or taken as zero. The
root across nodes is chosen by what the lines say first (an error stated beats a failure without
its error beats an echo) and by time only among equals, so no skew turns an echo into the root.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Literal, TypeVar

from pydantic import BaseModel, Field

from logphase.folding.runs import duration_between, seconds_between
from logphase.packs import kept_regex
from logphase.packs.grammars import terminal_pattern
from logphase.reporting.build_report import gaps_between
from logphase.reporting.report import (
    SCHEMA_VERSION,
    Consequence,
    FailureReport,
    LinesReport,
    MemoryReport,
    Outcome,
    PhaseReport,
    RankSpan,
    Report,
    ShownName,
    TotalUnknown,
    rank_sort_key,
)
from logphase.vocabulary.causes import WAITED_ON_PEERS, Cause
from logphase.vocabulary.phases import PHASE_ORDER, Phase

NodeRole = Literal["server", "prefill", "decode", "router"]
_T = TypeVar("_T")

# the events every node of a server passes together, best first: (phase, edge)
_COMMON_EVENTS: tuple[tuple[Phase, Literal["start", "end"]], ...] = (
    (Phase.DISTRIBUTED_INIT, "end"),  # the rendezvous completes when the last node has joined
    (Phase.WEIGHT_LOADING, "start"),  # what every rank does right after it
)
_SEVERITY_ORDER = {"root": 0, "unstated": 1, "echo": 3}
# a node that timed out waiting for its peers (a collective, a rendezvous) states only that it
# waited: across nodes it is the echo of the node that stopped (its crash, even unstated, comes
# first), as in one log (causes.WAITED_ON_PEERS); across nodes the clocks cannot say which came first
_WAITED_ORDER = 2


# The vocabularies merge reads text with are grammar terminals (compiled on first use: reading a
# single log never needs them). PyTorch's NCCL watchdog says which collective it timed out on (its
# group, sequence number and kind) and how long it ran, so when it began: the ranks that wait in one
# collective began it together (groups 1-4 of grammars/shared/torch.lark's WATCHDOG_WORK).
@functools.cache
def _watchdog_work() -> re.Pattern[str]:
    return kept_regex.compile(terminal_pattern("torch", "WATCHDOG_WORK"))


@functools.cache
def _router_pattern(terminal: str) -> re.Pattern[bytes]:
    """A terminal of the router's grammar (grammars/sglang/router.lark), for its log's bytes."""
    return kept_regex.compile(terminal_pattern("router", terminal).encode())


class NodeClock(BaseModel):
    """How one node's clock relates to the first node's."""

    node: str = Field(description="node name: node<node_rank> from server_args, else the file's name")
    source: ShownName = Field(description="the log of that node")
    skew_s: float | None = Field(
        description="how far this node's clock is ahead of the first node's (negative: behind); its times are "
        "moved back by it. null when no event common to both nodes shows it: the skew is then taken as zero (times as printed)"
    )
    basis: str | None = Field(default=None, description="the common event the skew was measured on")


class Lagging(BaseModel):
    """The rank that held the others up most: in the phase where the ranks left furthest apart, or
    the node still in an earlier phase than the others."""

    phase: Phase = Field(description="the phase it lagged in")
    node: str = Field(description="its node")
    rank: str | None = Field(description="the rank, as the combined report names it; null for a whole node")
    behind_s: float | None = Field(description="how long after the first rank it left the phase (or has been in it)")


class ServerView(BaseModel):
    """One server of the deployment: a single log, or the logs of its nodes combined."""

    role: NodeRole = Field(description="server (plain), prefill or decode (disaggregation), router")
    nodes: list[str] = Field(description="its nodes, node 0 first")
    sources: list[ShownName] = Field(description="their logs, in the same order")
    clocks: list[NodeClock] = Field(description="each node's clock skew against the first node")
    rank_nodes: dict[str, str] = Field(description="each rank of the combined report -> its node")
    lagging: Lagging | None = Field(default=None, description="the rank or node that held the others up")
    report: Report = Field(description="the combined report; times on the first node's clock")


class MergedReport(BaseModel):
    """Several logs of one deployment (``--merge``)."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="version of this JSON contract")
    outcome: Outcome = Field(description="failed if any server failed, ready if every server is, else starting")
    servers: list[ServerView] = Field(description="the servers, in the order of their first log")
    nodes: list[Report] = Field(description="each log's own report, in the order given")


# -- grouping ---------------------------------------------------------------------------------------


def _role(report: Report, router: bool) -> NodeRole:
    if router:
        return "router"
    mode = str(report.config.get("disaggregation_mode") or "null")
    return "prefill" if mode == "prefill" else "decode" if mode == "decode" else "server"


def _server_key(report: Report, role: NodeRole, index: int) -> tuple[object, ...] | None:
    """Logs with the same key are nodes of one server: one multi-node launch (same model, same
    rendezvous address, same node count), each with its own --node-rank. None: the log's lines
    do not say which launch it belongs to (no server_args: torchrun workers, a window of a longer
    log), so it is a node of the deployment the user named with --merge."""
    config = report.config
    nnodes = config.get("nnodes")
    if role == "router":
        return ("alone", index)
    if not isinstance(nnodes, int):
        return None
    if nnodes < 2:
        return ("alone", index)  # its server_args say it is a whole server on one node
    return (role, config.get("model_path"), config.get("dist_init_addr"), nnodes, config.get("tp_size"))


def is_router_log(head: bytes) -> bool:
    """Whether a log's first bytes are the SGLang router's (it prints no server_args)."""
    return _router_pattern("ROUTER_LINE").search(head) is not None


def router_report(report: Report, text: bytes) -> Report:
    """The router's outcome from its own lines: ready once it says its workers are healthy (or it
    is ready), failed at an ERROR line or 'Error: ...' exit, else starting."""
    # a router's lines are not SGLang server lines: that is what it is, not a warning
    report = report.model_copy(update={"warnings": [w for w in report.warnings if w.kind != "no_sglang_output"]})
    error = _router_pattern("ROUTER_ERROR").search(text)
    if error is not None:
        line = text.count(b"\n", 0, error.start()) + 1
        message = error.group(0).decode("utf-8", "replace").strip()
        failure = FailureReport(
            cause=Cause.UNKNOWN,
            phase=Phase.LAUNCH,
            rank=None,
            line=line,
            message=message[:2000],
            hint="The router stopped: read its error line; a router waits for its prefill and decode workers "
            "(their URLs and bootstrap ports), so check that each worker is up and reachable from the router.",
        )
        return report.model_copy(update={"outcome": "failed", "phase": Phase.LAUNCH, "failure": failure})
    if _router_pattern("ROUTER_READY").search(text):
        return report.model_copy(update={"outcome": "ready", "phase": Phase.READY})
    return report.model_copy(update={"outcome": "starting", "phase": Phase.LAUNCH})


def merge(reports: Sequence[Report], routers: Iterable[int] = ()) -> MergedReport:
    """``reports`` in the order given; ``routers`` the indexes of the ones that are router logs."""
    router_set = set(routers)
    groups: dict[tuple[object, ...], list[int]] = {}
    roles: dict[tuple[object, ...], NodeRole] = {}
    unsaid: list[tuple[int, NodeRole]] = []
    for i, report in enumerate(reports):
        role = _role(report, i in router_set)
        key = _server_key(report, role, i)
        if key is None:
            unsaid.append((i, role))
            continue
        # each log's server is its own (detect.py's): logs of two servers are never nodes of one
        key = (report.server, *key)
        groups.setdefault(key, []).append(i)
        roles[key] = role
    for i, role in unsaid:
        # --merge means one deployment: a log that does not say which server it belongs to is a
        # node of the first multi-node server of its role (and of its server, when it says one),
        # else of the role's one server
        server = reports[i].server
        key = next(
            (k for k, r in roles.items() if r == role and k[1] != "alone" and server in (None, k[0])),
            (server, role, "nodes"),
        )
        groups.setdefault(key, []).append(i)
        roles[key] = role
    order = {key: min(members) for key, members in groups.items()}
    groups = {key: sorted(groups[key]) for key in sorted(groups, key=order.__getitem__)}
    servers = [_server(roles[key], [reports[i] for i in members]) for key, members in groups.items()]
    outcomes = {s.report.outcome for s in servers}
    outcome: Outcome = "failed" if "failed" in outcomes else "ready" if outcomes == {"ready"} else "starting"
    return MergedReport(outcome=outcome, servers=servers, nodes=list(reports))


# -- one server across nodes ------------------------------------------------------------------------


def _node_name(report: Report, taken: set[str]) -> str:
    rank = report.config.get("node_rank")
    name = f"node{rank}" if isinstance(rank, int) else report.source.rsplit("/", 1)[-1].removesuffix(".log")
    while name in taken:
        name += "'"
    taken.add(name)
    return name


def _node_rank(report: Report) -> int:
    rank = report.config.get("node_rank")
    return rank if isinstance(rank, int) else 0


def _server(role: NodeRole, members: list[Report]) -> ServerView:
    members = sorted(members, key=_node_rank)
    taken: set[str] = set()
    names = [_node_name(r, taken) for r in members]
    if len(members) == 1:
        return _single_node(role, members[0], names[0])
    clocks = [_clock(members[0], r, n) for r, n in zip(members, names, strict=True)]
    shifts = [c.skew_s or 0.0 for c in clocks]
    qualified = _qualified_ranks(members, names)
    rank_nodes = {q: n for names_of, n in zip(qualified, names, strict=True) for q in names_of.values()}
    combined = _combined(members, names, shifts, qualified, rank_nodes)
    return ServerView(
        role=role,
        nodes=names,
        sources=[r.source for r in members],
        clocks=clocks,
        rank_nodes=rank_nodes,
        lagging=_lagging(combined, rank_nodes, members, names, shifts),
        report=combined,
    )


def _single_node(role: NodeRole, report: Report, name: str) -> ServerView:
    """A server of one log: its report as it is."""
    return ServerView(
        role=role,
        nodes=[name],
        sources=[report.source],
        clocks=[NodeClock(node=name, source=report.source, skew_s=0.0)],
        rank_nodes=dict.fromkeys(report.ranks, name),
        report=report,
    )


def _qualified_ranks(members: list[Report], names: list[str]) -> list[dict[str, str]]:
    """Each node's ranks as the combined report names them: with the node's name when two nodes
    print the same rank tags (each node counts its ranks from 0), else as printed."""
    collide = len({rank for r in members for rank in r.ranks}) < sum(len(r.ranks) for r in members)
    return [{rank: f"{n} {rank}" if collide else rank for rank in r.ranks} for r, n in zip(members, names, strict=True)]


def _total_unknown(members: list[Report], timed: bool) -> TotalUnknown | None:
    """Why the nodes' total cannot be told: a node's (one that finished without a total of its own),
    else no phase with a time; None when it can."""
    for r in members:
        if r.total_startup_s is None and r.outcome != "starting":
            return r.total_unknown or "partial_log"  # (a report saved before the reason was kept)
    return None if timed else "no_time"


def _combined(
    members: list[Report], names: list[str], shifts: list[float], qualified: list[dict[str, str]], rank_nodes: dict[str, str]
) -> Report:
    """The nodes' reports as one, on the first node's clock."""
    phases = _phases(members, shifts, qualified)
    failure = _failure(members, shifts, qualified)
    leader = members[0]
    outcome: Outcome = "failed" if failure is not None else "ready" if leader.outcome == "ready" else "starting"
    phase = failure.phase if failure is not None else max((p.name for p in phases), key=lambda p: p.order, default=None)
    end = _end_time(members, shifts, outcome, failure)
    starts = [p.start for p in phases if p.start is not None]
    unknown = _total_unknown(members, bool(starts))
    return Report(
        source=" + ".join(r.source for r in members),
        server=_first_known(r.server for r in members),  # the members' (logs of two servers are never grouped)
        version=_first_known(r.version for r in members),
        outcome=outcome,
        phase=phase,
        phases=phases,
        unaccounted=gaps_between(phases),
        total_startup_s=None if unknown is not None else duration_between(min(starts), end),
        total_unknown=unknown,
        ranks=sorted(rank_nodes, key=rank_sort_key),
        runs=max(r.runs for r in members),
        run=leader.run,
        run_start_line=leader.run_start_line,
        run_last_line=leader.run_last_line,
        failure=failure,
        warnings=[
            w.model_copy(update={"message": f"{n}: {w.message}"}) for r, n in zip(members, names, strict=True) for w in r.warnings
        ],
        config=leader.config,
        config_line=leader.config_line,
        memory=_memory(members, qualified),
        lines=_lines(members),
        year_inferred=_first_known(r.year_inferred for r in members),
    )


def _first_known(values: Iterable[_T | None]) -> _T | None:
    """The first value a member's report knows (the first node's, else the next one's)."""
    return next((v for v in values if v is not None), None)


def _edge(report: Report, phase: Phase, edge: Literal["start", "end"]) -> str | None:
    for p in report.phases:
        if p.name is phase:
            return p.start if edge == "start" else p.end
    return None


def _clock(first: Report, node: Report, name: str) -> NodeClock:
    if node is first:
        return NodeClock(node=name, source=node.source, skew_s=0.0)
    for phase, edge in _COMMON_EVENTS:
        skew = seconds_between(_edge(first, phase, edge), _edge(node, phase, edge))
        if skew is not None:
            return NodeClock(node=name, source=node.source, skew_s=skew, basis=f"{phase.value} {edge}")
    theirs, ours = _timed_out_collectives(first), _timed_out_collectives(node)
    shared = sorted(set(theirs) & set(ours))
    if shared:
        group, seq, kind = shared[0]
        skew = seconds_between(theirs[shared[0]], ours[shared[0]])
        return NodeClock(node=name, source=node.source, skew_s=skew, basis=f"watchdog SeqNum={seq} ({kind}, group {group}) began")
    return NodeClock(node=name, source=node.source, skew_s=None)


def _timed_out_collectives(report: Report) -> dict[tuple[int, int, str], str]:
    """When each collective a watchdog timed out on this node began (the watchdog's time less how
    long it ran), by process group, sequence number and kind: the first rank's."""
    failure = report.failure
    if failure is None:
        return {}
    out: dict[tuple[int, int, str], str] = {}
    for message, ts in [(failure.message, failure.ts), *((c.message, c.ts) for c in failure.consequences)]:
        m = _watchdog_work().search(message)
        if m is None or ts is None:
            continue
        began = datetime.fromisoformat(ts) - timedelta(milliseconds=int(m.group(4)))
        key = (int(m.group(1) or 0), int(m.group(2)), m.group(3))
        out[key] = min(out.get(key, "~"), began.isoformat(timespec="microseconds"))
    return out


def shift(ts: str | None, seconds: float) -> str | None:
    """``ts`` moved back by ``seconds`` (onto the first node's clock), in the same ISO form."""
    if ts is None or not seconds:
        return ts
    moved = datetime.fromisoformat(ts) - timedelta(seconds=seconds)
    return moved.isoformat(timespec="microseconds" if moved.microsecond else "seconds")


# one node's report of a phase: (its report, its clock's skew, its ranks' names in the combined report, the phase)
_NodePhase = tuple[Report, float, dict[str, str], PhaseReport]


def _phases(members: list[Report], shifts: list[float], qualified: list[dict[str, str]]) -> list[PhaseReport]:
    out: list[PhaseReport] = []
    for phase in PHASE_ORDER:
        # ready is the server's moment: the first node's (the others only finish their schedulers)
        nodes = list(zip(members, shifts, qualified, strict=True))[: 1 if phase is Phase.READY else None]
        seen: list[_NodePhase] = [(r, s, q, p) for r, s, q in nodes for p in r.phases if p.name is phase]
        if seen:
            out.append(_phase_across_nodes(phase, seen))
    return out


def _phase_across_nodes(phase: Phase, seen: list[_NodePhase]) -> PhaseReport:
    """One phase on the common clock: from the first node in it to the last one out; open while any is in it."""
    start, end = _edges_across_nodes(seen)
    # an open phase lasts until the latest time any node has printed in it
    open_until = max((t for _, s, _, p in seen if (t := _open_end(p, s)) is not None), default=None)
    first_node = min(seen, key=lambda item: shift(item[3].start, item[1]) or "~")
    last_node = max(seen, key=lambda item: shift(item[3].end, item[1]) or "")
    return PhaseReport(
        name=phase,
        start=start,
        end=end,
        duration_s=duration_between(start, end if end is not None else open_until),
        first_line=first_node[3].first_line,
        last_line=last_node[3].last_line if end is not None else None,
        lower_bound=any(p.lower_bound for *_, p in seen),
        progress=next((p.progress for *_, p in reversed(seen) if p.progress is not None), None),
        ranks=_rank_spans(seen),
    )


def _edges_across_nodes(seen: list[_NodePhase]) -> tuple[str | None, str | None]:
    """The first node's start and, once every node has left it, the last node's end."""
    starts = [t for _, s, _, p in seen if (t := shift(p.start, s)) is not None]
    ends = [shift(p.end, s) for _, s, _, p in seen]
    closed = all(e is not None for e in ends)
    start = min(starts) if starts else None
    end = max(e for e in ends if e is not None) if closed and ends else None
    return start, end


def _rank_spans(seen: list[_NodePhase]) -> dict[str, RankSpan]:
    """Every node's ranks in the phase, by their combined names, on the common clock."""
    ranks = {
        q[rank]: RankSpan(
            start=shift(span.start, s),
            end=shift(span.end, s),
            duration_s=span.duration_s,
            first_line=span.first_line,
            last_line=span.last_line,
        )
        for _, s, q, p in seen
        for rank, span in p.ranks.items()
        if rank in q
    }
    return dict(sorted(ranks.items(), key=lambda kv: rank_sort_key(kv[0])))


def _open_end(p: PhaseReport, skew: float) -> str | None:
    if p.end is not None:
        return shift(p.end, skew)
    if p.start is None or p.duration_s is None:
        return None
    return shift((datetime.fromisoformat(p.start) + timedelta(seconds=p.duration_s)).isoformat(), skew)


def _failure(members: list[Report], shifts: list[float], qualified: list[dict[str, str]]) -> FailureReport | None:
    """The root across nodes: the most specific failure (stated > unstated > echo), the earliest
    on the common clock among equals; every other node's failure and echoes are its consequences."""
    failed = [(r, s, q) for r, s, q in zip(members, shifts, qualified, strict=True) if r.failure is not None]
    if not failed:
        return None

    def key(item: tuple[Report, float, dict[str, str]]) -> tuple[int, str]:
        f = item[0].failure
        assert f is not None
        return (_says_first(f), shift(f.ts, item[1]) or "~")

    root_report, root_shift, root_names = min(failed, key=key)
    root = root_report.failure
    assert root is not None
    consequences: list[Consequence] = [
        c.model_copy(
            update={"ts": shift(c.ts, root_shift), "rank": root_names.get(c.rank or "", c.rank), "source": root_report.source}
        )
        for c in root.consequences
    ]
    for r, s, q in failed:
        if r is root_report:
            continue
        f = r.failure
        assert f is not None
        consequences.append(
            Consequence(
                line=f.line, message=f.message[:300], ts=shift(f.ts, s), rank=q.get(f.rank or "", f.rank), source=r.source
            )
        )
        consequences.extend(
            c.model_copy(update={"ts": shift(c.ts, s), "rank": q.get(c.rank or "", c.rank), "source": r.source})
            for c in f.consequences
        )
    consequences.sort(key=lambda c: c.ts or "~")
    return root.model_copy(
        update={
            "ts": shift(root.ts, root_shift),
            "rank": root_names.get(root.rank or "", root.rank),
            "source": root_report.source,
            "consequences": consequences[:50],
            "consequences_total": root.echo_count()
            + sum(1 + r.failure.echo_count() for r, _, _ in failed if r is not root_report and r.failure),
        }
    )


def _says_first(failure: FailureReport) -> int:
    """How much a node's failure says about the root, most first: an error stated, a failure
    without its error, a timeout waiting for the other nodes, an echo."""
    if failure.severity in ("root", "unstated") and failure.cause in WAITED_ON_PEERS:
        return _WAITED_ORDER
    return _SEVERITY_ORDER[failure.severity]


def _end_time(members: list[Report], shifts: list[float], outcome: Outcome, failure: FailureReport | None) -> str | None:
    if outcome == "failed" and failure is not None:
        return failure.ts
    if outcome == "ready":
        return shift(_edge(members[0], Phase.READY, "start"), shifts[0])
    ends = [shift(p.end or p.start, s) for r, s in zip(members, shifts, strict=True) for p in r.phases]
    return max((e for e in ends if e is not None), default=None)


def _lagging(
    combined: Report, rank_nodes: dict[str, str], members: list[Report], names: list[str], shifts: list[float]
) -> Lagging | None:
    # a node still in an earlier phase than the others (starting): it holds the server up
    current = [
        (max((p.name for p in r.phases), key=lambda p: p.order, default=None), n) for r, n in zip(members, names, strict=True)
    ]
    known = [(p, n) for p, n in current if p is not None]
    if combined.outcome == "starting" and known and len({p for p, _ in known}) > 1:
        phase, node = min(known, key=lambda item: item[0].order)
        return Lagging(phase=phase, node=node, rank=None, behind_s=None)
    best: Lagging | None = None
    for p in combined.phases:
        ends = [(span.end, rank) for rank, span in p.ranks.items() if span.end is not None]
        if len(ends) < 2:
            continue
        (first, _), (last, rank) = min(ends), max(ends)
        behind = seconds_between(first, last)
        if behind is not None and behind >= 1.0 and (best is None or behind > (best.behind_s or 0.0)):
            best = Lagging(phase=p.name, node=rank_nodes.get(rank, "?"), rank=rank, behind_s=behind)
    return best


def _memory(members: list[Report], qualified: list[dict[str, str]]) -> MemoryReport:
    first = members[0].memory
    capture = [
        (r.memory.min_avail_during_capture_gb, r.memory.min_avail_line)
        for r in members
        if r.memory.min_avail_during_capture_gb is not None
    ]
    low = min(capture, key=lambda c: c[0] or 0.0) if capture else (None, None)
    return first.model_copy(
        update={
            "min_avail_during_capture_gb": low[0],
            "min_avail_line": low[1],
            "avail_gb": {
                q.get(rank, rank): v for r, q in zip(members, qualified, strict=True) for rank, v in r.memory.avail_gb.items()
            },
            "avail_lines": {
                q.get(rank, rank): v for r, q in zip(members, qualified, strict=True) for rank, v in r.memory.avail_lines.items()
            },
        }
    )


def _lines(members: list[Report]) -> LinesReport:
    fields = LinesReport.model_fields
    return LinesReport(**{name: sum(getattr(r.lines, name) for r in members) for name in fields})


__all__ = ["Lagging", "MergedReport", "NodeClock", "ServerView", "is_router_log", "merge", "router_report", "shift"]
