"""A Grafana dashboard for the metrics ``follow --metrics-port`` serves (``logphase grafana-dashboard``).

Every query is built from the metric names ``faces/live/metrics.py`` serves (its ``METRIC_*``), the
phases in their order (``PHASE_ORDER``) and follow's default stall budgets (``DEFAULT_STALL_AFTER``),
so the dashboard cannot name a metric, a phase or a budget the exporter does not have
(tests/test_grafana.py scrapes the collector and checks each query against it).

The datasource is ``${DS_PROMETHEUS}``: an import input (Grafana's import page asks for it) and a
datasource variable of the same name (a provisioned file works without the import page). Every
query selects ``job=~"$job", instance=~"$instance"``, the labels Prometheus gives every target.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from logphase.faces.live.follow import DEFAULT_STALL_AFTER
from logphase.faces.live.metrics import (
    METRIC_FAILED_WHILE_SERVING,
    METRIC_FAILURE,
    METRIC_GPU_FREE,
    METRIC_INFO,
    METRIC_OUTCOME,
    METRIC_PHASE,
    METRIC_PHASE_DURATION,
    METRIC_SINCE_LAST_LINE,
    METRIC_STARTUP,
    OUTCOMES,
)
from logphase.vocabulary.phases import PHASE_ORDER

DASHBOARD_UID = "logphase-startup"
DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
GRAFANA_SCHEMA_VERSION = 39  # Grafana 10.4-11: its dashboard model's version
GRID_WIDTH = 24  # Grafana's grid is 24 columns wide
# the colours of the outcomes and of the phases in the state timelines (the phases cycle through them)
OUTCOME_COLOURS = {"starting": "blue", "ready": "green", "failed": "red"}
PHASE_COLOURS = ("purple", "blue", "orange", "yellow", "super-light-blue", "dark-orange", "green")
INFO_NAME = f"{METRIC_INFO}_info"  # an info family is served with the suffix _info


def selector(metric: str, **labels: str) -> str:
    """``metric{job=~"$job",instance=~"$instance",label="value",...}``: one metric of the chosen targets."""
    matchers = ['job=~"$job"', 'instance=~"$instance"', *(f'{k}="{v}"' for k, v in labels.items())]
    return f"{metric}{{{','.join(matchers)}}}"


def _one_hot_sum(metric: str, label: str, weights: Iterable[tuple[str, float]]) -> str:
    """The weight of the label value whose gauge is 1, per target: the metric is 1 for one value of
    ``label`` and 0 for the others, so the weighted sum is that value's weight (0 when none is 1)."""
    terms = " or ".join(f"{selector(metric, **{label: value})} * {weight:g}" for value, weight in weights)
    return f"sum without ({label}) ({terms})"


def phase_index_expr() -> str:
    """The current phase as its number in PHASE_ORDER, from 1 (0: no phase yet)."""
    return _one_hot_sum(METRIC_PHASE, "phase", ((p.value, i + 1) for i, p in enumerate(PHASE_ORDER)))


def outcome_index_expr() -> str:
    """The outcome as its number in OUTCOMES, from 1."""
    return _one_hot_sum(METRIC_OUTCOME, "outcome", ((o, i + 1) for i, o in enumerate(OUTCOMES)))


def stall_budget_expr() -> str:
    """follow's default stall budget for the current phase (the silence it allows, seconds); before
    any phase the budget of no phase; no series once ready (ready allows any silence)."""
    finite = [(p.value, s) for p, s in DEFAULT_STALL_AFTER.items() if p is not None and s != float("inf")]
    none_yet = f"(max without (phase) ({selector(METRIC_PHASE)}) == bool 0) * {DEFAULT_STALL_AFTER[None]:g}"
    return f"({_one_hot_sum(METRIC_PHASE, 'phase', finite)} + {none_yet}) > 0"


def _target(expr: str, legend: str = "", ref: str = "A", table: bool = False) -> dict[str, Any]:
    target: dict[str, Any] = {"refId": ref, "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
    if table:  # the labels are the content: one row per series, now
        target.update(format="table", instant=True, range=False)
    return target


def _panel(kind: str, title: str, description: str, targets: list[dict[str, Any]], **config: Any) -> dict[str, Any]:
    """A panel without its place (``_layout`` gives it ``id`` and ``gridPos``)."""
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "targets": targets,
        "fieldConfig": {"defaults": config.pop("defaults", {}), "overrides": []},
        "options": config.pop("options", {}),
        **config,
    }


def _mapping(texts: Iterable[tuple[float, str, str]]) -> list[dict[str, Any]]:
    """A value mapping: each number shown as its text, in its colour."""
    options = {f"{value:g}": {"text": text, "color": colour, "index": i} for i, (value, text, colour) in enumerate(texts)}
    return [{"type": "value", "options": options}]


def _state_panels() -> list[tuple[dict[str, Any], int, int]]:
    phases = [
        (0.0, "no phase yet", "text"),
        *((i + 1.0, p.value, PHASE_COLOURS[i % len(PHASE_COLOURS)]) for i, p in enumerate(PHASE_ORDER)),
    ]
    outcomes = [(i + 1.0, o, OUTCOME_COLOURS.get(o, "text")) for i, o in enumerate(OUTCOMES)]
    timeline = {"showValue": "auto", "mergeValues": True, "rowHeight": 0.9, "legend": {"showLegend": False}}
    return [
        (
            _panel(
                "state-timeline",
                "Phase",
                "The start-up phase each server is in, over time.",
                [_target(phase_index_expr(), "{{job}} {{instance}}")],
                defaults={"mappings": _mapping(phases), "color": {"mode": "fixed"}},
                options=timeline,
            ),
            16,
            8,
        ),
        (
            _panel(
                "stat",
                "Progress",
                "Phases reached, of all phases (ready is 100%).",
                [_target(f"{phase_index_expr()} / {len(PHASE_ORDER)}", "{{instance}}")],
                defaults={"unit": "percentunit", "min": 0, "max": 1},
                options={"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "value", "textMode": "value_and_name"},
            ),
            8,
            8,
        ),
        (
            _panel(
                "state-timeline",
                "Outcome",
                "Starting, ready or failed, over time.",
                [_target(outcome_index_expr(), "{{job}} {{instance}}")],
                defaults={"mappings": _mapping(outcomes), "color": {"mode": "fixed"}},
                options=timeline,
            ),
            16,
            6,
        ),
        (
            _panel(
                "stat",
                "Start-up total",
                "Launch to ready, or to the failure, once known.",
                [_target(selector(METRIC_STARTUP), "{{instance}}")],
                defaults={"unit": "s"},
                options={"reduceOptions": {"calcs": ["lastNotNull"]}, "textMode": "value_and_name"},
            ),
            8,
            6,
        ),
    ]


# a table of series shows their labels only: the time, the value (1) and the name say nothing
_ONLY_LABELS = [{"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True, "__name__": True}}}]


def _failure_panels() -> list[tuple[dict[str, Any], int, int]]:
    return [
        (
            _panel(
                "table",
                "Failed: root cause",
                "Each server whose start-up failed, with the cause and the phase it failed in. The error "
                "line and the hint are in follow's failure record (kubectl logs POD -c logphase).",
                [_target(f"{selector(METRIC_FAILURE)} == 1", table=True)],
                transformations=_ONLY_LABELS,
            ),
            16,
            6,
        ),
        (
            _panel(
                "stat",
                "Failed while serving",
                "Servers whose start-up succeeded and which then failed while serving.",
                [_target(f"sum({selector(METRIC_FAILED_WHILE_SERVING)})")],
                defaults={
                    "thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}, {"color": "red", "value": 1}]}
                },
                options={"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "background"},
            ),
            8,
            6,
        ),
    ]


def _time_panels() -> list[tuple[dict[str, Any], int, int]]:
    series = {"custom": {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 0}}
    current = f"{selector(METRIC_PHASE_DURATION)} and ({selector(METRIC_PHASE)} == 1)"
    return [
        (
            _panel(
                "timeseries",
                "Silence vs the stall budget",
                "Seconds since the log last grew, against follow's default stall budget for the phase "
                "(a --stall-after given to follow is not in the metrics). Weight loading and capture are "
                "often silent for minutes.",
                [
                    _target(selector(METRIC_SINCE_LAST_LINE), "{{instance}} silent"),
                    _target(stall_budget_expr(), "{{instance}} stall budget", ref="B"),
                ],
                defaults={"unit": "s", **series},
            ),
            12,
            8,
        ),
        (
            _panel(
                "timeseries",
                "Time in the current phase",
                "The open phase, first rank in to the log's latest timestamp.",
                [_target(current, "{{instance}} {{phase}}")],
                defaults={"unit": "s", **series},
            ),
            12,
            8,
        ),
        (
            _panel(
                "bargauge",
                "Phase durations",
                "Each phase entered, first rank in to last rank out (so far, if open).",
                [_target(selector(METRIC_PHASE_DURATION), "{{instance}} {{phase}}")],
                defaults={"unit": "s"},
                options={"orientation": "horizontal", "reduceOptions": {"calcs": ["lastNotNull"]}},
            ),
            12,
            8,
        ),
        (
            _panel(
                "timeseries",
                "Free GPU memory per rank",
                "At each rank's latest phase boundary; little free at CUDA graph capture means an out-of-memory risk.",
                [_target(selector(METRIC_GPU_FREE), "{{instance}} {{rank}} {{boundary}}")],
                defaults={"unit": "bytes", **series},
            ),
            12,
            8,
        ),
        (
            _panel(
                "table",
                "Servers",
                "The model, tensor parallel size, log and logphase version of each server followed.",
                [_target(selector(INFO_NAME), table=True)],
                transformations=_ONLY_LABELS,
            ),
            24,
            5,
        ),
    ]


def _layout(panels: Iterable[tuple[dict[str, Any], int, int]]) -> list[dict[str, Any]]:
    """Place the panels left to right, a new row when one does not fit; number them from 1."""
    placed: list[dict[str, Any]] = []
    x = y = row_height = 0
    for number, (panel, width, height) in enumerate(panels, start=1):
        if x + width > GRID_WIDTH:
            x, y, row_height = 0, y + row_height, 0
        placed.append({"id": number, "gridPos": {"h": height, "w": width, "x": x, "y": y}, **panel})
        x, row_height = x + width, max(row_height, height)
    return placed


def _variable(name: str, query: str) -> dict[str, Any]:
    return {
        "name": name,
        "label": name,
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": query, "refId": name},
        "definition": query,
        "refresh": 2,  # on a change of the time range
        "includeAll": True,
        "allValue": ".*",
        "multi": True,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "sort": 1,
    }


def _templating() -> dict[str, Any]:
    datasource = {"name": "DS_PROMETHEUS", "label": "Prometheus", "type": "datasource", "query": "prometheus", "hide": 0}
    return {
        "list": [
            datasource,
            _variable("job", f"label_values({INFO_NAME}, job)"),
            _variable("instance", f'label_values({INFO_NAME}{{job=~"$job"}}, instance)'),
        ]
    }


def dashboard(version: str) -> dict[str, Any]:
    """The dashboard, as Grafana exports one for sharing (``__inputs`` for the import page)."""
    return {
        "__inputs": [
            {
                "name": "DS_PROMETHEUS",
                "label": "Prometheus",
                "type": "datasource",
                "pluginId": "prometheus",
                "pluginName": "Prometheus",
            }
        ],
        "__requires": [{"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"}],
        "id": None,
        "uid": DASHBOARD_UID,
        "title": "logphase: server start-up",
        "description": f"The start-up of SGLang and vLLM servers, from logphase follow --metrics-port (logphase {version})",
        "tags": ["logphase", "llm-serving"],
        "editable": True,
        "graphTooltip": 1,  # a shared crosshair
        "refresh": "30s",
        "schemaVersion": GRAFANA_SCHEMA_VERSION,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "",
        "annotations": {"list": []},
        "templating": _templating(),
        "panels": _layout([*_state_panels(), *_failure_panels(), *_time_panels()]),
    }


__all__ = ["DASHBOARD_UID", "dashboard", "outcome_index_expr", "phase_index_expr", "selector", "stall_budget_expr"]
