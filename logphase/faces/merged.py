"""--merge: several logs of one deployment read as one (the nodes of a multi-node server; prefill,
decode and router side by side). Reading, and the text of the merged report."""

from __future__ import annotations

from collections.abc import Sequence

from logphase.faces.batch import read_many
from logphase.faces.inputs import InputError
from logphase.faces.text import render_text
from logphase.faces.wording import fmt_duration, headline
from logphase.reporting.merge import MergedReport, ServerView, is_router_log, merge, router_report
from logphase.reporting.report import Report
from logphase.vocabulary.servers import Server

# a router prints its first lines at once; how much of a log is read to tell whether it is one
ROUTER_HEAD_BYTES = 64 * 1024
ROUTER_TEXT_BYTES = 16 * 1024 * 1024


def read_merged(
    names: Sequence[str], since: str | None, expect: dict[str, str], jobs: int, server: Server | None = None
) -> MergedReport:
    """Every log read (in parallel), then merged. One unreadable log is an input error: a merged
    view without one of its nodes would be wrong, not partial. ``server``: --server, the server of
    every log (else each log's own, from its lines)."""
    if len(names) < 2:
        raise InputError("--merge takes two logs or more (the nodes of one server, or prefill, decode and router)")
    if "-" in names:
        raise InputError("--merge reads files: standard input cannot be told apart from the other logs")
    reports: list[Report] = []
    for outcome in read_many(names, since, expect, jobs, server):
        if outcome.error is not None or outcome.report is None:
            raise InputError(outcome.error or f"{outcome.source}: unreadable")
        reports.append(outcome.report)
    return merge_logs(names, reports)


def merge_logs(names: Sequence[str], reports: Sequence[Report]) -> MergedReport:
    """The logs' reports merged; a log with no server_args and no ranks whose lines are the
    router's is read as the router."""
    read: list[Report] = []
    routers: list[int] = []
    for i, report in enumerate(reports):
        if not report.config and not report.ranks:
            text = router_text(names[i])
            if text is not None:
                report = router_report(report, text)
                routers.append(i)
        read.append(report)
    return merge(read, routers)


def router_text(name: str) -> bytes | None:
    """The log's text when it is the router's (a router log is small), else None."""
    try:
        with open(name, "rb") as handle:
            head = handle.read(ROUTER_HEAD_BYTES)
            if not is_router_log(head):
                return None
            return head + handle.read(ROUTER_TEXT_BYTES)
    except OSError:
        return None


def render_merged(merged: MergedReport, color: bool) -> str:
    """Each server in turn: what it is and where its logs are, the clocks, the lagging rank, then
    its report as for one log. Several servers (disaggregation) end with a line each."""
    out: list[str] = []
    for server in merged.servers:
        out.append(_server_head(server))
        out.append(render_text(server.report, color, server.rank_nodes).rstrip("\n"))
        out.append("")
    if len(merged.servers) > 1:
        out.append(f"deployment: {merged.outcome.upper()}")
        for server in merged.servers:
            out.append(f"  {server.role:<8} {', '.join(server.sources)}: {headline(server.report)}")
    return "\n".join(out).rstrip("\n") + "\n"


def _server_head(server: ServerView) -> str:
    lines = []
    if len(server.nodes) == 1:
        lines.append(f"== {server.role}: {server.sources[0]}")
        return "\n".join(lines)
    lines.append(
        f"== {server.role} on {len(server.nodes)} nodes: "
        + ", ".join(f"{n} ({s})" for n, s in zip(server.nodes, server.sources, strict=True))
    )
    skews = []
    for clock in server.clocks[1:]:
        if clock.skew_s is None:
            skews.append(f"{clock.node} taken as 0 s (no event common with {server.nodes[0]} shows it: times as printed)")
        else:
            skews.append(f"{clock.node} {clock.skew_s:+g} s (from {clock.basis})")
    lines.append(f"   clocks against {server.nodes[0]}: " + "; ".join(skews))
    lag = server.lagging
    if lag is not None:
        who = f"{lag.rank} on {lag.node}" if lag.rank else lag.node
        if lag.behind_s is not None:
            lines.append(f"   lagging: {who} left {lag.phase.value} {fmt_duration(lag.behind_s)} after the first rank")
        else:
            lines.append(f"   lagging: {who} is still in {lag.phase.value}, behind the other nodes")
    return "\n".join(lines)
