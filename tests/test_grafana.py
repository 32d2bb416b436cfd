"""The Grafana dashboard `logphase grafana-dashboard` prints (logphase/faces/fleet/grafana.py): the
shape Grafana imports, and queries that name only what the exporter serves. The exporter's
collector is scraped on fixtures (a failed start-up, a ready one, a failure while serving) and its
exposition read back with prometheus_client's own parser; each query's metrics, label names and
label values are looked up there."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from logphase import __version__
from logphase.engine.whole import parse_file
from logphase.faces.fleet.grafana import DASHBOARD_UID, dashboard
from logphase.faces.live.metrics import ReportCollector
from logphase.vocabulary.phases import PHASE_ORDER
from tests.conftest import FIXTURES

# the labels Prometheus gives every target it scrapes (the exporter serves neither)
TARGET_LABELS = {"job", "instance"}
# the PromQL words the queries may use besides metric names: a bare metric name is none of these
PROMQL_WORDS = {"sum", "max", "without", "by", "or", "and", "bool", "on", "label_values"}
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}")
GROUPING = re.compile(r"\b(?:without|by|on)\s*\(([^)]*)\)")
MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"')


def exposed() -> dict[str, dict[str, set[str]]]:
    """Each sample name the exporter serves on the fixtures: its label names, each with its values."""
    out: dict[str, dict[str, set[str]]] = {}
    for log in ("cuda_oom_capture.log", "tp2_gloo_nccl_success.log", "collective_timeout_serving.log"):
        report = parse_file(FIXTURES / log)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(ReportCollector(lambda report=report: (report, time.monotonic()), "test"))  # type: ignore[misc]
        for family in text_string_to_metric_families(generate_latest(registry).decode()):
            for sample in family.samples:
                labels = out.setdefault(sample.name, {})
                for name, value in sample.labels.items():
                    labels.setdefault(name, set()).add(value)
    return out


def queries(board: dict[str, Any]) -> list[str]:
    """Every PromQL query of the dashboard: the panels' targets and the template variables'."""
    found = [t["expr"] for p in board["panels"] for t in p["targets"]]
    found += [v["definition"] for v in board["templating"]["list"] if v["type"] == "query"]
    return found


def test_the_dashboard_has_the_shape_grafana_imports() -> None:
    board = dashboard("test")
    assert board["uid"] == DASHBOARD_UID and board["title"] and board["id"] is None
    assert 36 <= board["schemaVersion"] <= 41  # Grafana 9.4-12 read this model without migrating it
    assert [i["name"] for i in board["__inputs"]] == ["DS_PROMETHEUS"]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource" and variables["DS_PROMETHEUS"]["query"] == "prometheus"
    assert {"job", "instance"} <= set(variables)
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)) >= 8
    cells: set[tuple[int, int]] = set()
    for panel in board["panels"]:
        assert panel["type"] in {"state-timeline", "stat", "table", "timeseries", "bargauge"} and panel["title"]
        grid = panel["gridPos"]
        assert all(isinstance(grid[k], int) for k in "hwxy") and grid["x"] + grid["w"] <= 24 and grid["h"] > 0
        mine = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])}
        assert not cells & mine, panel["title"]  # no two panels overlap
        cells |= mine
        assert panel["targets"] and len({t["refId"] for t in panel["targets"]}) == len(panel["targets"])
        for target in panel["targets"]:
            assert target["expr"] and target["datasource"]["uid"] == "${DS_PROMETHEUS}"
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}"
    json.loads(json.dumps(board))  # plain JSON: no tuples, sets or infinities


def test_every_query_names_only_what_the_exporter_serves() -> None:
    served = exposed()
    assert {"logphase_failure", "logphase_startup_seconds", "logphase_gpu_free_bytes", "logphase_info"} <= set(served)
    used: set[str] = set()
    for expr in queries(dashboard("test")):
        assert expr.count("(") == expr.count(")"), expr
        for metric, matchers in SELECTOR.findall(expr):
            assert metric in served, (metric, expr)
            used.add(metric)
            for label, op, value in MATCHER.findall(matchers):
                assert label in TARGET_LABELS or label in served[metric], (metric, label, expr)
                if op == "=" and label not in TARGET_LABELS:
                    assert value in served[metric][label], (metric, label, value)  # a phase the gauge has
        labels = {n for m in served.values() for n in m} | TARGET_LABELS
        for grouping in GROUPING.findall(expr):
            assert {g.strip() for g in grouping.split(",")} <= labels, (grouping, expr)
        for label in re.findall(r"label_values\(.*,\s*(\w+)\)", expr):
            assert label in labels, expr
        words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", SELECTOR.sub(" ", GROUPING.sub(" ", expr))))
        bare = words - PROMQL_WORDS - labels
        assert bare <= set(served), (bare, expr)  # a metric named without braces is served too
        used |= bare
    # the panels the brief asked for, by what they read
    assert {"logphase_phase", "logphase_outcome", "logphase_failure", "logphase_failed_while_serving",
            "logphase_startup_seconds", "logphase_seconds_since_last_line", "logphase_phase_duration_seconds"} <= used  # fmt: skip


def test_the_phase_timeline_shows_every_phase_by_name() -> None:
    timeline = next(p for p in dashboard("test")["panels"] if p["title"] == "Phase")
    texts = {o["text"] for m in timeline["fieldConfig"]["defaults"]["mappings"] for o in m["options"].values()}
    assert {p.value for p in PHASE_ORDER} <= texts


def test_the_command_prints_the_dashboard_and_exits_0() -> None:
    done = subprocess.run([sys.executable, "-m", "logphase", "grafana-dashboard"], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == dashboard(__version__)
    helped = subprocess.run([sys.executable, "-m", "logphase", "grafana-dashboard", "--help"], capture_output=True, timeout=120)
    assert helped.returncode == 0 and b"Grafana" in helped.stdout
    listed = subprocess.run([sys.executable, "-m", "logphase", "--help"], capture_output=True, timeout=120)
    assert b"grafana-dashboard" in listed.stdout
