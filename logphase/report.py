"""Stage 4: the report. Built from the machine's state at any moment; the JSON contract."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from logphase.diagnosis import ECHO_PREFERENCE, Cause, Severity, hint
from logphase.machine import PHASE_ORDER, Incident, PhaseMachine, Run, seconds_between
from logphase.phases import Phase

SCHEMA_VERSION = 1
# Free GPU memory below this when CUDA graph capture starts is a memory-pressure sign: capture
# and the first large batches allocate on top of it.
LOW_CAPTURE_MEMORY_GB = 5.0

Outcome = Literal["ready", "failed", "starting"]

CONFIG_KEYS = (
    "model_path",
    "served_model_name",
    "tp_size",
    "dp_size",
    "ep_size",
    "pp_size",
    "nnodes",
    "node_rank",
    "enable_dp_attention",
    "mem_fraction_static",
    "max_running_requests",
    "max_total_tokens",
    "chunked_prefill_size",
    "context_length",
    "cuda_graph_max_bs",
    "cuda_graph_bs",
    "disable_cuda_graph",
    "quantization",
    "kv_cache_dtype",
    "dtype",
    "attention_backend",
    "speculative_algorithm",
    "disaggregation_mode",
    "host",
    "port",
)


class RankSpan(BaseModel):
    start: str | None
    end: str | None
    duration_s: float | None


class PhaseReport(BaseModel):
    name: Phase
    start: str | None
    end: str | None = Field(description="null while the phase is still open")
    duration_s: float | None = Field(description="end - start; for an open phase, up to the last timestamp")
    ranks: dict[str, RankSpan] = Field(default_factory=dict)


class Consequence(BaseModel):
    line: int
    message: str


class FailureReport(BaseModel):
    cause: Cause
    phase: Phase | None
    rank: str | None
    line: int
    message: str
    hint: str
    consequences: list[Consequence] = Field(default_factory=list)


class WarningReport(BaseModel):
    kind: str
    message: str
    line: int | None = None


class LinesReport(BaseModel):
    total: int = Field(description="logical lines: physical lines split on \\r and glued prefixes")
    events: int = Field(description="logical lines that are part of an event")
    unrecognized: int
    blank: int = 0
    ignored: int = Field(default=0, description="skipped by --since")
    truncated: int = Field(default=0, description="the last line, cut before its newline")
    physical: int = Field(default=0, description="lines as grep -c counts them")
    invalid_utf8: int = 0
    overlong: int = 0


class MemoryReport(BaseModel):
    weights_gb: float | None = None
    kv_cache_gb: float | None = None
    kv_cache_tokens: int | None = None
    mamba_cache_gb: float | None = None
    cuda_graph_gb: float | None = None
    min_avail_during_capture_gb: float | None = None
    avail_gb: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="free GPU memory per rank at each phase boundary"
    )


class Report(BaseModel):
    schema_version: int = SCHEMA_VERSION
    source: str
    outcome: Outcome
    phase: Phase | None
    phases: list[PhaseReport]
    total_startup_s: float | None
    ranks: list[str]
    runs: int
    run_start_line: int
    failure: FailureReport | None
    warnings: list[WarningReport]
    config: dict[str, Any]
    memory: MemoryReport
    lines: LinesReport


def rank_sort_key(rank: str) -> tuple[Any, ...]:
    parts = rank.split()
    return tuple((p.rstrip("0123456789"), int(p[len(p.rstrip("0123456789")) :] or 0)) for p in parts)


def build_report(
    machine: PhaseMachine,
    lines: LinesReport,
    source: str,
    expect: dict[str, str] | None = None,
    truncated_line: int | None = None,
    run_index: int | None = None,
) -> Report:
    """The report on the last run, or on run ``run_index`` (1-based) of the file."""
    if run_index is not None and not 1 <= run_index <= len(machine.runs):
        raise ValueError(f"run {run_index} does not exist: the log holds {len(machine.runs)} run(s)")
    run = machine.runs[run_index - 1] if run_index is not None else machine.run
    failure, failure_phase = _failure(run)
    ready = run.ready_line is not None
    outcome: Outcome = "failed" if failure else ("ready" if ready else "starting")
    phase = failure_phase if failure else run.furthest_phase()
    ranks = sorted((r for r in run.tracks if r is not None), key=rank_sort_key)
    # startup ends at ready, even if the server failed later while serving
    end_ts = run.ready_ts if ready else (failure_ts(run) if failure else run.last_ts)
    warnings = _warnings(machine, run, expect or {}, truncated_line if run is machine.run else None)
    return Report(
        source=source,
        outcome=outcome,
        phase=phase,
        phases=_phases(run, failure),
        total_startup_s=seconds_between(run.first_ts, end_ts),
        ranks=ranks,
        runs=len(machine.runs),
        run_start_line=run.start_line,
        failure=failure,
        warnings=warnings,
        config=_config(run),
        memory=MemoryReport(
            weights_gb=run.weights_gb,
            kv_cache_gb=run.kv_cache_gb,
            kv_cache_tokens=run.kv_tokens,
            mamba_cache_gb=run.mamba_cache_gb,
            cuda_graph_gb=run.cuda_graph_gb,
            min_avail_during_capture_gb=run.capture_avail_gb[0] if run.capture_avail_gb else None,
            avail_gb={k: dict(v) for k, v in sorted(run.memory.items(), key=lambda kv: rank_sort_key(kv[0]))},
        ),
        lines=lines,
    )


def failure_ts(run: Run) -> str | None:
    root = _root(run)
    return root.event.ts if root else run.last_ts


def _root(run: Run) -> Incident | None:
    roots = [i for i in run.incidents if i.assessment.severity is Severity.ROOT]
    if roots:
        # first in time; within one second (the log's resolution) the lowest rank, so that the
        # answer does not depend on how the ranks' writes happened to interleave
        return min(roots, key=lambda i: (i.event.ts or "", rank_sort_key(i.event.rank or ""), i.event.line))
    echoes = [i for i in run.incidents if i.assessment.severity is Severity.ECHO]
    for cause in ECHO_PREFERENCE:
        for incident in echoes:
            if incident.assessment.cause is cause:
                return incident
    return None


def _failure(run: Run) -> tuple[FailureReport | None, Phase | None]:
    root = _root(run)
    if root is None:
        return None, None
    phase = root.assessment.phase or root.track_phase or run.furthest_phase()
    if run.ready_line is not None and root.event.line > run.ready_line:
        phase = phase if phase is Phase.READY else Phase.READY
    config = run.server_args or {}
    facts: dict[str, Any] = {"max_capture_bs": run.max_capture_bs, "native_crash": root.event.kind == "fatal_signal"}
    minimum = _min_mem_fraction(root.assessment.message)
    if minimum:
        facts["min_mem_fraction_static"] = minimum
    consequences = [Consequence(line=i.event.line, message=i.assessment.message[:300]) for i in run.incidents if i is not root]
    report = FailureReport(
        cause=root.assessment.cause,
        phase=phase,
        rank=root.event.rank or _rank_named_in(root.assessment.message, run),
        line=root.event.line,
        message=root.assessment.message[:2000],
        hint=hint(root.assessment.cause, phase, config, facts),
        consequences=consequences[:50],
    )
    return report, phase


def _rank_named_in(message: str, run: Run) -> str | None:
    """The main process names a dead scheduler by index ("Rank 1 scheduler died ..."): that is TP1."""
    m = re.search(r"Rank (\d+) scheduler", message)
    if m is None:
        return None
    wanted = f"TP{m.group(1)}"
    return next((r for r in run.tracks if r is not None and wanted in r.split()), wanted)


def _min_mem_fraction(message: str) -> str | None:
    m = re.search(r"Raise --mem-fraction-static above ([\d.]+)", message)
    return m.group(1) if m else None


def _phases(run: Run, failure: FailureReport | None) -> list[PhaseReport]:
    out: list[PhaseReport] = []
    last_ts = run.last_ts
    for phase in PHASE_ORDER:
        ranks: dict[str, RankSpan] = {}
        starts: list[str] = []
        ends: list[str] = []
        open_any = False
        ranked = any(rank is not None and phase in track.spans for rank, track in run.tracks.items())
        for rank, track in run.tracks.items():
            span = track.spans.get(phase)
            if span is None:
                continue
            if span.start is not None:
                starts.append(span.start)
            if rank is None and ranked:
                # rank-less lines (progress bars, Gloo) can open a phase; the ranks say when it ended
                continue
            if span.end is not None:
                ends.append(span.end)
            elif span.end_line is None:
                open_any = True
            if rank is not None:
                ranks[rank] = RankSpan(
                    start=span.start,
                    end=span.end,
                    duration_s=seconds_between(span.start, span.end if span.end_line is not None else last_ts),
                )
        if not starts and not ranks and not any(phase in t.spans for t in run.tracks.values()):
            continue
        if phase is Phase.LAUNCH and run.first_ts is not None:
            starts.append(run.first_ts)
        start = min(starts) if starts else None
        end = None if open_any and failure is None else (max(ends) if ends else None)
        if failure is not None and open_any:
            end = failure_ts(run)
        if phase is Phase.LAUNCH:
            # the main process prints little after launching: launch ends where any rank starts work
            later = [s.start for t in run.tracks.values() for p, s in t.spans.items() if p is not Phase.LAUNCH and s.start]
            if later and (end is None or min(later) < end):
                end = min(later)
        out.append(
            PhaseReport(
                name=phase,
                start=start,
                end=end,
                duration_s=seconds_between(start, end if end is not None else last_ts),
                ranks=dict(sorted(ranks.items(), key=lambda kv: rank_sort_key(kv[0]))),
            )
        )
    return out


def _config(run: Run) -> dict[str, Any]:
    args = run.server_args or {}
    config = {k: args[k] for k in CONFIG_KEYS if k in args}
    if run.scheduler:
        config["scheduler"] = run.scheduler
    if run.timings:
        config["startup_timings"] = run.timings
    return config


def _warnings(machine: PhaseMachine, run: Run, expect: dict[str, str], truncated_line: int | None) -> list[WarningReport]:
    out: list[WarningReport] = []
    if len(machine.runs) > 1:
        out.append(
            WarningReport(
                kind="multiple_runs",
                message=f"this file holds {len(machine.runs)} runs; "
                f"the report describes {'the last one' if run is machine.run else f'run {run.index}'}, "
                f"from line {run.start_line}",
                line=run.start_line,
            )
        )
    out.extend(_expectations(run, expect))
    seen: set[tuple[str, str]] = set()
    for o in run.overrides:
        if (o.setting, o.message) in seen or " is set" in o.message:
            # every rank says it once; and "because --disable-x is set" honours the user's own flag
            continue
        seen.add((o.setting, o.message))
        values = ""
        if o.requested is not None or o.actual is not None:
            values = (
                f" (requested {o.requested if o.requested is not None else '?'}, now {o.actual if o.actual is not None else '?'})"
            )
        out.append(
            WarningReport(kind="ignored_parameter", message=f"SGLang changed {o.setting}{values}: {o.message}", line=o.line)
        )
    if run.capture_avail_gb is not None and run.capture_avail_gb[0] < LOW_CAPTURE_MEMORY_GB:
        avail, rank, line = run.capture_avail_gb
        who = f" on {rank}" if rank else ""
        out.append(
            WarningReport(
                kind="memory_pressure",
                message=f"CUDA graph capture ran with only {avail:.2f} GB free{who} (below {LOW_CAPTURE_MEMORY_GB:.1f} GB): "
                "capture or the first large batches may run out of memory; consider a lower "
                "--mem-fraction-static or --cuda-graph-max-bs",
                line=line,
            )
        )
    for kind, message, line in run.notices:
        out.append(WarningReport(kind=kind, message=message, line=line))
    if truncated_line is not None:
        out.append(
            WarningReport(
                kind="truncated_input",
                message="the log ends in the middle of a line (still being written, or cut); that line was not read as an event",
                line=truncated_line,
            )
        )
    return out


def _expectations(run: Run, expect: dict[str, str]) -> list[WarningReport]:
    out: list[WarningReport] = []
    sources: dict[str, Any] = dict(run.scheduler)
    sources.update(run.server_args or {})
    for key, wanted in expect.items():
        if key not in sources:
            out.append(
                WarningReport(
                    kind="expect_unverified",
                    message=f"{key}: the log of this run does not show it, so {wanted} cannot be checked",
                    line=run.server_args_line,
                )
            )
            continue
        actual = sources[key]
        if not values_match(actual, wanted):
            out.append(
                WarningReport(
                    kind="stale_log",
                    message=f"{key}: the log says {actual} but you launched with {wanted}: stale log or ignored parameter",
                    line=run.server_args_line,
                )
            )
    return out


def values_match(actual: Any, wanted: str) -> bool:
    text = wanted.strip().strip("'\"")
    if isinstance(actual, bool) or text.lower() in ("true", "false", "none"):
        return str(actual).lower() == text.lower()
    if isinstance(actual, int | float):
        try:
            return abs(float(actual) - float(text)) < 1e-9
        except ValueError:
            return False
    if isinstance(actual, list):
        return str(actual).replace(" ", "") == text.replace(" ", "")
    return str(actual) == text
