"""The report: the JSON contract every face reads (``build_report.py`` builds it). Each field says
where it comes from, so that no face needs to read the log again."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from logphase.packs.registry import SERVERS
from logphase.vocabulary.causes import Cause
from logphase.vocabulary.names import shown_name
from logphase.vocabulary.phases import Phase
from logphase.vocabulary.servers import Server

# 2: provenance (first/last line of phases and rank spans, time and rank of the failure and of each
# consequence, structured warning values), unaccounted time between phases, new warning kinds
SCHEMA_VERSION = 2
# Free GPU memory below this when CUDA graph capture starts is a memory-pressure sign: capture
# and the first large batches allocate on top of it.
LOW_CAPTURE_MEMORY_GB = 5.0
# Time between two phases longer than this is reported as its own row: SGLang stamps whole
# seconds, so one second between an end marker and the next begin marker is only rounding.
UNACCOUNTED_MIN_S = 1.0

Outcome = Literal["ready", "failed", "starting"]
# a file's name as every output shows it: bytes that are not UTF-8 and control characters escaped
# (vocabulary/names.py), also in a saved report read back, so that no face writes them raw
ShownName = Annotated[str, AfterValidator(shown_name)]
# why a report gives no total start-up time (Report.total_unknown)
TotalUnknown = Literal["partial_log", "no_launch", "no_time"]

# the settings people look at first (text summary, timeline); the report's config has them all
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
    """One rank's stay in one phase."""

    start: str | None = Field(description="when the rank entered the phase (ISO 8601 as printed)")
    end: str | None = Field(description="when it left it; null while open")
    duration_s: float | None = Field(description="end - start; for an open phase, up to the last timestamp")
    first_line: int | None = Field(default=None, description="the line that shows the rank entering the phase")
    last_line: int | None = Field(default=None, description="the line that closes it; null while open")


class ProgressReport(BaseModel):
    """The latest progress bar of a phase (weight shards, graph batch sizes): its own clock."""

    desc: str = Field(description="what the bar counts")
    percent: int = Field(description="percent done")
    done: int = Field(description="steps done")
    total: int = Field(description="steps in all")
    elapsed_s: float | None = Field(description="time since the bar started, as tqdm measured it")
    remaining_s: float | None = Field(description="tqdm's estimate of the time left")
    line: int = Field(description="the bar's line")


class StepReport(BaseModel):
    """A duration the server measured and printed itself (vLLM's 'Loading weights took 2.63
    seconds', 'torch.compile takes 25.17 s in total'): finer than its stamps' whole seconds. Listed
    under the phase it lies in; each rank's n-th measure of a step is one row."""

    name: str = Field(
        description="what was measured: vLLM's loading_weights, model_loading, memory_profiling, profiling_run, "
        "torch_compile, graph_capture, init_engine; SGLang's load_weight and capture_<graph> (capture_cuda_graph, "
        "capture_draft_extend_cuda_graph ...), listed only where the phase holds more than that one measure"
    )
    duration_s: float = Field(description="as the server printed it; of the slowest rank when several ranks printed it")
    rank: str | None = Field(description="the rank that printed it (the slowest); null: the server's own process")
    line: int = Field(description="the line that says it")
    whole: bool = Field(default=False, description="it measures the whole phase: the phase's duration_s is this one")
    through: Phase | None = Field(
        default=None, description="the last phase it covers, when it covers more than this one (init_engine: through capture)"
    )


class PhaseReport(BaseModel):
    """A phase of the server: from the first rank to enter it to the last to leave it."""

    name: Phase = Field(description="the phase")
    start: str | None = Field(description="when the first rank entered it")
    end: str | None = Field(description="when the last rank left it; null while the phase is still open")
    duration_s: float | None = Field(
        description="end - start; for an open phase, up to the last timestamp; the server's own measure when a "
        "step of steps measures the whole phase (whole: true), finer than the stamps"
    )
    first_line: int | None = Field(default=None, description="the first line that shows the phase")
    last_line: int | None = Field(default=None, description="the line that ends it (the last rank's); null while open")
    lower_bound: bool = Field(
        default=False,
        description="the log starts while this phase was under way: start is its first line, duration a lower bound",
    )
    progress: ProgressReport | None = Field(
        default=None,
        description="the phase's latest progress bar; while the phase is open and its lines carry no newer time, "
        "duration_s is the bar's elapsed time",
    )
    ranks: dict[str, RankSpan] = Field(default_factory=dict, description="per rank tag, as printed")
    steps: list[StepReport] = Field(
        default_factory=list,
        description="the durations the server measured itself within the phase, in line order (the phase starts no "
        "later than each began); absent when there are none",
    )

    @model_serializer(mode="wrap")
    def _steps_when_printed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No steps key for a phase without steps: reports without them stay as they were."""
        return _without(handler(self), steps=not self.steps)


class UnaccountedReport(BaseModel):
    """Time between two phases that no phase accounts for (host-side work SGLang does not
    announce, a slow rank the others wait for ...): shown so that the slowest stretch is never hidden."""

    after: Phase = Field(description="the phase that ended")
    before: Phase | None = Field(
        description="the phase that started next; null when none had when the run stopped or the log ends"
        " (work SGLang does not announce, a failure there, or a hang)"
    )
    start: str = Field(description="when the earlier phase ended")
    end: str = Field(description="when the later phase started, or the failure or the last time printed")
    duration_s: float = Field(description="end - start")
    first_line: int | None = Field(description="the line that ends the earlier phase")
    last_line: int | None = Field(description="the line that starts the later phase, or the failure's or last line")
    holds: Literal["draft_model"] | None = Field(
        default=None,
        description="what the server did then, when its lines say: draft_model, a second model's set-up (a speculative "
        "decoding draft model's load, pool and captures, after the target's capture): from the end of the target's part "
        "of the phase before to the draft's last end line; absent otherwise",
    )
    steps: list[StepReport] = Field(
        default_factory=list,
        description="the durations the server measured itself within this stretch (the draft model's load and "
        "captures), as a phase's steps; absent when there are none",
    )

    @model_serializer(mode="wrap")
    def _holds_when_known(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No holds or steps key for plain time between phases: reports without them stay as they were."""
        return _without(handler(self), holds=self.holds is None, steps=not self.steps)


class Consequence(BaseModel):
    """A line that follows from the root cause (an echo): another rank's error, sigquit, a wrapper."""

    line: int = Field(description="1-based line number (counts \\n only, as grep -n)")
    message: str = Field(description="what the line says")
    ts: str | None = Field(default=None, description="its time, or the time of the line before it")
    rank: str | None = Field(default=None, description="the rank that printed it; null for the server")
    source: ShownName | None = Field(default=None, description="the log it is in, in a report on several logs (--merge)")


class FailureReport(BaseModel):
    """The root cause of a failed startup: the first specific fatal error in time."""

    cause: Cause = Field(description="the cause, from a fixed vocabulary (logphase check --help lists it)")
    phase: Phase | None = Field(description="the phase it struck in")
    rank: str | None = Field(description="the rank that failed first; null for the main process")
    line: int = Field(description="the line to read: the traceback's header or the line that states the error")
    ts: str | None = Field(default=None, description="its time, or the time of the line before it")
    message: str = Field(description="the error as printed (the exception line, the fatal single line)")
    hint: str = Field(description="what to change or check, for this cause in this phase")
    consequences: list[Consequence] = Field(
        default_factory=list, description="echoes of the root cause, in line order: the first 50 (consequences_total counts all)"
    )
    consequences_total: int = Field(
        default=0,
        description="how many failure lines follow from the root in all (a server failing while serving may print "
        "a million tracebacks: only the first 50 are listed, the count is exact)",
    )
    severity: Literal["root", "unstated", "echo"] = Field(
        default="root",
        description="root: the log states the error; unstated: it shows a failure without its error (a cut "
        "traceback, a crash dump, a vanished process); echo: only consequences of an error it does not hold",
    )
    check: Literal["configuration", "environment"] | None = Field(
        default=None,
        description="for an exception no signature names, raised by a raise or assert statement of the server's own "
        "start-up code: the check that refused to go on, of the configuration (an argument, a model, a combination "
        "it does not support) or of the environment (a device, a driver, a memory or peer-to-peer check); the "
        "cause stays python_exception",
    )
    source: ShownName | None = Field(default=None, description="the log the line is in, in a report on several logs (--merge)")
    while_serving: bool = Field(
        default=False,
        description="the failure struck while the server was serving (phase ready): its start-up had succeeded "
        "(total_startup_s is launch to ready, ready_at when), then it failed at ts",
    )
    after_ready_s: float | None = Field(
        default=None, description="for a failure while serving: the time from ready to the failure, when both are known"
    )

    def echo_count(self) -> int:
        """How many lines follow from the root (a report saved before the total was kept: those listed)."""
        return max(self.consequences_total, len(self.consequences))


class WarningReport(BaseModel):
    """Something worth knowing that is not a failure. ``setting``/``expected``/``found`` are set for
    warnings about a configuration value (stale_log, ignored_parameter, expect_unverified)."""

    kind: str = Field(
        description="stale_log, expect_unverified, ignored_parameter, multiple_runs, memory_pressure, truncated_input, "
        "distributed_stall, memory_imbalance, warmup_failed, no_sglang_output, nothing_since, partial_log, stderr_missing, "
        "invalid_timestamp"
    )
    message: str = Field(description="the warning in words")
    line: int | None = Field(default=None, description="the line it is about")
    setting: str | None = Field(default=None, description="the configuration key concerned")
    expected: str | None = Field(default=None, description="what you launched with (--expect) or requested")
    found: str | None = Field(default=None, description="what the log shows")


class LinesReport(BaseModel):
    """Every logical line is counted once: total = events + unrecognized + blank + ignored + truncated."""

    total: int = Field(description="logical lines: physical lines split on \\r and glued prefixes")
    events: int = Field(description="logical lines that are part of an event")
    unrecognized: int = Field(description="lines no grammar recognised (parse --unrecognized prints them)")
    blank: int = Field(default=0, description="empty lines")
    ignored: int = Field(default=0, description="skipped by --since")
    truncated: int = Field(default=0, description="the last line, cut before its newline")
    physical: int = Field(default=0, description="lines as grep -c counts them")
    invalid_utf8: int = Field(default=0, description="lines with bytes that are not UTF-8 (replaced)")
    overlong: int = Field(default=0, description="lines longer than 64 KiB (the rest of the line is not read)")
    repeated: int = Field(
        default=0,
        description="lines Ray folded into others ('[repeated 7x across cluster]': 7 more of that line, from other "
        "actors): what the input stands for beyond its own lines (not in total)",
    )


class MemoryReport(BaseModel):
    """GPU memory as SGLang reports it (GB as printed, i.e. GiB)."""

    weights_gb: float | None = Field(default=None, description="weights, per rank (Load weight end: mem usage)")
    kv_cache_gb: float | None = Field(default=None, description="KV cache, per rank (all pools of one rank)")
    kv_cache_tokens: int | None = Field(default=None, description="KV cache size in tokens")
    mamba_cache_gb: float | None = Field(default=None, description="mamba / linear-attention state cache, per rank")
    cuda_graph_gb: float | None = Field(default=None, description="CUDA graphs, per rank (all captures of one rank)")
    min_avail_during_capture_gb: float | None = Field(
        default=None, description="lowest free memory seen when capture started or during it"
    )
    min_avail_line: int | None = Field(default=None, description="the line with that lowest reading")
    avail_gb: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="free GPU memory per rank at each phase boundary"
    )
    avail_lines: dict[str, dict[str, int]] = Field(default_factory=dict, description="the line of each reading in avail_gb")


class YearReport(BaseModel):
    """The year given to stamps that print none (vLLM's ``INFO 11-18 18:07:28``, journald's), when no
    stamp of the log says it."""

    year: int = Field(description="the year the stamps were taken to be in (of the first such stamp)")
    source: Literal["wrapper", "file_time", "current_year"] = Field(
        description="wrapper: a dated wrapper around the line (docker -t, kubectl --timestamps); file_time: the "
        "log file's modification time (the log was written by then); current_year: today (standard input)"
    )


class Report(BaseModel):
    """What logphase knows about one run of the server at this point of the log."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="version of this JSON contract")
    source: ShownName = Field(description="file name, or <stdin>")
    server: Server | None = Field(
        default=None,
        description=f"the server of this run, by its pack's name ({', '.join(SERVERS)}), from its own start lines "
        "(SGLang's log prefix; vLLM's version, engine or launch lines), or as --server said; null when no line of "
        "the run shows it",
    )
    version: str | None = Field(
        default=None, description="the server's version, when the run printed it (vLLM's start lines: '0.10.2'); else null"
    )
    outcome: Outcome = Field(description="ready, failed or starting")
    phase: Phase | None = Field(
        description="the furthest phase any rank entered; on failure, the phase the root cause struck in; "
        "null only when nothing of a start-up was recognised"
    )
    phases: list[PhaseReport] = Field(description="the phases entered, in phase order")
    unaccounted: list[UnaccountedReport] = Field(
        default_factory=list, description=f"time between phases longer than {UNACCOUNTED_MIN_S:g} s, in time order"
    )
    total_startup_s: float | None = Field(
        description="first timestamp of the run to ready (or to the failure, or to the last timestamp while starting); "
        "null when it cannot be told: total_unknown says why"
    )
    total_unknown: TotalUnknown | None = Field(
        default=None,
        description="why total_startup_s is null: partial_log (the log starts after the run's launch), no_launch (no "
        "line of the run marks its launch: its arguments dump or the server's launch line; the start-up may have begun "
        "long before the log's first line), no_time (no line of the run carries a time); null when the total is given",
    )
    ranks: list[str] = Field(description="rank tags as printed; a single-GPU server's scheduler is TP0")
    ready_at: str | None = Field(
        default=None, description="when the server became ready (its ready line's time); kept when it failed later"
    )
    ready_line: int | None = Field(default=None, description="the line that shows the server ready")
    runs: int = Field(description="runs found in the input")
    run: int = Field(default=1, description="which run (1-based) this report describes: the last unless asked otherwise")
    run_start_line: int = Field(description="the first line of the run this report describes")
    run_last_line: int = Field(default=0, description="the last line read of that run")
    failure: FailureReport | None = Field(description="the root cause, when the run failed")
    warnings: list[WarningReport] = Field(description="things worth knowing that are not failures")
    config: dict[str, Any] = Field(
        description="every server_args value of the run (secrets redacted), plus `scheduler` (its limits) and "
        "`startup_timings` when logged"
    )
    config_line: int | None = Field(default=None, description="the line of the server_args dump")
    memory: MemoryReport = Field(description="GPU memory figures")
    lines: LinesReport = Field(description="how every line of the input was accounted for")
    year_inferred: YearReport | None = Field(
        default=None,
        description="the log's stamps print no year and none of its stamps gave one: the year taken for them, and "
        "from where; null when the stamps carry their year (SGLang's) or none was inferred (the times then show year 1)",
    )

    @model_serializer(mode="wrap")
    def _reason_when_unknown(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No total_unknown key while the total is given: a report with its total reads as it did
        before the key was added (schema_version 2, an optional field)."""
        return _without(handler(self), total_unknown=self.total_unknown is None)


def _without(data: dict[str, Any], **absent: bool) -> dict[str, Any]:
    """``data`` without the optional keys marked absent: a report without them serialises as it did
    before they were added (schema_version 2)."""
    for key, gone in absent.items():
        if gone:
            data.pop(key, None)
    return data


def resolve_rank(name: str | None, ranks: Iterable[str]) -> str | None:
    """The rank of ``ranks`` that ``name`` refers to: itself; 'TP1' (as the main process names a
    dead scheduler) for the rank printed 'DP0 TP1 EP1'; torchrun's 'rank1' for the TP1 process.
    None when none of them is meant."""
    if name is None:
        return None
    ranks = list(ranks)
    if name in ranks:
        return name
    wanted = "TP" + name[len("rank") :] if name.startswith("rank") and name[len("rank") :].isdigit() else name
    return next((r for r in ranks if wanted in r.split()), None)


def rank_sort_key(rank: str) -> tuple[Any, ...]:
    parts = rank.split()
    return tuple((p.rstrip("0123456789"), int(p[len(p.rstrip("0123456789")) :] or 0)) for p in parts)


def normalize_expect(expect: Mapping[str, object] | None) -> dict[str, str]:
    """``{"--mem-fraction-static": 0.88}`` -> ``{"mem_fraction_static": "0.88"}``: keys as in
    server_args, values as text (numbers, booleans and None as Python prints them)."""
    out: dict[str, str] = {}
    for key, value in (expect or {}).items():
        name = str(key).strip().lstrip("-").replace("-", "_")
        if not name:
            raise ValueError(f"expect: empty setting name for value {value!r}")
        out[name] = value.strip() if isinstance(value, str) else str(value)
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
