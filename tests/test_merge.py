"""--merge: the logs of one deployment as one (fixtures/logs/merge/<case>/: 2 and 4 nodes, a failure
on node 1 that node 0 echoes, node clocks apart, prefill + decode + router)."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest

from logphase.engine.whole import parse_bytes
from logphase.faces.timeline import render_html
from logphase.packs.grammars import defined_rules, parse, used_rules
from logphase.reporting.merge import MergedReport, is_router_log, merge, router_report
from tests.conftest import FIXTURES
from tests.logs import logphase_cli, written_now

MERGE = FIXTURES / "merge"
CASES = sorted(p.name for p in MERGE.iterdir() if p.is_dir())
_STAMP = re.compile(rb"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", re.MULTILINE)


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """``logphase ARGS``: in this process for parse and report (no start-up per call), a process of
    its own for follow (threads, a clock and files that grow)."""
    if args[0] != "follow":
        return logphase_cli(*args)
    return subprocess.run([sys.executable, "-m", "logphase", *args], capture_output=True, timeout=timeout)


def logs(case: str) -> list[Path]:
    return sorted((MERGE / case).glob("*.log"))


def merged_of(texts: dict[str, bytes]) -> MergedReport:
    """What --merge says about these logs (name -> bytes), read in the library."""
    reports, routers = [], []
    for i, (name, data) in enumerate(texts.items()):
        report = parse_bytes(data, source=name)
        if not report.config and is_router_log(data):
            report = router_report(report, data)
            routers.append(i)
        reports.append(report)
    return merge(reports, routers)


def case_report(case: str) -> MergedReport:
    return merged_of({p.name: p.read_bytes() for p in logs(case)})


def shifted(data: bytes, seconds: int) -> bytes:
    """The log as a node whose clock is ``seconds`` ahead prints it."""

    def move(m: re.Match[bytes]) -> bytes:
        t = datetime.fromisoformat(m.group(1).decode()) + timedelta(seconds=seconds)
        return b"[" + t.strftime("%Y-%m-%d %H:%M:%S").encode()

    return _STAMP.sub(move, data)


@pytest.mark.parametrize("case", CASES)
def test_merged_report_matches_expectation(case: str, update_goldens: bool) -> None:
    expected_path = MERGE / case / "expected.json"
    actual = case_report(case).model_dump(mode="json")
    if update_goldens:
        expected_path.write_bytes(orjson.dumps(actual, option=orjson.OPT_INDENT_2) + b"\n")
    assert expected_path.exists(), f"{case}/expected.json missing: run pytest --update-goldens and review it"
    assert actual == orjson.loads(expected_path.read_bytes())


def test_two_nodes_are_one_server_with_the_skew_and_the_lagging_rank() -> None:
    merged = case_report("two_nodes_ready")
    assert merged.outcome == "ready" and len(merged.servers) == 1
    server = merged.servers[0]
    assert server.nodes == ["node0", "node1"]
    assert server.report.ranks == ["TP0", "TP1", "TP2", "TP3"]
    assert server.rank_nodes == {"TP0": "node0", "TP1": "node0", "TP2": "node1", "TP3": "node1"}
    # node1's clock runs 3 s ahead: measured on distributed init, which all nodes end together
    assert [(c.node, c.skew_s, c.basis) for c in server.clocks] == [
        ("node0", 0.0, None),
        ("node1", 3.0, "distributed_init end"),
    ]
    assert server.lagging is not None and (server.lagging.node, server.lagging.rank) == ("node1", "TP3")
    assert server.lagging.phase.value == "weight_loading" and server.lagging.behind_s == 9.0
    # the phase runs from the first rank in to the last out, on node0's clock
    loading = next(p for p in server.report.phases if p.name.value == "weight_loading")
    assert (loading.start, loading.end) == ("2026-08-14T09:00:12", "2026-08-14T09:00:51")
    # ready is node0's (the other nodes run only schedulers)
    assert server.report.total_startup_s == 75.0


def test_four_nodes_and_their_clocks() -> None:
    server = case_report("four_nodes_ready").servers[0]
    assert server.nodes == ["node0", "node1", "node2", "node3"]
    assert len(server.report.ranks) == 8
    assert [c.skew_s for c in server.clocks] == [0.0, -1.0, 2.0, 1.0]
    assert server.lagging is not None and (server.lagging.node, server.lagging.rank) == ("node3", "TP7")


def test_a_failure_on_node1_is_the_root_though_node0_echoes_it_earlier_in_print() -> None:
    server = case_report("node1_fails").servers[0]
    failure = server.report.failure
    assert failure is not None and failure.cause.value == "kv_cache_insufficient_memory"
    assert (failure.source, failure.rank, failure.severity) == ("node1.log", "TP3", "root")
    # node0's NCCL error and sigquits are consequences, each with its own log
    assert {c.source for c in failure.consequences} == {"node0.log", "node1.log"}
    assert any("NCCL" in c.message and c.source == "node0.log" for c in failure.consequences)


@pytest.mark.parametrize("skew", [-30, -10, -3, 0, 3, 10, 30])
def test_no_clock_skew_turns_an_echo_into_the_root(skew: int) -> None:
    node0, node1 = logs("node1_fails")
    merged = merged_of({"node0.log": node0.read_bytes(), "node1.log": shifted(node1.read_bytes(), skew)})
    failure = merged.servers[0].report.failure
    assert failure is not None and failure.source == "node1.log"
    assert failure.cause.value == "kv_cache_insufficient_memory"
    assert merged.servers[0].clocks[1].skew_s == 3.0 + skew


def test_colliding_rank_tags_are_qualified_by_node() -> None:
    node0, node1 = logs("two_nodes_ready")
    # a node whose ranks print TP0 and TP1 too (each node numbering its own)
    retagged = node1.read_bytes().replace(b" TP2]", b" TP0]").replace(b" TP3]", b" TP1]")
    server = merged_of({"node0.log": node0.read_bytes(), "node1.log": retagged}).servers[0]
    assert server.report.ranks == ["node0 TP0", "node0 TP1", "node1 TP0", "node1 TP1"]
    assert server.rank_nodes["node1 TP1"] == "node1"


def test_prefill_decode_and_router_are_servers_side_by_side() -> None:
    merged = case_report("pd_disaggregation")
    assert sorted(s.role for s in merged.servers) == ["decode", "prefill", "router"]
    for server in merged.servers:
        assert len(server.nodes) == 1  # never one rank list across servers
        if server.role != "router":
            assert server.report.ranks == ["TP0", "TP1"]
        assert server.report.outcome == "ready"
    assert merged.outcome == "ready"


def test_parse_merge_text_json_and_exit_code() -> None:
    names = [str(p) for p in logs("node1_fails")]
    text = run("parse", "--merge", *names)
    assert text.returncode == 1, text.stderr
    out = text.stdout.decode()
    assert "server on 2 nodes" in out and "node1 +3 s (from distributed_init end)" in out
    assert "line 12 of node1.log" in out
    data = orjson.loads(run("parse", "--merge", "--json", *names).stdout)
    assert data["outcome"] == "failed" and len(data["nodes"]) == 2


def test_merge_needs_two_readable_logs(tmp_path: Path) -> None:
    one = run("parse", "--merge", str(logs("two_nodes_ready")[0]))
    assert one.returncode == 2 and one.stderr.decode().count("\n") == 1 and b"two logs or more" in one.stderr
    missing = run("parse", "--merge", str(logs("two_nodes_ready")[0]), str(tmp_path / "gone.log"))
    assert missing.returncode == 2 and b"Traceback" not in missing.stderr


def test_report_merge_draws_a_row_group_per_node(tmp_path: Path) -> None:
    server = case_report("four_nodes_ready").servers[0]
    page = render_html(server.report, server.rank_nodes)
    for node in server.nodes:
        assert f">{node}</text>" in page
    plain = render_html(server.report)
    assert ">node3</text>" not in plain
    done = run("report", "--merge", *map(str, logs("pd_disaggregation")), "-o", str(tmp_path / "pd.html"))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pd-decode.html", "pd-prefill.html", "pd-router.html"]


# follow --merge waits SETTLE_S after a first failure for the other logs' records; the test's
# follow waits for them all instead (the verdict then comes when every log has said its own), so
# that how fast this machine is never decides which line is the root
PATIENT_FOLLOW = "import sys; import logphase.faces.commands.follow_merged as m; m.SETTLE_S = 600.0; from logphase.faces.cli import entry_point; sys.argv[0] = 'logphase'; sys.exit(entry_point())"


def _records_as_they_come(proc: subprocess.Popen[bytes]) -> queue.Queue[dict[str, object] | None]:
    """follow's JSON records, read by a thread as follow prints them (None at the end)."""
    out: queue.Queue[dict[str, object] | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(orjson.loads(line))
        out.put(None)

    threading.Thread(target=read, daemon=True).start()
    return out


def _until(
    records: queue.Queue[dict[str, object] | None], seen: list[dict[str, object]], wanted: Callable[[dict[str, object]], bool]
) -> None:
    """Collect records into ``seen`` until one is ``wanted`` (a generous deadline: a hung follow
    fails the test, a slow one does not)."""
    while True:
        record = records.get(timeout=120)
        assert record is not None, f"follow ended before the record waited for: {seen}"
        seen.append(record)
        if wanted(record):
            return


def test_follow_merge_waits_for_the_root_written_after_its_echo(tmp_path: Path) -> None:
    """node0's echo reaches its file first, and follow prints it; node1's root only then: the
    verdict is node1's. Each write waits for follow to have read the one before (its records), not
    for a time."""
    node0, node1 = (p.read_bytes().splitlines(keepends=True) for p in logs("node1_fails"))
    out0, out1 = tmp_path / "node0.log", tmp_path / "node1.log"
    out0.write_bytes(b"".join(node0[:10]))
    out1.write_bytes(b"".join(node1[:10]))
    proc = subprocess.Popen(
        [sys.executable, "-c", PATIENT_FOLLOW, "follow", "--merge", "--json", "--timeout", "300", str(out0), str(out1)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        records = _records_as_they_come(proc)
        seen: list[dict[str, object]] = []
        _until(records, seen, lambda r: {s.get("source") for s in seen} >= {str(out0), str(out1)})
        with out0.open("ab") as f:
            f.write(b"".join(node0[10:]))
        _until(records, seen, lambda r: r.get("source") == str(out0) and r["kind"] == "failure")
        with out1.open("ab") as f:
            f.write(b"".join(node1[10:]))
        while (record := records.get(timeout=120)) is not None:
            seen.append(record)
        assert proc.wait(timeout=120) == 1, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.kill()
        proc.wait()
    echo = next(r for r in seen if r["kind"] == "failure")
    assert echo["source"] == str(out0)  # the echo was printed first
    assert {r["source"] for r in seen if "source" in r} == {str(out0), str(out1)}
    final = seen[-1]
    assert final["kind"] == "merged"
    failure = final["report"]["servers"][0]["report"]["failure"]  # type: ignore[index]
    assert failure["cause"] == "kv_cache_insufficient_memory" and failure["source"] == str(out1)


def test_follow_merge_on_whole_logs_prints_every_log_s_records_before_the_verdict(tmp_path: Path) -> None:
    names = []
    for log in logs("two_nodes_ready"):
        copy = tmp_path / log.name
        copy.write_bytes(log.read_bytes())
        names.append(str(written_now(copy)))  # a fresh run, however late follow starts
    done = run("follow", "--merge", "--json", "--timeout", "30", *names, timeout=60)
    assert done.returncode == 0, done.stderr
    records = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert records[-1]["kind"] == "merged" and records[-1]["report"]["outcome"] == "ready"
    for name in names:
        phases = [r["phase"] for r in records if r.get("source") == name and r["kind"] == "phase"]
        assert phases[:5] == ["launch", "distributed_init", "weight_loading", "memory_pool", "cuda_graph_capture"]


# -- logs that print no server_args (torchrun workers, windows of a longer log) ------------------------


def test_nodes_without_server_args_are_one_server_with_one_root() -> None:
    """node1 (clock 40 s ahead) runs out of memory at 12:59:30 by its clock; node0 times out in
    the collective at 12:59:55 by its own: one server, the OOM its root, the timeout its echo."""
    merged = case_report("oom_echoed_by_watchdog")
    assert merged.outcome == "failed" and len(merged.servers) == 1
    server = merged.servers[0]
    assert server.nodes == ["node0", "node1"] and server.report.ranks == ["TP0", "TP1", "TP2", "TP3"]
    assert [(c.node, c.skew_s, c.basis) for c in server.clocks] == [("node0", 0.0, None), ("node1", 40.0, "distributed_init end")]
    failure = server.report.failure
    assert failure is not None and (failure.cause.value, failure.source, failure.rank) == ("cuda_oom", "node1.log", "TP3")
    assert failure.ts == "2026-09-03T12:58:50"  # 12:59:30 on node1's clock, on node0's
    watchdog = [c for c in failure.consequences if "Watchdog caught collective operation timeout" in c.message]
    assert watchdog and {c.source for c in watchdog} == {"node0.log"}


def _window_from(data: bytes, marker: bytes) -> bytes:
    """The log from its first line holding ``marker`` on (a window of a longer log)."""
    lines = data.splitlines(keepends=True)
    return b"".join(lines[next(i for i, line in enumerate(lines) if marker in line) :])


@pytest.mark.parametrize("skew", [-120, -40, 0, 40, 120])
def test_without_a_common_event_the_skew_is_taken_as_zero_and_the_stated_error_stays_the_root(skew: int) -> None:
    """node1's window starts after distributed init: no event both nodes pass shows the skew. Its
    OOM, even printed after node0's timeout (clock far ahead), is the root: a timeout waiting for
    the other nodes says less than an error stated."""
    node0, node1 = logs("oom_echoed_by_watchdog")
    window = _window_from(shifted(node1.read_bytes(), skew - 40), b"Capture cuda graph begin")
    merged = merged_of({"node0.log": node0.read_bytes(), "node1.log": window})
    assert len(merged.servers) == 1
    server = merged.servers[0]
    assert [(c.skew_s, c.basis) for c in server.clocks] == [(0.0, None), (None, None)]
    failure = server.report.failure
    assert failure is not None and (failure.cause.value, failure.source) == ("cuda_oom", "node1.log")
    assert all(p.duration_s is None or p.duration_s >= 0 for p in server.report.phases)


def test_parse_merge_says_the_skew_was_taken_as_zero(tmp_path: Path) -> None:
    node0, node1 = logs("oom_echoed_by_watchdog")
    window = tmp_path / "node1.log"
    window.write_bytes(_window_from(node1.read_bytes(), b"Capture cuda graph begin"))
    done = run("parse", "--merge", str(node0), str(window))
    assert done.returncode == 1, done.stderr
    out = done.stdout.decode()
    assert "server on 2 nodes" in out and "deployment:" not in out
    assert "node1 taken as 0 s (no event common with node0 shows it" in out
    assert "cuda_oom on TP3, line 3 of node1.log" in out


def test_the_skew_is_measured_on_a_collective_both_nodes_timed_out_in() -> None:
    """Windows without distributed init: node1's TP2 waited in the same all-reduce as node0's
    ranks (SeqNum 37) and its watchdog says so 40 s later by node1's clock, after running as long:
    the collective began at one moment, so node1 is 40 s ahead."""
    node0, node1 = logs("oom_echoed_by_watchdog")
    tp2 = (
        b"[rank2]:[E903 13:00:35.322027361 ProcessGroupNCCL.cpp:616] [PG ID 0 PG GUID 0(default_pg) Rank 2] Watchdog "
        b"caught collective operation timeout: WorkNCCL(SeqNum=37, OpType=ALLREDUCE, NumelIn=16777216, "
        b"NumelOut=16777216, Timeout(ms)=60000) ran for 60021 milliseconds before timing out.\n"
    )
    merged = merged_of(
        {
            "node0.log": _window_from(node0.read_bytes(), b"Capture cuda graph begin"),
            "node1.log": _window_from(node1.read_bytes(), b"Capture cuda graph begin") + tp2,
        }
    )
    server = merged.servers[0]
    clock = server.clocks[1]
    assert clock.skew_s == 40.0 and clock.basis == "watchdog SeqNum=37 (ALLREDUCE, group 0) began"
    failure = server.report.failure
    assert failure is not None and (failure.cause.value, failure.source, failure.ts) == (
        "cuda_oom",
        "node1.log",
        "2026-09-03T12:58:50",
    )


def test_a_window_without_server_args_joins_the_node_that_printed_them() -> None:
    """node0's whole log (server_args of a 2-node launch) and a window of node1's: one server."""
    node0, node1 = logs("node1_fails")
    window = b"".join(line for line in node1.read_bytes().splitlines(keepends=True) if b"server_args=" not in line)
    merged = merged_of({"node0.log": node0.read_bytes(), "node1.log": window})
    assert len(merged.servers) == 1 and merged.servers[0].nodes == ["node0", "node1"]
    failure = merged.servers[0].report.failure
    assert failure is not None and (failure.source, failure.cause.value) == ("node1.log", "kv_cache_insufficient_memory")


def test_single_node_servers_given_together_stay_apart() -> None:
    """server_args that say nnodes=1 are whole servers: --merge shows them side by side."""
    one, two = FIXTURES / "kv_cache_insufficient.log", FIXTURES / "tp1_success.log"
    merged = merged_of({"a.log": one.read_bytes(), "b.log": two.read_bytes()})
    assert len(merged.servers) == 2 and all(len(s.nodes) == 1 for s in merged.servers)


# -- the router's vocabulary comes from its grammar ---------------------------------------------------


def _router_of(text: bytes) -> tuple[bool, str, str | None]:
    """Whether ``text`` reads as a router's log, and the outcome and failure message merge gives it."""
    report = router_report(parse_bytes(text, source="router.log"), text)
    return is_router_log(text), report.outcome, report.failure.message if report.failure else None


def test_a_router_log_is_told_and_judged_by_its_grammar_s_terminals() -> None:
    head = b"2026-08-14 09:00:20  INFO sglang_router_rs::server: src/server.rs:553: Starting router on 0.0.0.0:8000\n"
    healthy = b"2026-08-14 09:01:25  INFO smg::routers::http::pd_router: src/pd_router.rs:240: All 2 workers are healthy\n"
    error = b"2026-08-14 09:01:30  ERROR smg::server: src/server.rs:610: failed to bind 0.0.0.0:8000\n"
    assert _router_of(head) == (True, "starting", None)
    assert _router_of(head + healthy) == (True, "ready", None)
    assert _router_of(head + healthy + error) == (
        True,
        "failed",
        "2026-08-14 09:01:30  ERROR smg::server: src/server.rs:610: failed to bind 0.0.0.0:8000",
    )
    assert _router_of(b"Error: no workers given\n")[1:] == ("failed", "Error: no workers given")
    assert not is_router_log(b"[2026-08-14 09:00:20] server_args=ServerArgs(model_path='m')\n")


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("sglang_router_rs::server: src/server.rs:553: Starting router on 0.0.0.0:8000", "router_line"),
        ("smg::routers::http::pd_router: waiting", "router_line"),
        ("SGLang Router starting", "router_line"),
        ("All 2 workers are healthy", "router_ready"),
        ("Router ready, listening on 0.0.0.0:8000", "router_ready"),
        ("2026-08-14 09:01:30  ERROR smg::server: src/server.rs:610: failed to bind", "router_error"),
        ("Error: no workers given", "router_error"),
    ],
)
def test_the_router_grammar_reads_each_example_to_its_rule(text: str, rule: str) -> None:
    parsed = parse("router", text)
    assert parsed is not None and parsed.rule == rule
    assert defined_rules("router") == used_rules("router")


def test_merge_keeps_no_router_or_watchdog_text_of_its_own() -> None:
    source = (Path(__file__).parent.parent / "logphase" / "reporting" / "merge.py").read_text()
    for phrase in ("sglang_router", "smg::", "Router ready", "Starting router on", r"All \d+ workers", "WorkNCCL", "OpType="):
        assert phrase not in source, phrase
