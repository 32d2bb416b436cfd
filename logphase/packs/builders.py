"""Builders: from what a grammar matched (a :class:`Parsed`, read by name) to the typed event. The
message table (``recognising/messages.py``) says which builder each message has."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from logphase.packs.grammars import Parsed
from logphase.vocabulary import events as ev
from logphase.vocabulary.events import LineInfo
from logphase.vocabulary.values import clean, clock_seconds, gigabytes, int_list, integer, number

Builder = Callable[[Parsed, str, LineInfo], ev.EventBase]  # (match, the message's text, where) -> event


def simple(cls: type[ev.EventBase]) -> Builder:
    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        return at.event(cls, p.rule)

    return build


def with_message(cls: type[ev.EventBase]) -> Builder:
    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        return at.event(cls, p.rule, message=text)

    return build


def timed_note(seconds: str) -> Builder:
    """A note that prints how long a step took, in the sub-rule ``seconds`` (vLLM's 'Loading weights
    took 2.63 seconds'): the report's sub-steps (the row's ``step``)."""

    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        return at.event(ev.StartupNote, p.rule, message=text, elapsed_s=number(p.value(seconds)))

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


def weight_load_end(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
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


def kv_cache_dtype(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    words = [*p.tokens.get("FREE_TEXT", []), *p.tokens.get("SENTENCE", [])]
    return at.event(ev.KvCacheDtype, p.rule, dtype=clean(" ".join(words)))


def kv_cache_allocated(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
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


def capture_begin(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    f = p.fields
    return at.event(
        ev.CaptureBegin,
        p.rule,
        graph=p.value("graph_begin") or "",
        avail_mem_gb=gigabytes(f.get("avail mem")),
        batch_sizes=int_list(f.get("bs")),
    )


def capture_end(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
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


def capture_sizes(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    head = p.first("CAPTURE_SIZES") or ""
    return at.event(
        ev.CaptureSizes, p.rule, what="num tokens" if "num tokens" in head else "bs", sizes=int_list(p.value("sizes")) or []
    )


def nccl_version(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.NcclVersion, p.rule, version=(p.value("version") or "").strip())


def startup_timings(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.StartupTimings, p.rule, timings=dict(p.fields))


def memory_imbalance(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.MemoryImbalance, p.rule, fields=dict(p.fields))


def runtime_batch(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    stage = "prefill" if p.first("PREFILL_BATCH") else "decode"  # sglang.lark lexes a prefill's apart
    return at.event(ev.RuntimeBatch, p.rule, stage=stage, fields=dict(p.fields))


# the scheduler's settings the ready line states as key=value: SchedulerReady's own fields (the one
# list), but for the capacity (the rule's first value) and the memory (in GB, GPU or CPU)
_SCHEDULER_COUNTS = tuple(
    name
    for name in ev.SchedulerReady.model_fields
    if name not in ev.EventBase.model_fields and name not in ("max_total_num_tokens", "available_gpu_mem_gb")
)


def scheduler_ready(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    f = p.fields
    return at.event(
        ev.SchedulerReady,
        p.rule,
        max_total_num_tokens=integer(p.value("total_tokens")),
        available_gpu_mem_gb=gigabytes(f.get("available_gpu_mem") or f.get("available_cpu_mem")),
        **{name: integer(f.get(name)) for name in _SCHEDULER_COUNTS},
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


def override_disabled(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    feature = (p.value("feature") or "feature").strip().lower().replace(" ", "_")
    return at.event(ev.ParameterOverride, p.rule, setting=feature, requested="enabled", actual="disabled", message=text)


def override_adjusted(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    actual = number(p.first("REST"))
    return at.event(
        ev.ParameterOverride,
        p.rule,
        setting=(p.value("adjusted_setting") or "setting").strip().lower().replace(" ", "_"),
        requested=None,
        actual=None if actual is None else f"{actual:g}",
        message=text,
    )


def gloo(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(
        ev.GlooConnected,
        p.rule,
        gloo_rank=int(p.value("gloo_rank") or 0),
        connected=int(p.value("connected") or 0),
        expected=int(p.value("expected") or 0),
    )


def gloo_not_connected(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
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


def torch_other(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    stamp = (p.first("GLOG_STAMP") or p.first("C10_STAMP") or "I").lstrip("[")
    return at.event(
        ev.TorchLog,
        p.rule,
        level=stamp[0],
        source=p.first("SOURCE_LOCATION") or "",
        message=(p.first("TORCH_TEXT") or "").strip(),
    )


def progress_bar(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    params: dict[str, str] = {}
    clock = p.child("clock")
    bar_params = p.child("bar_params")
    for param in bar_params.children if bar_params else []:
        key, value = param.first("BAR_KEY"), param.first("BAR_VALUE")
        if key and value:
            params[key] = value
    return at.event(
        ev.ProgressBar,
        p.rule,
        desc=(p.first("WEIGHTS_BAR_DESC") or p.first("CAPTURE_BAR_DESC") or p.first("BAR_DESC") or "").strip(),
        percent=int((p.first("BAR_PERCENT") or "0").strip().rstrip("%")),
        done=int(p.value("done") or 0),
        total=int(p.value("total") or 0),
        batch_size=integer(params.get("bs")),
        num_tokens=integer(params.get("num_tokens")),
        avail_mem_gb=gigabytes(params.get("avail_mem")),
        elapsed_s=clock_seconds(clock.first("ELAPSED")) if clock else None,
        remaining_s=clock_seconds(clock.first("REMAINING")) if clock else None,
    )


def http_state(state: str) -> Builder:
    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        level = (p.first("UVICORN_LEVEL") or "INFO:").rstrip(":")
        return at.event(ev.HttpServer, p.rule, level=level, state=state, message=text.split(":", 1)[-1].strip())

    return build


def http_access(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(
        ev.HttpAccess,
        p.rule,
        client=p.value("client") or "",
        method=p.value("method") or "",
        path=p.value("path") or "",
        status=int(p.value("status") or 0),
    )


def bind_failed(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.ErrorLine, p.rule, error="bind_failed", message=text.split(":", 1)[-1].strip())


def python_warning(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.PythonWarning, p.rule, category=p.value("category") or "Warning", message=(p.first("REST") or "").strip())


def killed(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    return at.event(ev.ChildFailure, p.rule, what="killed", exit_code=137, message=text.strip())


def process_error(source: str, exit_code: int | None = None) -> Builder:
    """A line from outside SGLang that says a process failed; the exit code it names, else ``exit_code``."""

    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        code = integer(p.value("code"))
        return at.event(
            ev.ProcessError, p.rule, source=source, exit_code=code if code is not None else exit_code, message=text.strip()
        )

    return build


def values(
    cls: type[ev.EventBase], constants: dict[str, Any] | None = None, **mapping: tuple[str, Callable[[str | None], Any]]
) -> Builder:
    """An event whose values are the named sub-rules of the match: name=(sub-rule, converter);
    ``constants`` are fields every such event has (a graph's name, when the line gives none)."""
    fixed = dict(constants or {})

    def build(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
        return at.event(cls, p.rule, **fixed, **{name: conv(p.value(rule)) for name, (rule, conv) in mapping.items()})

    return build


def args_dump(p: Parsed, text: str, at: LineInfo) -> ev.EventBase:
    """A server's configuration dump after its head (``args: Namespace(...)``, ``non-default args:
    {...}``): its key=value pairs, read like a dump the server_args grammar cannot read whole."""
    dump = text.split(": ", 1)[-1].strip()
    # imported here: the dump's parser brings Lark (~30 ms of a start), which a log without a dump never needs
    from logphase.packs.server_args import parse_server_args

    args, _ = parse_server_args(dump)
    return at.event(ev.ServerArgs, p.rule, args=args, args_format="dict" if dump.startswith("{") else "call")
