"""The message table: for each message a grammar recognises, the event it becomes and the phase it
is evidence of. With the grammars in ``grammars/``, this is the whole definition of what logphase
understands; adding a message is one grammar rule, one row here and a fixture line. A test checks
that every message of every grammar has its row and every row its message.

The builders read what the grammar matched by name (``p.value("requested")``, ``p.fields["avail
mem"]``): no regular expression and no token position here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from logphase.pipeline import events as ev
from logphase.pipeline.grammars import Parsed
from logphase.pipeline.phases import Phase, Role, Transition
from logphase.pipeline.values import clean, gigabytes, int_list, integer, number


class LineInfo(NamedTuple):
    """Where a line came from: what every event built from it carries (see ``EventBase``)."""

    line: int
    offset: int
    raw: str
    ts: str | None
    ts_inherited: bool
    rank: str | None

    def event(self, cls: type[ev.EventBase], rule: str | None, **fields: Any) -> ev.EventBase:
        return cls(
            line=self.line,
            offset=self.offset,
            raw=self.raw,
            ts=self.ts,
            ts_inherited=self.ts_inherited,
            rank=self.rank,
            rule=rule,
            **fields,
        )


Builder = Callable[[Parsed, str, LineInfo], ev.EventBase]  # (match, the message's text, where) -> event
Chooser = Callable[[ev.EventBase], Transition | None]  # evidence that depends on what the line says


@dataclass(frozen=True)
class Message:
    grammar: str
    build: Builder | None  # None: a multi-line record's line, assembled by records.py
    evidence: Transition | Chooser | None = None
    # printed by the scheduler processes: a single-GPU server prints them without a rank tag, and
    # they are then TP0's
    scheduler: bool = False


# -- builders ----------------------------------------------------------------------------------------


def simple(cls: type[ev.EventBase]) -> Builder:
    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        return at.event(cls, p.rule)

    return build


def with_message(cls: type[ev.EventBase]) -> Builder:
    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        return at.event(cls, p.rule, message=text)

    return build


def error(kind: str) -> Builder:
    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        detail = {name: p.value(name) or "" for name in p.values}
        return at.event(ev.ErrorLine, p.rule, error=kind, message=text, detail=detail)

    return build


def child(what: str, code: str | None = None) -> Builder:
    """A notice that a process died (an echo, mostly); ``code`` names the sub-rule with its exit code."""

    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        exit_code = integer(p.value(code)) if code else None
        return at.event(ev.ChildFailure, p.rule, what=what, exit_code=exit_code, message=text)

    return build


def fields(cls: type[ev.EventBase], **mapping: tuple[str, Callable[[str | None], Any]]) -> Builder:
    """An event whose values are ``key=value`` fields of the line: name=(key, converter)."""

    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        return at.event(cls, p.rule, **{name: conv(p.fields.get(key)) for name, (key, conv) in mapping.items()})

    return build


def _weight_load_end(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    f = p.fields
    return at.event(
        ev.WeightLoadEnd,
        p.rule,
        # "Load weight end. Committed real weights after CUDA graph capture in 3.20 s (...)"
        elapsed_s=number(f.get("elapsed") or p.value("elapsed")),
        avail_mem_gb=gigabytes(f.get("avail mem")),
        mem_usage_gb=gigabytes(f.get("mem usage")),
        model_class=clean(f.get("type")),
        dtype=clean(f.get("dtype")),
        quant=clean(f.get("quant")),
    )


def _kv_cache_dtype(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    words = [*p.tokens.get("FREE_TEXT", []), *p.tokens.get("SENTENCE", [])]
    return at.event(ev.KvCacheDtype, p.rule, dtype=clean(" ".join(words)))


def _kv_cache_allocated(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    f = p.fields
    return at.event(
        ev.KvCacheAllocated,
        p.rule,
        label=p.value("kv_label"),
        tokens=integer(f.get("#tokens")),
        k_size_gb=gigabytes(f.get("K size")),
        v_size_gb=gigabytes(f.get("V size")),
        kv_size_gb=gigabytes(f.get("KV size")),
        dtype=clean(f.get("dtype")),
    )


def _capture_begin(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    f = p.fields
    return at.event(
        ev.CaptureBegin,
        p.rule,
        graph=p.value("graph_begin") or "",
        avail_mem_gb=gigabytes(f.get("avail mem")),
        batch_sizes=int_list(f.get("bs")),
    )


def _capture_end(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    f = p.fields
    return at.event(
        ev.CaptureEnd,
        p.rule,
        graph=p.value("graph_end") or "",
        elapsed_s=number(f.get("elapsed") or f.get("Time elapsed")),
        mem_usage_gb=gigabytes(f.get("mem usage")),
        avail_mem_gb=gigabytes(f.get("avail mem")),
        batch_sizes=int_list(f.get("bs")),
    )


def _capture_sizes(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    head = p.first("CAPTURE_SIZES") or ""
    return at.event(
        ev.CaptureSizes, p.rule, what="num tokens" if "num tokens" in head else "bs", sizes=int_list(p.value("sizes")) or []
    )


def _nccl_version(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.NcclVersion, p.rule, version=(p.value("version") or "").strip())


def _startup_timings(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.StartupTimings, p.rule, timings=dict(p.fields))


def _memory_imbalance(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.MemoryImbalance, p.rule, fields=dict(p.fields))


def _runtime_batch(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    stage = "prefill" if (p.first("RUNTIME_BATCH") or "").startswith("Prefill") else "decode"
    return at.event(ev.RuntimeBatch, p.rule, stage=stage, fields=dict(p.fields))


def _scheduler_ready(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    f = p.fields
    return at.event(
        ev.SchedulerReady,
        p.rule,
        max_total_num_tokens=integer(p.value("total_tokens")),
        chunked_prefill_size=integer(f.get("chunked_prefill_size")),
        max_prefill_tokens=integer(f.get("max_prefill_tokens")),
        max_running_requests=integer(f.get("max_running_requests")),
        context_len=integer(f.get("context_len")),
        available_gpu_mem_gb=gigabytes(f.get("available_gpu_mem") or f.get("available_cpu_mem")),
    )


def override(setting: str | None, requested: str | None, actual: str | None) -> Builder:
    """SGLang changing a setting on its own: ``setting`` etc. name the sub-rules that hold them."""

    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        name = (p.value(setting) if setting else None) or "setting"
        value = p.value(actual) if actual else None
        return at.event(
            ev.ParameterOverride,
            p.rule,
            setting=name.strip().lower().replace(" ", "_"),
            requested=p.value(requested) if requested else None,
            actual=value,
            message=text,
        )

    return build


def _override_disabled(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    feature = (p.value("feature") or "feature").strip().lower().replace(" ", "_")
    return at.event(ev.ParameterOverride, p.rule, setting=feature, requested="enabled", actual="disabled", message=text)


def _override_adjusted(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    actual = number(p.first("REST"))
    return at.event(
        ev.ParameterOverride,
        p.rule,
        setting=(p.value("adjusted_setting") or "setting").strip().lower().replace(" ", "_"),
        requested=None,
        actual=None if actual is None else f"{actual:g}",
        message=text,
    )


def _gloo(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(
        ev.GlooConnected,
        p.rule,
        gloo_rank=int(p.value("gloo_rank") or 0),
        connected=int(p.value("connected") or 0),
        expected=int(p.value("expected") or 0),
    )


def _gloo_not_connected(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(
        ev.GlooNotConnected, p.rule, gloo_rank=int(p.value("gloo_rank") or 0), missing=[int(i) for i in p.items("missing")]
    )


def nccl(level: str) -> Builder:
    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        return at.event(
            ev.NcclLog,
            p.rule,
            level=level,
            host=p.first("NCCL_HOST"),
            pid=integer(p.value("pid")),
            device=integer(p.value("device")),
            source=p.first("NCCL_SOURCE"),
            message=(p.first("REST") or "").strip(),
        )

    return build


def _torch_message(p: Parsed, text: str) -> str:
    """What follows the glog prefix ('...file.cpp:123] ')."""
    location = p.first("SOURCE_LOCATION")
    if location is None:
        return text
    return text.split(location + "]", 1)[-1].strip()


def torch_child(what: str) -> Builder:
    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        code = integer(p.value("code"))
        return at.event(ev.ChildFailure, p.rule, what=what, exit_code=code, message=_torch_message(p, text))

    return build


def distributed(error_kind: str) -> Builder:
    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        return at.event(ev.DistributedError, p.rule, error=error_kind, message=_torch_message(p, text))

    return build


def _torch_other(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    stamp = (p.first("GLOG_STAMP") or p.first("C10_STAMP") or "I").lstrip("[")
    return at.event(
        ev.TorchLog,
        p.rule,
        level=stamp[0],
        source=p.first("SOURCE_LOCATION") or "",
        message=(p.first("TORCH_TEXT") or "").strip(),
    )


def _progress_bar(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    params: dict[str, str] = {}
    bar_params = p.child("bar_params")
    for param in bar_params.children if bar_params else []:
        key, value = param.first("BAR_KEY"), param.first("BAR_VALUE")
        if key and value:
            params[key] = value
    return at.event(
        ev.ProgressBar,
        p.rule,
        desc=(p.first("BAR_DESC") or "").strip(),
        percent=int((p.first("BAR_PERCENT") or "0").strip().rstrip("%")),
        done=int(p.value("done") or 0),
        total=int(p.value("total") or 0),
        batch_size=integer(params.get("bs")),
        num_tokens=integer(params.get("num_tokens")),
        avail_mem_gb=gigabytes(params.get("avail_mem")),
    )


def http_state(state: str) -> Builder:
    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        level = (p.first("UVICORN_LEVEL") or "INFO:").rstrip(":")
        return at.event(ev.HttpServer, p.rule, level=level, state=state, message=text.split(":", 1)[-1].strip())

    return build


def _http_access(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(
        ev.HttpAccess,
        p.rule,
        client=p.value("client") or "",
        method=p.value("method") or "",
        path=p.value("path") or "",
        status=int(p.value("status") or 0),
    )


def _bind_failed(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.ErrorLine, p.rule, error="bind_failed", message=text.split(":", 1)[-1].strip())


def _python_warning(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.PythonWarning, p.rule, category=p.value("category") or "Warning", message=(p.first("REST") or "").strip())


def _killed(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.ChildFailure, p.rule, what="killed", exit_code=137, message=text.strip())


# -- evidence that depends on the line ---------------------------------------------------------------

WEIGHTS_BAR = Transition(Phase.WEIGHT_LOADING, Role.EVIDENCE)
CAPTURE_BAR = Transition(Phase.CUDA_GRAPH_CAPTURE, Role.EVIDENCE)
HTTP_UP = Transition(Phase.WARMUP, Role.EVIDENCE, server_level=True)
# what the warmup request asks (spec 2.3): /model_info first, then one generate/chat/encode request
WARMUP_PATHS = ("/model_info", "/get_model_info", "/generate", "/encode", "/v1/chat/completions", "/health")


def bar_evidence(event: ev.EventBase) -> Transition | None:
    """Shard bars are weight loading; 'Capturing ...' and 'Compiling num tokens' bars are capture."""
    desc = getattr(event, "desc", "")
    if "shards" in desc or "checkpoint" in desc:
        return WEIGHTS_BAR
    if desc.startswith(("Capturing", "Compiling num tokens")):
        return CAPTURE_BAR
    return None


def access_evidence(event: ev.EventBase) -> Transition | None:
    """The warmup's requests are warmup evidence (ignored once the server is ready)."""
    return HTTP_UP if str(getattr(event, "path", "")).startswith(WARMUP_PATHS) else None


def _t(phase: Phase, role: Role, server_level: bool = False) -> Transition:
    return Transition(phase, role, server_level)


D, W, M, C = Phase.DISTRIBUTED_INIT, Phase.WEIGHT_LOADING, Phase.MEMORY_POOL, Phase.CUDA_GRAPH_CAPTURE
BEGIN, EVIDENCE, WEAK, END = Role.BEGIN, Role.EVIDENCE, Role.WEAK, Role.END
CLOSE = Transition(None, Role.CLOSE)

# -- the table -----------------------------------------------------------------------------------------

MESSAGES: dict[str, Message] = {
    # server_args.lark: the dump (its builder is in classify.py: a grammar of its own values)
    "server_args": Message("server_args", None, _t(Phase.LAUNCH, BEGIN, server_level=True)),
    # sglang.lark
    "dist_init_begin": Message("sglang", simple(ev.DistInitBegin), _t(D, BEGIN), scheduler=True),
    "dist_init_end": Message(
        "sglang",
        fields(ev.DistInitEnd, elapsed_s=("elapsed", number), mem_usage_gb=("mem usage", gigabytes)),
        _t(D, END),
        scheduler=True,
    ),
    "memory_baseline": Message(
        "sglang", fields(ev.MemoryBaseline, mem_usage_gb=("mem usage", gigabytes)), _t(D, WEAK), scheduler=True
    ),
    "nccl_version": Message("sglang", _nccl_version, _t(D, WEAK), scheduler=True),
    "nccl_warmup": Message("sglang", with_message(ev.CollectiveWarmup), _t(D, WEAK), scheduler=True),
    "weight_load_begin": Message(
        "sglang", fields(ev.WeightLoadBegin, avail_mem_gb=("avail mem", gigabytes)), _t(W, BEGIN), scheduler=True
    ),
    "weight_load_end": Message("sglang", _weight_load_end, _t(W, END), scheduler=True),
    "kv_cache_dtype": Message("sglang", _kv_cache_dtype, _t(M, EVIDENCE), scheduler=True),
    "kv_cache_allocated": Message("sglang", _kv_cache_allocated, _t(M, EVIDENCE), scheduler=True),
    "mamba_cache_allocated": Message(
        "sglang",
        fields(
            ev.MambaCacheAllocated,
            max_mamba_cache_size=("max_mamba_cache_size", integer),
            conv_state_gb=("conv_state size", gigabytes),
            ssm_state_gb=("ssm_state size", gigabytes),
        ),
        _t(M, EVIDENCE),
        scheduler=True,
    ),
    "swa_memory_pool": Message("sglang", with_message(ev.SwaMemoryPool), _t(M, EVIDENCE), scheduler=True),
    "memory_pool_end": Message(
        "sglang", fields(ev.MemoryPoolEnd, avail_mem_gb=("avail mem", gigabytes)), _t(M, END), scheduler=True
    ),
    "capture_begin": Message("sglang", _capture_begin, _t(C, BEGIN), scheduler=True),
    "capture_end": Message("sglang", _capture_end, _t(C, END), scheduler=True),
    "capture_sizes": Message("sglang", _capture_sizes, _t(C, EVIDENCE), scheduler=True),
    "capture_failed": Message("sglang", error("capture_failed")),
    "scheduler_ready": Message("sglang", _scheduler_ready, CLOSE, scheduler=True),
    "startup_timings": Message("sglang", _startup_timings, Transition(None, Role.CLOSE, server_level=True)),
    "server_ready": Message("sglang", simple(ev.ServerReady), _t(Phase.READY, BEGIN, server_level=True)),
    "pd_warmup": Message("sglang", with_message(ev.WarmupMarker), HTTP_UP),
    "warmup_failed": Message("sglang", error("warmup_failed")),
    "sigquit": Message("sglang", child("sigquit")),
    "kill_process_tree": Message("sglang", child("kill_process_tree")),
    "scheduler_died": Message("sglang", child("scheduler_died", "died_code")),
    "scheduler_dead": Message("sglang", child("scheduler_dead")),
    "exit_code": Message("sglang", child("exit_code", "code")),
    "init_failed": Message("sglang", error("init_failed")),
    "watchdog_timeout": Message("sglang", error("watchdog_timeout")),
    "subprocess_crashed": Message("sglang", child("subprocess_crashed", "code")),
    "child_terminated": Message("sglang", child("child_terminated", "code")),
    "not_enough_memory": Message("sglang", error("not_enough_memory")),
    "kv_no_room": Message("sglang", error("not_enough_memory")),
    "port_in_use": Message("sglang", error("port_in_use")),
    "memory_imbalance": Message("sglang", _memory_imbalance),
    "override_reduced": Message("sglang", override("setting", "requested", "actual")),
    "override_reset": Message("sglang", override("phrase", None, "actual")),
    "override_profiled": Message("sglang", override("setting_key", "requested", "actual")),
    "override_capped": Message("sglang", override("setting", None, "actual")),
    "override_disabled": Message("sglang", _override_disabled),
    "override_adjusted": Message("sglang", _override_adjusted),
    "shutdown": Message("sglang", with_message(ev.Shutdown)),
    "runtime_batch": Message("sglang", _runtime_batch),
    # gloo.lark
    "gloo_connected": Message("gloo", _gloo, _t(D, WEAK)),
    "gloo_not_connected": Message("gloo", _gloo_not_connected, _t(D, WEAK)),
    "gloo_info": Message("gloo", _gloo, _t(D, WEAK)),
    # nccl.lark
    "nccl_info": Message("nccl", nccl("INFO")),
    "nccl_warn": Message("nccl", nccl("WARN")),
    "nccl_trace": Message("nccl", nccl("TRACE")),
    "nccl_bare_version": Message("nccl", nccl("VERSION")),
    # torch.lark
    "elastic_failed": Message("torch", torch_child("elastic_failed")),
    "closing_signal": Message("torch", torch_child("closing_signal")),
    "pg_not_destroyed": Message("torch", torch_child("pg_not_destroyed")),
    "collective_timeout": Message("torch", distributed("collective_timeout")),
    "nccl_aborting": Message("torch", distributed("nccl_abort")),
    "store_timeout": Message("torch", distributed("store_timeout")),
    "socket_failure": Message("torch", distributed("socket_failure")),
    "torch_other": Message("torch", _torch_other),
    # tqdm.lark
    "progress_bar": Message("tqdm", _progress_bar, bar_evidence),
    # http.lark
    "http_started": Message("http", http_state("started"), HTTP_UP),
    "http_waiting": Message("http", http_state("waiting"), HTTP_UP),
    "http_startup_complete": Message("http", http_state("startup_complete"), HTTP_UP),
    "http_running": Message("http", http_state("running"), HTTP_UP),
    "http_access": Message("http", _http_access, access_evidence),
    "http_bind_failed": Message("http", _bind_failed),
    "http_startup_failed": Message("http", http_state("startup_failed")),
    "http_shutdown": Message("http", http_state("shutdown")),
    "http_other": Message("http", http_state("other")),
    # process.lark
    "python_warning": Message("process", _python_warning),
    "killed": Message("process", _killed),
    # traceback.lark: the lines of a multi-line record (records.py)
    "tb_header": Message("traceback", None),
    "tb_thread_exception": Message("traceback", None),
    "tb_fatal": Message("traceback", None),
    "tb_thread_dump": Message("traceback", None),
    "tb_extensions": Message("traceback", None),
    "tb_frame": Message("traceback", None),
    "tb_chain": Message("traceback", None),
    "tb_exception": Message("traceback", None),
}

SCHEDULER_RULES = frozenset(rule for rule, m in MESSAGES.items() if m.scheduler)


def evidence_of(event: ev.EventBase) -> Transition | None:
    """The phase evidence of an event: what its message's row says, given what the line says."""
    # events built by hand (tests, other programs) may leave out the rule: their kind names it
    message = MESSAGES.get(event.rule or event.kind)
    if message is None or message.evidence is None:
        return None
    if isinstance(message.evidence, Transition):
        return message.evidence
    return message.evidence(event)


def transitions() -> dict[str, Transition]:
    """Every fixed transition of the table, by message (for validating the table)."""
    return {rule: m.evidence for rule, m in MESSAGES.items() if isinstance(m.evidence, Transition)}
