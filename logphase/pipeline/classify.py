"""Stage 2b: one logical line -> one typed event (or None when nothing recognises it).

A cheap test picks the grammar a line can belong to, so Lark only sees lines that can carry an
event; the grammars in ``grammars/`` remain the only definition of each message's syntax. The
builders below map a grammar match to the pydantic event and convert field texts to numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from logphase.pipeline import events as ev
from logphase.pipeline.envelope import Envelope
from logphase.pipeline.grammars import Parsed, parse, terminal_pattern
from logphase.pipeline.values import clean, gigabytes, int_list, integer, number

# Lines longer than this never reach Lark: the field regexes are linear per field, but quadratic
# on a pathological line with many separators and no '='.
MAX_PARSE_CHARS = 4096

Meta = dict[str, Any]

# Heads of every SGLang message that sglang.lark knows (its `start` alternatives).
_SGLANG_TRIGGER = re.compile(
    r"server_args=|Init (?:torch distributed|parallel) |Memory baseline|sglang is using nccl"
    r"|[NRH]CCL\S* warmup completed|Load weight |Using KV cache dtype|KV [Cc]ache |Post-capture KV"
    r"|Mamba Cache is allocated|Use sliding window memory pool|Memory pool end|Capture "
    r"|max_total_num_tokens=|Engine startup timings|The server is fired up|Start of pd"
    r"|End of .*warm ?up|Prefill disaggregation mode warm|Disaggregation warmup failed"
    r"|\w+ hit an exception|Received sigquit|SIGQUIT received|kill_process_tree called"
    r"|Rank \d+ scheduler|Exit code: |Initialization failed|[Ww]atchdog timeout \(|Subprocess "
    r"|Scheduler or DataParallelController|Not enough memory|Not enough GPU memory"
    r"|Port is already in use|port \d+ is in use|engine_info_bootstrap_port"
    r"|The memory capacity is unbalanced|was reduced from the requested| is reset to "
    r"|is larger than the profiled value| is capped to |Disabl(?:e|ing) |is adjusted to "
    r"|SIGTERM received|Gracefully exiting|Signal SIGTERM|(?:Prefill|Decode) batch"
)
_GLOG = re.compile(r"\[?[IWEF]\d{3,4} \d\d:\d\d:\d\d")
_NCCL_ORIGIN = re.compile(r"(?:\[[\d\- :]+\] )?[\w.\-]+:\d+:\d+ (?:\[\d+\] )?")
_UVICORN_LEVELS = ("INFO:", "ERROR:", "WARNING:", "DEBUG:", "CRITICAL:")
_PY_WARNING = re.compile(r"(?P<path>\S+):(?P<lineno>\d+): (?P<category>[A-Z]\w*Warning): (?P<msg>.*)")
_KILLED = re.compile(r"(?:.*: line \d+: +\d+ )?Killed(?:\s|$)")


def _compile_fast_paths() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Regexes for the two high-volume line families (access log, batch statistics), composed from
    the grammars' own terminals: a served log has millions of these, and Lark costs ~50 us each."""
    t = terminal_pattern
    access = re.compile(
        rf"(?P<level>{t('http', 'UVICORN_LEVEL')}) +(?P<client>{t('http', 'CLIENT')}) - \""
        rf"(?P<method>{t('http', 'METHOD')}) (?P<path>{t('http', 'PATH')}) {t('http', 'PROTOCOL')}\" (?P<status>\d+)"
    )
    batch = re.compile(t("sglang", "RUNTIME_BATCH"))
    field = re.compile(rf"(?P<key>{t('sglang', 'FIELD_KEY')})(?:=|: )(?P<value>{t('sglang', 'FIELD_VALUE')})")
    return access, batch, field


_ACCESS, _BATCH, _FIELD = _compile_fast_paths()
_NCCL_INFO = re.compile(rf"(?P<origin>{terminal_pattern('nccl', 'NCCL_ORIGIN')}) NCCL INFO(?: (?P<rest>.*))?", re.DOTALL)


def _compile_plain_lines() -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """Physical lines whose events only move the clock: ``[ts TP0] Decode batch, ...``,
    ``[ts TP0] Prefill batch, ...`` and uvicorn access lines, which fill a served log.

    A plain line is one that classify() turns into ``RuntimeBatch`` / ``HttpAccess`` through the
    fast paths above: its message starts with what _BATCH / _ACCESS accept, and it is no longer
    than MAX_PARSE_CHARS (every part is bounded). Its timestamp is any 19 bytes here (checking it
    digit by digit costs the regex a third more), so the engine checks the shape of all of them
    at once: ``YYYY-MM-DD HH:MM:SS``, what prefix.lark's TIMESTAMP accepts without fractions.
    Valid for ASCII text without ``\\r``, ``\\x1b`` and ``\\x1c``-``\\x1f`` only (str ``\\s`` has
    those, bytes ``\\s`` not), which lines.LineSplitter checks. The engine adds the conditions
    that depend on state (access lines before ready may be warmup evidence, NCCL text, open
    tracebacks).

    Returns two patterns. ``lines``: for ``findall`` over "\\n" + a block of whole lines; one
    match for every "\\n", groups (timestamp, rank tags) of the line after it if that line is
    plain, else empty (the phase machine keeps a clock per writer). Each match starts at a
    "\\n" (a literal: the regex engine jumps to it) and stops before the next, so there is no
    scan for line starts. ``run``: one or more plain lines from a line start, each through its
    "\\n"."""

    def term(source: str, name: str, bound: int) -> bytes:
        # the grammar's terminal with each + bounded: a longer line takes the long way
        return terminal_pattern(source, name).replace("+", f"{{1,{bound}}}").encode()

    tags = rb"((?: (?:" + terminal_pattern("prefix", "RANK_TAG").encode() + rb"))*)"
    batch = rb"(?:Prefill|Decode) batch(?: \[\d{1,20}\])?[.,][^\n]{0,4000}"
    access = (
        rb"INFO: {1,64}"
        + term("http", "CLIENT", 256)
        + rb' - "'
        + term("http", "METHOD", 16)
        + rb" "
        + term("http", "PATH", 2048)
        + rb" "
        + term("http", "PROTOCOL", 16)
        + rb'" \d{1,9}[^\n]{0,1024}'
    )
    # longest messages: batch 13 + 23 + 1 + 4000, access 5 + 64 + 256 + 4 + 16 + 1 + 2048 + 1 + 5 + 16 + 2 + 9 + 1024
    assert MAX_PARSE_CHARS >= 4037
    head = rb"\[(.{19})" + tags + rb"\] (?:" + access + rb"|" + batch + rb")"
    lines = re.compile(rb"\n(?:" + head + rb"(?=\n)|[^\n]*)")
    run = re.compile(rb"(?m)^(?:" + head.replace(b"(.{19})((?: ", b".{19}(?:(?: ", 1) + rb"\n)+")
    assert lines.groups == 2 and run.groups == 0
    return lines, run


PLAIN_LINES, PLAIN_RUN = _compile_plain_lines()


def foreign_source(env: Envelope) -> bool:
    """True when the line has the envelope of a known writer: it cannot continue a traceback."""
    if env.ts is not None:
        return True
    text = env.message
    if not text:
        return False
    head = text[0]
    if head == "[":
        return text.startswith("[Gloo]") or bool(_GLOG.match(text)) or " INFO Rank " in text
    if head in "IWEF" and _GLOG.match(text):
        return True
    if text.startswith(_UVICORN_LEVELS):
        return True
    return _is_nccl(text) or "%|" in text or "% Completed" in text


def _is_nccl(text: str) -> bool:
    return (" NCCL " in text and _NCCL_ORIGIN.match(text) is not None) or text.startswith("NCCL version")


def classify(env: Envelope, meta: Meta) -> ev.EventBase | None:
    text = env.message
    if text.startswith("server_args="):
        # thousands of characters, but its grammar has no backtracking field patterns
        return _server_args(text, meta)
    if not text or len(text) > MAX_PARSE_CHARS:
        return None
    if text.startswith(("Decode batch", "Prefill batch")):
        return _runtime_batch(text, meta)
    if env.ts is not None:
        if " NCCL WARN" in text or " NCCL INFO" in text:
            return _nccl(text, meta)
        if text.startswith(_UVICORN_LEVELS):
            return _http(text, meta)
        if _SGLANG_TRIGGER.search(text):
            return _sglang(text, meta)
        return None
    head = text[0]
    if head == "[":
        if text.startswith("[Gloo]") or " INFO Rank " in text:
            return _build("gloo", text, meta)
        if _GLOG.match(text):
            return _torch(text, meta)
    elif head in "IWEF" and _GLOG.match(text):
        return _torch(text, meta)
    if text.startswith(_UVICORN_LEVELS):
        return _http(text, meta)
    if _is_nccl(text):
        return _nccl(text, meta)
    if "%|" in text or "% Completed" in text:
        return _build("tqdm", text, meta)
    m = _PY_WARNING.match(text)
    if m:
        return ev.PythonWarning(category=m.group("category"), message=m.group("msg"), **_meta(meta))
    if _KILLED.fullmatch(text.strip()):
        return ev.ChildFailure(what="killed", exit_code=137, message=text.strip(), **_meta(meta))
    if _SGLANG_TRIGGER.search(text):
        # no timestamp: SGLang <= 0.5.9 before logging is configured, or a pasted fragment
        return _sglang(text, meta)
    return None


# -- per-source entry points ---------------------------------------------------------------------


def _sglang(text: str, meta: Meta) -> ev.EventBase | None:
    return _build("sglang", text, meta)


def _nccl(text: str, meta: Meta) -> ev.EventBase | None:
    m = _NCCL_INFO.fullmatch(text)
    if m is not None:
        # what nccl.lark's nccl_info gives, without Lark (thousands of these with NCCL_DEBUG=INFO)
        where, dev = m.group("origin").split(" ", 1)
        host, pid_text, _tid = where.rsplit(":", 2)
        return ev.NcclLog(
            level="INFO",
            host=host,
            pid=int(pid_text),
            device=int(dev.strip("[]")),
            source=None,
            message=(m.group("rest") or "").strip(),
            **_meta(meta),
        )
    return _build("nccl", text, meta)


def _torch(text: str, meta: Meta) -> ev.EventBase | None:
    return _build("torch", text, meta)


def _runtime_batch(text: str, meta: Meta) -> ev.EventBase | None:
    head = _BATCH.match(text)
    if head is None:
        return _sglang(text, meta)
    fields = {m.group("key").strip(): m.group("value").strip() for m in _FIELD.finditer(text, head.end())}
    stage = "prefill" if text.startswith("Prefill") else "decode"
    return ev.RuntimeBatch(stage=stage, fields=fields, **_meta(meta))


def _http(text: str, meta: Meta) -> ev.EventBase | None:
    m = _ACCESS.match(text)
    if m is not None:
        return ev.HttpAccess(
            client=m.group("client"), method=m.group("method"), path=m.group("path"), status=int(m.group("status")), **_meta(meta)
        )
    event = _build("http", text, meta)
    if isinstance(event, ev.HttpServer) and event.state == "other":
        # SGLang sometimes logs its own markers through uvicorn's logger ("INFO:     The server is
        # fired up and ready to roll!"): the SGLang meaning wins.
        inner = event.message
        if _SGLANG_TRIGGER.search(inner):
            return _sglang(inner, meta) or event
    return event


def _build(source: str, text: str, meta: Meta) -> ev.EventBase | None:
    parsed = parse(source, text)
    if parsed is None:
        return None
    builder = _BUILDERS.get(parsed.rule)
    return builder(parsed, meta) if builder else None


# -- builders: grammar match -> typed event -----------------------------------------------------


def _rest(p: Parsed) -> str:
    return (p.first("REST") or "").strip()


def _server_args(text: str, meta: Meta) -> ev.EventBase:
    from logphase.pipeline.server_args import parse_server_args

    args, fmt = parse_server_args(text[len("server_args=") :])
    return ev.ServerArgs(args=args, args_format=fmt, **_meta(meta))


def _weight_load_end(p: Parsed, meta: Meta) -> ev.EventBase:
    f = p.fields
    elapsed = number(f.get("elapsed"))
    if elapsed is None:
        # "Load weight end. Committed real weights after CUDA graph capture in 3.20 s (...)"
        for text in p.all("FREE_TEXT"):
            if " in " in text:
                elapsed = number(text.split(" in ", 1)[1])
                break
    return ev.WeightLoadEnd(
        elapsed_s=elapsed,
        avail_mem_gb=gigabytes(f.get("avail mem")),
        mem_usage_gb=gigabytes(f.get("mem usage")),
        model_class=clean(f.get("type")),
        dtype=clean(f.get("dtype")),
        quant=clean(f.get("quant")),
        **_meta(meta),
    )


def _kv_cache_allocated(p: Parsed, meta: Meta) -> ev.EventBase:
    f = p.fields
    head = p.first("KV_CACHE_ALLOCATED") or ""
    label = head.split("KV", 1)[0].strip() or None
    return ev.KvCacheAllocated(
        label=label,
        tokens=integer(f.get("#tokens")),
        k_size_gb=gigabytes(f.get("K size")),
        v_size_gb=gigabytes(f.get("V size")),
        kv_size_gb=gigabytes(f.get("KV size")),
        dtype=clean(f.get("dtype")),
        **_meta(meta),
    )


def _graph_name(head: str, suffix: str) -> str:
    return head[len("Capture ") : -len(suffix)].strip()


def _capture_begin(p: Parsed, meta: Meta) -> ev.EventBase:
    f = p.fields
    return ev.CaptureBegin(
        graph=_graph_name(p.first("CAPTURE_BEGIN") or "", "begin."),
        avail_mem_gb=gigabytes(f.get("avail mem")),
        batch_sizes=int_list(f.get("bs")),
        **_meta(meta),
    )


def _capture_end(p: Parsed, meta: Meta) -> ev.EventBase:
    f = p.fields
    return ev.CaptureEnd(
        graph=_graph_name(p.first("CAPTURE_END") or "", "end."),
        elapsed_s=number(f.get("elapsed") or f.get("Time elapsed")),
        mem_usage_gb=gigabytes(f.get("mem usage")),
        avail_mem_gb=gigabytes(f.get("avail mem")),
        batch_sizes=int_list(f.get("bs")),
        **_meta(meta),
    )


def _capture_sizes(p: Parsed, meta: Meta) -> ev.EventBase:
    head = p.first("CAPTURE_SIZES") or ""
    what = "num tokens" if "num tokens" in head else "bs"
    return ev.CaptureSizes(what=what, sizes=int_list(p.first("FIELD_VALUE")) or [], **_meta(meta))


def _scheduler_ready(p: Parsed, meta: Meta) -> ev.EventBase:
    f = p.fields
    return ev.SchedulerReady(
        max_total_num_tokens=integer(p.first("FIELD_VALUE")),
        chunked_prefill_size=integer(f.get("chunked_prefill_size")),
        max_prefill_tokens=integer(f.get("max_prefill_tokens")),
        max_running_requests=integer(f.get("max_running_requests")),
        context_len=integer(f.get("context_len")),
        available_gpu_mem_gb=gigabytes(f.get("available_gpu_mem") or f.get("available_cpu_mem")),
        **_meta(meta),
    )


def _override(setting: str, requested: str | None, actual: str | None, meta: Meta) -> ev.EventBase:
    return ev.ParameterOverride(setting=setting, requested=requested, actual=actual, message=meta["raw_message"], **_meta(meta))


def _meta(meta: Meta) -> Meta:
    return {k: v for k, v in meta.items() if k != "raw_message"}


def _override_reduced(p: Parsed, meta: Meta) -> ev.EventBase:
    ints = p.all("INT")
    return _override(p.first("OVERRIDE_SETTING") or "?", ints[0], ints[1], meta)


def _override_reset(p: Parsed, meta: Meta) -> ev.EventBase:
    phrase = (p.first("OVERRIDE_PHRASE") or "").strip().lower().replace(" ", "_")
    return _override(phrase, None, p.first("INT"), meta)


def _override_profiled(p: Parsed, meta: Meta) -> ev.EventBase:
    ints = p.all("INT")
    return _override((p.first("PROFILED_KEY") or "?").rstrip("="), ints[0], ints[1], meta)


def _override_capped(p: Parsed, meta: Meta) -> ev.EventBase:
    return _override(p.first("CAPPED_SETTING") or "?", None, p.first("INT"), meta)


def _override_disabled(p: Parsed, meta: Meta) -> ev.EventBase:
    head = p.first("DISABLED_FEATURE") or ""
    feature = re.sub(r"^Disabl(?:e|ing) | (?:because|since|as|for|due to) $", "", head).strip()
    return _override(feature.lower().replace(" ", "_"), "enabled", "disabled", meta)


def _override_adjusted(p: Parsed, meta: Meta) -> ev.EventBase:
    head = p.first("ADJUSTED") or ""
    m = re.search(r"The ([\w ]+?) is adjusted to $", head)
    setting = (m.group(1) if m else "setting").strip().lower().replace(" ", "_")
    actual = number(_rest(p))
    return _override(setting, None, None if actual is None else f"{actual:g}", meta)


def _error(kind: str) -> Callable[[Parsed, Meta], ev.EventBase]:
    def build(p: Parsed, meta: Meta) -> ev.EventBase:
        return ev.ErrorLine(error=kind, message=meta["raw_message"], **_meta(meta))  # type: ignore[arg-type]

    return build


def _child(what: str, code_index: int | None = None) -> Callable[[Parsed, Meta], ev.EventBase]:
    def build(p: Parsed, meta: Meta) -> ev.EventBase:
        ints = p.all("INT")
        code = int(ints[code_index]) if code_index is not None and len(ints) > code_index else None
        return ev.ChildFailure(what=what, exit_code=code, message=meta["raw_message"], **_meta(meta))  # type: ignore[arg-type]

    return build


def _simple(cls: type[ev.EventBase], **fixed: Any) -> Callable[[Parsed, Meta], ev.EventBase]:
    def build(p: Parsed, meta: Meta) -> ev.EventBase:
        return cls(**fixed, **_meta(meta))

    return build


def _with_message(cls: type[ev.EventBase], **fixed: Any) -> Callable[[Parsed, Meta], ev.EventBase]:
    def build(p: Parsed, meta: Meta) -> ev.EventBase:
        return cls(message=meta["raw_message"], **fixed, **_meta(meta))

    return build


def _gloo_connected(p: Parsed, meta: Meta) -> ev.EventBase:
    ints = [int(i) for i in p.all("INT")]
    return ev.GlooConnected(gloo_rank=ints[0], connected=ints[1], expected=ints[2], **_meta(meta))


def _gloo_not_connected(p: Parsed, meta: Meta) -> ev.EventBase:
    ints = [int(i) for i in p.all("INT")]
    return ev.GlooNotConnected(gloo_rank=ints[0], missing=ints[1:], **_meta(meta))


def _nccl_line(level: str) -> Callable[[Parsed, Meta], ev.EventBase]:
    def build(p: Parsed, meta: Meta) -> ev.EventBase:
        origin = p.first("NCCL_ORIGIN")
        host = pid = device = None
        if origin:
            where, dev = origin.split(" ", 1)
            host, pid_text, _tid = where.rsplit(":", 2)
            pid, device = int(pid_text), int(dev.strip("[]"))
        return ev.NcclLog(
            level=level,
            host=host,
            pid=pid,
            device=device,
            source=p.first("NCCL_SOURCE"),  # type: ignore[arg-type]
            message=_rest(p),
            **_meta(meta),
        )

    return build


def _torch_line(p: Parsed, meta: Meta) -> ev.EventBase:
    stamp = p.first("GLOG_STAMP") or "I"
    source = p.first("SOURCE_LOCATION") or ""
    inner = p.children[0] if p.children else None
    message = (p.first("TORCH_TEXT") or "").strip()
    base = _meta(meta)
    if inner is not None:
        full = meta["raw_message"].split("] ", 1)[-1]
        ints = [int(i) for i in inner.all("INT")]
        if inner.rule == "elastic_failed":
            return ev.ChildFailure(what="elastic_failed", exit_code=ints[0], message=full, **base)
        if inner.rule == "closing_signal":
            return ev.ChildFailure(what="closing_signal", message=full, **base)
        if inner.rule == "pg_not_destroyed":
            return ev.ChildFailure(what="pg_not_destroyed", message=full, **base)
        errors = {
            "collective_timeout": "collective_timeout",
            "nccl_aborting": "nccl_abort",
            "store_timeout": "store_timeout",
            "socket_failure": "socket_failure",
        }
        if inner.rule in errors:
            return ev.DistributedError(error=errors[inner.rule], message=full, **base)  # type: ignore[arg-type]
    return ev.TorchLog(level=stamp[0], source=source, message=message, **base)  # type: ignore[arg-type]


def _progress_bar(p: Parsed, meta: Meta) -> ev.EventBase:
    params: dict[str, str] = {}
    for child in p.children:
        if child.rule == "bar_params":
            for param in child.children:
                key, value = param.first("BAR_KEY"), param.first("BAR_VALUE")
                if key and value:
                    params[key] = value
    ints = p.all("INT")
    return ev.ProgressBar(
        desc=(p.first("BAR_DESC") or "").strip(),
        percent=int((p.first("BAR_PERCENT") or "0").strip().rstrip("%")),
        done=int(ints[0]),
        total=int(ints[1]),
        batch_size=integer(params.get("bs")),
        num_tokens=integer(params.get("num_tokens")),
        avail_mem_gb=gigabytes(params.get("avail_mem")),
        **_meta(meta),
    )


def _http_line(p: Parsed, meta: Meta) -> ev.EventBase:
    level = (p.first("UVICORN_LEVEL") or "INFO:").rstrip(":")
    base = _meta(meta)
    message = meta["raw_message"].split(":", 1)[-1].strip()
    inner = p.children[0] if p.children else None
    if inner is None:
        return ev.HttpServer(level=level, state="other", message=message, **base)
    if inner.rule == "http_access":
        return ev.HttpAccess(
            client=inner.first("CLIENT") or "",
            method=inner.first("METHOD") or "",
            path=inner.first("PATH") or "",
            status=int(inner.first("INT") or 0),
            **base,
        )
    if inner.rule == "http_bind_failed":
        return ev.ErrorLine(error="bind_failed", message=message, **base)
    states = {
        "http_started": "started",
        "http_waiting": "waiting",
        "http_startup_complete": "startup_complete",
        "http_running": "running",
        "http_startup_failed": "startup_failed",
        "http_shutdown": "shutdown",
    }
    return ev.HttpServer(level=level, state=states.get(inner.rule, "other"), message=message, **base)  # type: ignore[arg-type]


def _fields_event(
    cls: type[ev.EventBase], **mapping: tuple[str, Callable[[str | None], Any]]
) -> Callable[[Parsed, Meta], ev.EventBase]:
    def build(p: Parsed, meta: Meta) -> ev.EventBase:
        values = {name: conv(p.fields.get(key)) for name, (key, conv) in mapping.items()}
        return cls(**values, **_meta(meta))

    return build


_BUILDERS: dict[str, Callable[[Parsed, Meta], ev.EventBase]] = {
    # sglang.lark
    "dist_init_begin": _simple(ev.DistInitBegin),
    "dist_init_end": _fields_event(ev.DistInitEnd, elapsed_s=("elapsed", number), mem_usage_gb=("mem usage", gigabytes)),
    "memory_baseline": _fields_event(ev.MemoryBaseline, mem_usage_gb=("mem usage", gigabytes)),
    "nccl_version": lambda p, meta: ev.NcclVersion(version=_rest(p), **_meta(meta)),
    "nccl_warmup": _with_message(ev.CollectiveWarmup),
    "weight_load_begin": _fields_event(ev.WeightLoadBegin, avail_mem_gb=("avail mem", gigabytes)),
    "weight_load_end": _weight_load_end,
    "kv_cache_dtype": lambda p, meta: ev.KvCacheDtype(
        dtype=clean(" ".join(p.all("FREE_TEXT") + p.all("SENTENCE"))), **_meta(meta)
    ),
    "kv_cache_allocated": _kv_cache_allocated,
    "mamba_cache_allocated": _fields_event(
        ev.MambaCacheAllocated,
        max_mamba_cache_size=("max_mamba_cache_size", integer),
        conv_state_gb=("conv_state size", gigabytes),
        ssm_state_gb=("ssm_state size", gigabytes),
    ),
    "swa_memory_pool": _with_message(ev.SwaMemoryPool),
    "memory_pool_end": _fields_event(ev.MemoryPoolEnd, avail_mem_gb=("avail mem", gigabytes)),
    "capture_begin": _capture_begin,
    "capture_end": _capture_end,
    "capture_sizes": _capture_sizes,
    "capture_failed": _error("capture_failed"),
    "scheduler_ready": _scheduler_ready,
    "startup_timings": lambda p, meta: ev.StartupTimings(timings=dict(p.fields), **_meta(meta)),
    "server_ready": _simple(ev.ServerReady),
    "pd_warmup": _with_message(ev.WarmupMarker),
    "warmup_failed": _error("warmup_failed"),
    "sigquit": _child("sigquit"),
    "kill_process_tree": _child("kill_process_tree"),
    "scheduler_died": _child("scheduler_died", 1),
    "scheduler_dead": _child("scheduler_dead"),
    "exit_code": _child("exit_code", 0),
    "init_failed": _error("init_failed"),
    "watchdog_timeout": _error("watchdog_timeout"),
    "subprocess_crashed": _child("subprocess_crashed", 1),
    "child_terminated": _child("child_terminated", 1),
    "not_enough_memory": _error("not_enough_memory"),
    "port_in_use": _error("port_in_use"),
    "memory_imbalance": lambda p, meta: ev.MemoryImbalance(fields=dict(p.fields), **_meta(meta)),
    "override_reduced": _override_reduced,
    "override_reset": _override_reset,
    "override_profiled": _override_profiled,
    "override_capped": _override_capped,
    "override_disabled": _override_disabled,
    "override_adjusted": _override_adjusted,
    "shutdown": _with_message(ev.Shutdown),
    "runtime_batch": lambda p, meta: ev.RuntimeBatch(
        stage="prefill" if (p.first("RUNTIME_BATCH") or "").startswith("Prefill") else "decode",
        fields=dict(p.fields),
        **_meta(meta),
    ),
    # gloo.lark
    "gloo_connected": _gloo_connected,
    "gloo_not_connected": _gloo_not_connected,
    "gloo_info": _gloo_connected,
    # nccl.lark
    "nccl_info": _nccl_line("INFO"),
    "nccl_warn": _nccl_line("WARN"),
    "nccl_trace": _nccl_line("TRACE"),
    "nccl_bare_version": _nccl_line("VERSION"),
    # torch.lark
    "glog_line": _torch_line,
    "c10_line": _torch_line,
    # tqdm.lark
    "progress_bar": _progress_bar,
    # http.lark
    "http_line": _http_line,
}
