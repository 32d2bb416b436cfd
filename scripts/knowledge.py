#!/usr/bin/env python3
"""How much of SGLang's start-up does logphase know: the catalogue against logphase's public API.

For every release of the catalogue (``grammars/sglang/catalogue``, mined by ``mine_sglang.py``):

* each *start-up message* (a message printed at the default log level -- ``info`` and above,
  ``print``, ``tqdm`` -- by a function the start-up call graph places in a phase before
  ``ready``) is rendered with plausible values (:func:`render`), put behind SGLang's line prefix
  and read by ``logphase.parse_text``. It is *covered* when it gives an event that places the
  line in the catalogued phase (an error line: a failure), or when ``grammars/sglang/noise.json`` lists it as noise with a
  reason; *recognised* when it gives an event at all;
* each ``raise`` on the start-up path is rendered as the traceback it ends with and is *mapped*
  when the report names a cause more specific than ``python_exception``;
* the start-up functions are those the call graph places in a start-up phase; they are *in the
  frame table* when ``grammars/sglang/functions.json`` has them.

    python scripts/knowledge.py            # prints the table
    python scripts/knowledge.py --update   # rewrites grammars/sglang/notes.json (sglang_notes.py) and
                                           # grammars/vllm/notes.json (vllm_notes.py), then
                                           # docs/knowledge.md and the ratchet figures
    python scripts/knowledge.py --gaps FILE  # the uncovered start-up messages, grouped, per era

The same for vLLM's catalogue (``grammars/vllm/catalogue``, ``mine_vllm.py``; its own section
below, ``vllm_measure``): the doc's second table, its ratchet ``grammars/vllm/catalogue/coverage.json``
(tests/test_knowledge_coverage_vllm.py).

The ratchet (``grammars/sglang/catalogue/coverage.json``) holds the figures of the last
``--update``; tests/test_knowledge_coverage.py fails when a release falls below them or the doc
is not what this script writes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "grammars" / "sglang" / "catalogue"
NOISE = ROOT / "grammars" / "sglang" / "noise.json"
FUNCTIONS = ROOT / "grammars" / "sglang" / "functions.json"
RATCHET = CATALOGUE / "coverage.json"
DOC = ROOT / "docs" / "knowledge.md"

START_UP_PHASES = ("launch", "distributed_init", "weight_loading", "memory_pool", "cuda_graph_capture", "warmup")
PRINTED = ("info", "warning", "error", "exception", "critical", "print", "tqdm")
STAMP = "2026-01-01 10:00:00"
# the areas (mine_sglang.START_UP_FILES) whose lines the main process prints, without a rank tag
SERVER_AREAS = {"launch", "server_args", "logging", "http", "entrypoints", "tokenizer", "warmup", "detokenizer"}
GENERIC_CAUSES = {"python_exception", "unknown"}
FAILING = ("error", "exception", "critical")


# -- rendering -------------------------------------------------------------------------------------

_LIST = re.compile(r"(?:^|_)(bs|bss|sizes|list|ids|ranks|devices|layers|shapes|paths|names|modules)(?:$|_)|batch_sizes|capture_bs")
_FLOAT = re.compile(r"mem|gb\b|_gb|memory|usage|fraction|ratio|elapsed|latency|time|duration|seconds|_s\b|percent|util")
_INT = re.compile(r"num|tokens|rank|port|count|len\(|size|max_|min_|_id\b|idx|tp|dp|pp|ep\b|world|step|code|pid|bs\b|gpu_id|layer|chunk|page|limit|capacity")
_PATH = re.compile(r"path|model|dir|file|checkpoint|url|host")


def value_for(expr: str, spec: str = "", after: str = "") -> str:
    """A plausible value for a placeholder, from its format spec, its name and the text after it."""
    # `procs[i].exitcode` reads as `procs.exitcode`, `graph_backend[device]` as `graph_backend`
    e = re.sub(r"\[[^\[\]]*\]", "", expr).lower().strip()
    if "traceback" in e:  # the traceback follows on the next lines
        return "Traceback (most recent call last):"
    if re.fullmatch(r"[ijkn]|idx|i \+ 1", e):
        return "42"
    if spec.rstrip().endswith(("f", "e", "%", "g")):
        return "12.34"
    if spec.rstrip().endswith(("d", "x")):
        return "42"
    if after.lstrip().startswith(("GB", "MB", "s ", "s,", "s.", "s)", "sec")) or (after.startswith("s") and not after[1:2].isalpha()):
        return "12.34"
    if _LIST.search(e):
        return "[1, 2, 4, 8]"
    if "dtype" in e:
        return "torch.bfloat16"
    if "graph" in e and "backend" in e:  # graph_backend[device]: "cuda graph", "npu graph"
        return "cuda graph"
    if "backend" in e:
        return "flashinfer"
    if _FLOAT.search(e):
        return "12.34"
    if _INT.search(e):
        return "42"
    if _PATH.search(e):
        return "/models/Qwen2-7B-Instruct"
    if re.search(r"\b(e|err|error|exc|ex)\b", e):
        return "CUDA error: out of memory"
    return "value"


_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")


def _render_braces(template: str) -> str:
    """f-string and str.format templates: {expr!r:spec} by a value, doubled braces by one."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        inner = m.group(1) or ""
        expr, _, spec = inner.partition(":") if not inner.startswith("[") else (inner, "", "")
        expr = expr.split("!")[0]
        after = template[m.end() : m.end() + 6]
        return value_for(expr, spec, after)

    return _FIELD.sub(sub, template)


_PERCENT = re.compile(r"%%|%(?:\((\w+)\))?[-+ #0]*\d*(?:\.\d+)?([sdifrgexXc])")


def _render_percent(template: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "%%":
            return "%"
        conv = m.group(2)
        if conv in "dix":
            return "42"
        if conv in "fge":
            return "12.34"
        return value_for(m.group(1) or "", "", template[m.end() : m.end() + 6])

    return _PERCENT.sub(sub, template)


def render(message: dict) -> str | None:
    """The message as SGLang prints it with made-up values: its first non-empty line; None when the
    whole message is a runtime value (format `expr`), which the source does not say."""
    fmt, template = message["format"], message["template"]
    if fmt == "expr":
        return None
    if fmt in ("fstring", "format"):
        text = _render_braces(template)
    elif fmt == "percent":
        text = _render_percent(template)
    else:
        text = template
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else None


def log_line(path: str, area: str, message: dict, text: str) -> str:
    """The line in a log: SGLang's prefix (no rank tag for the main process), a bare print, a bar."""
    if message["level"] == "print":
        return text
    if message["level"] == "tqdm":
        return f"{text}: 100%|##########| 4/4 [00:05<00:00,  1.25s/it]"
    tag = "" if area in SERVER_AREAS else " TP0"
    return f"[{STAMP}{tag}] {text}"


def traceback_of(path: str, message: dict, text: str | None) -> str:
    """The traceback a `raise` ends with, as the process prints it."""
    exc = message["exception"].split(".")[-1]
    function = message["function"].split(".")[-1]
    last = f"{exc}: {text}" if text else exc
    return (
        "Traceback (most recent call last):\n"
        f'  File "/usr/local/lib/python3.11/site-packages/{path}", line {message["line"]}, in {function}\n'
        f"    raise {exc}(...)\n"
        f"{last}\n"
    )


# -- noise -----------------------------------------------------------------------------------------


@cache
def noise() -> dict:
    return json.loads(NOISE.read_text())


def noise_reason(message: dict) -> str | None:
    """Why the message is deliberately not recognised, or None."""
    data = noise()
    for rule in data["rules"]:
        if all(message.get(k) == v for k, v in rule["match"].items()):
            return str(rule["reason"])
    for entry in data["messages"]:
        if message["template"].startswith(entry["template"]):
            return str(entry["reason"])
    return skipped_notes().get(message["template"])


@cache
def skipped_notes() -> dict[str, str]:
    """noise.json `unplaced` (written by sglang_notes.py): whole templates whose text cannot place
    the line in its phase."""
    return {e["template"]: str(e["reason"]) for e in noise().get("unplaced", [])}


def boundary_phase(message: dict) -> str | None:
    """The phase a boundary line begins (noise.json `boundaries`: the warmup's last line begins
    ready), or None."""
    for entry in noise().get("boundaries", []):
        if message["template"].startswith(entry["template"]):
            return str(entry["phase"])
    return None


# -- log formats (issue 20 point 5) -----------------------------------------------------------------

# a python-logging record with plausible values: the time per the format's datefmt (logging's own
# default "%Y-%m-%d %H:%M:%S,123" without one), the rank prefix, the fields the formats use
_RECORD = {
    "levelname": "INFO", "filename": "model_runner.py", "lineno": "123", "name": "sglang.srt.model_executor.model_runner",
    "process": "4242", "processName": "MainProcess", "msecs": "123", "client_addr": "127.0.0.1:40312",
    "request_line": "GET /health HTTP/1.1", "status_code": "200", "levelprefix": "INFO:    ",
}
# what the line says behind the format, and the rule that must read it: SGLang's own message, and
# uvicorn's when the format is uvicorn's (its level prefix)
_PROBE = ("Load weight begin. avail mem=12.34 GB", "weight_load_begin")
_UVICORN_PROBE = ("Application startup complete.", "http_startup_complete")
_ACCESS_PROBE = ("", "http_access")
_STRFTIME = {"%Y": "2026", "%y": "26", "%m": "01", "%d": "02", "%H": "10", "%M": "00", "%S": "05"}


def _asctime(datefmt: str | None) -> str:
    if datefmt is None:
        return "2026-01-02 10:00:05,123"
    return re.sub(r"%[YymdHMS]", lambda m: _STRFTIME[m.group(0)], datefmt)


def _prefixes(release: dict) -> list[tuple[str, str]]:
    """(variant, rank prefix) a format's {prefix} is: the main process's (none), a TP rank's, and
    each order of rank tags the release builds (every tag it knows, in its order)."""
    out = [("main process", ""), ("TP0", " TP0")]
    for order in release.get("rank_tags", []):
        if len(order) > 1:
            out.append((" ".join(order), "".join(f" {tag}{i % 2}" for i, tag in enumerate(order))))
    return out


def format_lines(release: dict, entry: dict) -> list[tuple[str, str, str, str]]:
    """The lines a mined format prints, with its variants: (variant, line, rule that must read it,
    the rank the envelope must read)."""
    fmt = entry["format"]
    if "%(request_line)s" in fmt:
        message, rule = _ACCESS_PROBE
    elif "%(levelprefix)s" in fmt:
        message, rule = _UVICORN_PROBE
    else:
        message, rule = _PROBE
    record = {**_RECORD, "asctime": _asctime(entry.get("datefmt")), "message": message}
    out = []
    millis = [("", "")] + ([("SGLANG_LOG_MS", ".123")] if "{maybe_ms}" in fmt else [])
    prefixes = _prefixes(release) if "{prefix}" in fmt else [("", "")]
    for ms_name, ms in millis:
        for name, prefix in prefixes:
            text = fmt.replace("{maybe_ms}", ms).replace("{prefix}", prefix)
            text = re.sub(r"\{[^{}]*\}", "0", text)  # other values of the f-string (a daemon's gpu id)
            line = re.sub(r"%\((\w+)\)[-\d.]*[sd]", lambda m: record.get(m.group(1), "x"), text)
            out.append((", ".join(v for v in (ms_name, name) if v) or "as is", line, rule, prefix.strip()))
    return out


def read_format_line(line: str) -> tuple[str | None, str | None, str, str | None]:
    """(the rule of the event logphase reads in the line, its time, the message the envelope
    leaves, the rank it reads) through the envelope."""
    from logphase.reading.clock import LogClock
    from logphase.reading.envelope import split_envelope
    from logphase.recognising.classify import classify
    from logphase.vocabulary.events import LineInfo

    env = split_envelope(line)
    ts = LogClock().of(env)
    info = LineInfo(line=1, offset=0, raw=line, ts=ts, ts_inherited=False, rank=env.rank, writer=env.writer)
    event = classify(env, info)
    return (event.rule or event.kind) if event is not None else None, ts, env.message, env.rank


def _peeled(fmt: str, message: str) -> bool:
    """The envelope left the message alone: everything of the format before it is peeled (for
    uvicorn's formats, all but its level, which its grammar reads)."""
    if "%(levelprefix)s" in fmt:
        return message.startswith("INFO:")
    return message.startswith(_PROBE[0])


def measure_formats(release: dict) -> tuple[int, int, list[dict]]:
    """(variants, variants read, the misses) of a release's mined log formats: read when the
    envelope peels the format (its time read, when it has one) and the message behind it is read."""
    total, read, misses = 0, 0, []
    for entry in release.get("formats", []):
        for variant, line, rule, rank_tags in format_lines(release, entry):
            total += 1
            got, ts, message, rank = read_format_line(line)
            ok = (
                got == rule
                and (ts is not None or "%(asctime)s" not in entry["format"])
                and _peeled(entry["format"], message)
                and (rank or "") == rank_tags
            )
            read += ok
            if not ok:
                misses.append({"file": entry["file"], "format": entry["format"], "variant": variant, "line": line, "got": got})
    return total, read, misses


# -- measuring -------------------------------------------------------------------------------------


@dataclass
class Verdict:
    kind: str  # covered (in its phase) | noise | other_phase | no_phase | unrecognised
    phases: tuple[str, ...] = ()


@cache
def read_line(line: str) -> tuple[bool, tuple[str, ...], str | None]:
    """(recognised, phases the report shows, failure cause) of a one-line log, by the public API."""
    import logphase

    report = logphase.parse_text(line + "\n")
    phases = tuple(str(p.name) for p in report.phases)
    cause = str(report.failure.cause) if report.failure is not None else None
    if report.failure is not None and report.failure.phase is not None:
        phases += (str(report.failure.phase),)
    return report.lines.unrecognized == 0 and report.lines.events > 0, phases, cause


@cache
def read_traceback(text: str) -> str | None:
    import logphase

    report = logphase.parse_text(text)
    if report.failure is None:
        return None
    # an exception the server's own check raised is named by that check (the cause stays python_exception)
    return f"check:{report.failure.check}" if report.failure.check else str(report.failure.cause)


def judge(path: str, area: str, message: dict) -> Verdict:
    if noise_reason(message) is not None:
        return Verdict("noise")
    text = render(message)
    expected = boundary_phase(message) or message["phase"]
    return line_verdict(
        None if text is None else log_line(path, area, message, text),
        # (a shared helper's line is evidence of whichever phase calls it)
        lambda phases: expected in phases or bool(message.get("shared") and phases),
        message["level"],
    )


def line_verdict(line: str | None, placed: Callable[[tuple[str, ...]], bool], level: str) -> Verdict:
    """The verdict on a message's log line (None: it renders to none), either server's: covered when
    logphase places it (``placed`` on the phases it shows) or reads an error line as a failure (its
    phase is where the rank was, which one line cannot show); else unrecognised, other_phase, no_phase."""
    if line is None:
        return Verdict("unrecognised")
    recognised, phases, cause = read_line(line)
    if not recognised:
        return Verdict("unrecognised")
    if placed(phases) or (level in FAILING and cause is not None):
        return Verdict("covered", phases)
    return Verdict("other_phase" if phases else "no_phase", phases)


@dataclass
class Release:
    version: str
    messages: Counter[str] = field(default_factory=Counter)
    raises: Counter[str] = field(default_factory=Counter)
    raise_causes: Counter[str] = field(default_factory=Counter)
    functions: int = 0
    functions_in_table: int = 0
    functions_placed: int = 0  # placed in their phase by logphase's frame reading today
    misses: list[dict] = field(default_factory=list)
    raise_misses: list[dict] = field(default_factory=list)
    formats: int = 0  # the variants of the mined log formats (point 5)
    formats_read: int = 0
    format_misses: list[dict] = field(default_factory=list)
    overrides: int = 0  # the settings the source changes and says so at start-up (issue 30 point 4)
    overrides_read: int = 0  # of which the report names, as an ignored_parameter warning
    override_misses: list[dict] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.messages.values())

    @property
    def covered(self) -> int:
        return self.messages["covered"] + self.messages["noise"]

    @property
    def recognised(self) -> int:
        return self.total - self.messages["unrecognised"]

    def figures(self) -> dict[str, int]:
        return {
            "messages": self.total,
            "covered": self.covered,
            "recognised": self.recognised,
            "noise": self.messages["noise"],
            "raises": sum(self.raises.values()),
            "raises_mapped": self.raises["mapped"],
            "raises_by_place": self.raise_causes["check:configuration"] + self.raise_causes["check:environment"],
            "formats": self.formats,
            "formats_read": self.formats_read,
            "overrides": self.overrides,
            "overrides_read": self.overrides_read,
            "functions": self.functions,
            "functions_in_table": self.functions_in_table,
            "functions_placed": self.functions_placed,
        }


def _indexed_versions(folder: Path) -> list[str]:
    """The releases a catalogue folder's index.json lists (SGLang's or vLLM's)."""
    index = json.loads((folder / "index.json").read_text())
    return [e["version"] for e in index["releases"]]


def versions() -> list[str]:
    return _indexed_versions(CATALOGUE)


@cache
def catalogue(version: str) -> dict:
    return json.loads((CATALOGUE / f"{version}.json").read_text())


@cache
def frame_table() -> dict[str, dict]:
    """functions.json flattened: '<wheel path>:<qualified name>' -> row."""
    nested = json.loads(FUNCTIONS.read_text())["functions"]
    return {f"{path}:{qual}": row for path, quals in nested.items() for qual, row in quals.items()}


def placed(path: str, qual: str, phase: str) -> bool:
    """Does logphase's frame reading put a traceback frame of this function in this phase?
    (As a frame prints it: the function's own name and its file; a constructor as the class.)"""
    from logphase.diagnosing.functions import frame_floor, frame_phase

    name = qual.split(".")[-1] if not qual.endswith(".__init__") else ".".join(qual.split(".")[-2:])
    found = frame_phase(name, path) or frame_floor(name, path)
    return found is not None and str(found) == phase


def measure(version: str) -> Release:
    rel = Release(version)
    rel.formats, rel.formats_read, rel.format_misses = measure_formats(catalogue(version).get("logging", {}))
    areas = {path: f["area"] for path, f in catalogue(version)["files"].items()}
    measure_overrides(
        rel,
        [o for o in catalogue(version).get("overrides", []) if printed_override(o, None)],
        lambda o, text: log_line(o["file"], areas[o["file"]], o, text),
        render,
    )
    table = frame_table()
    for path, f in catalogue(version)["files"].items():
        for qual, e in f.get("phases", {}).items():
            if e["phase"] in START_UP_PHASES:
                rel.functions += 1
                rel.functions_in_table += f"{path}:{qual}" in table
                rel.functions_placed += placed(path, qual, e["phase"])
        for m in f["messages"]:
            if m.get("phase") not in START_UP_PHASES:
                continue
            if m["level"] == "raise":
                text = render(m) if m["format"] != "none" else None
                cause = read_traceback(traceback_of(path, m, text))
                mapped = cause is not None and cause not in GENERIC_CAUSES
                rel.raises["mapped" if mapped else "unmapped"] += 1
                rel.raise_causes[str(cause)] += 1
                if not mapped:
                    rel.raise_misses.append({**m, "file": path, "cause": cause})
                continue
            if m["level"] not in PRINTED:
                continue
            verdict = judge(path, f["area"], m)
            rel.messages[verdict.kind] += 1
            if verdict.kind not in ("covered", "noise"):
                rel.misses.append({**m, "file": path, "verdict": verdict.kind, "seen_phases": list(verdict.phases)})
    return rel


# -- overrides (issue 30 point 4) -------------------------------------------------------------------

# the levels a server prints by default that a log call has (no print, no bar)
LOGGED = ("info", "warning", "error", "exception", "critical")


def printed_override(o: dict, areas: dict[str, str] | None) -> bool:
    """An override of the catalogue (mine_overrides.py) that the server prints while it starts, at
    its default log level, and that changes what was asked for (not a default filled in). SGLang's
    phase is the call graph's (``areas`` None); vLLM's, its file's area (not one printed while serving)."""
    if o.get("default") or o["level"] not in LOGGED:
        return False
    if areas is None:
        return o.get("phase") in START_UP_PHASES
    return areas.get(o["file"]) not in VLLM_NOT_START_UP


@cache
def read_override(line: str) -> bool:
    """Does the report on a one-line log name a setting the server changed (an ignored_parameter)?"""
    import logphase

    return any(w.kind == "ignored_parameter" for w in logphase.parse_text(line + "\n").warnings)


def measure_overrides(
    rel: Release, overrides: list[dict], line_of: Callable[[dict, str], str], render_of: Callable[[dict], str | None]
) -> None:
    """Each override rendered as its line (``line_of``) and read: read when the report warns of it."""
    for o in overrides:
        text = render_of(o)
        rel.overrides += 1
        if text is not None and read_override(line_of(o, text)):
            rel.overrides_read += 1
        else:
            rel.override_misses.append(o)


# -- the doc ---------------------------------------------------------------------------------------


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f} %" if d else "-"


def table(releases: list[Release]) -> str:
    rows = [
        "| release | start-up messages covered | recognised at all | noise | raises mapped to a cause "
        "| of which by place | log formats read | overrides read / in the source "
        "| start-up functions in functions.json | placed by logphase's frames today |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in releases:
        f = r.figures()
        rows.append(
            f"| {r.version} | {f['covered']}/{f['messages']} ({_pct(f['covered'], f['messages'])}) "
            f"| {f['recognised']}/{f['messages']} ({_pct(f['recognised'], f['messages'])}) | {f['noise']} "
            f"| {f['raises_mapped']}/{f['raises']} ({_pct(f['raises_mapped'], f['raises'])}) "
            f"| {f['raises_by_place']} "
            f"| {f['formats_read']}/{f['formats']} ({_pct(f['formats_read'], f['formats'])}) "
            f"| {f['overrides_read']}/{f['overrides']} ({_pct(f['overrides_read'], f['overrides'])}) "
            f"| {f['functions_in_table']}/{f['functions']} ({_pct(f['functions_in_table'], f['functions'])}) "
            f"| {f['functions_placed']}/{f['functions']} ({_pct(f['functions_placed'], f['functions'])}) |"
        )
    return "\n".join(rows)


DOC_HEAD = """# What logphase knows of SGLang, per release

Generated by `python scripts/knowledge.py --update` from the catalogue mined out of the release
wheels (`grammars/sglang/catalogue/`, `python scripts/mine_sglang.py`), the start-up frame table
(`grammars/sglang/functions.json`, written by the same miner) and the noise list
(`grammars/sglang/noise.json`). Do not edit by hand: `tests/test_knowledge_coverage.py` checks
that this page is what the script writes, and that no release falls below the figures recorded
in `grammars/sglang/catalogue/coverage.json` (the ratchet, rewritten by the same command).

- **start-up messages**: the log calls, `print`s and `tqdm` bars a release prints at the default
  log level (`info` and above) in a function that its start-up call graph places in a phase
  before `ready` (launch, distributed init, weight loading, memory pool, CUDA graph capture,
  warmup). `debug` lines are not counted (not printed by default).
- **covered**: the message, rendered with plausible values behind SGLang's prefix
  (`[2026-01-01 10:00:00 TP0] ...`) and read by `logphase.parse_text` (the public API only),
  gives an event that places the line in the phase it is printed in; an `error` line counts when
  it is read as a failure (its phase is where the rank was, which one line cannot show). Or
  `noise.json` lists it, with the reason it says nothing about the phase. `noise.json`
  `boundaries` name lines that begin the next phase (the warmup's last line begins ready); a
  shared helper's line (`get_available_gpu_memory`'s) counts in any phase. The phase a line is
  printed in is its function's, or a later one when an earlier line of the function called into
  a later phase (`max_total_num_tokens=` comes after the model worker captured the graphs).
  **recognised at all**: it gives an event, in any phase or none.
- **the notes** (`grammars/sglang/notes.json`, written by `scripts/sglang_notes.py`, which
  `--update` runs first): every start-up message no grammar rule reads, as the literal pieces of
  its first line, with the earliest phase it is printed in. logphase reads a line no grammar
  reads against them until the run is ready (`logphase/recognising/notes.py`): a match is weak
  evidence of the note's phase (it enters the phase only from before it). Messages whose text
  cannot place a line are listed in `noise.json` `unplaced`, with the reason (too little literal
  text, a function the call graph ties between phases, printed while serving too, a progress
  bar; printed in several start-up phases: kept as notes of the earliest, counted as noise).
- **raises mapped to a cause**: the `raise` statements of start-up functions, rendered as the
  traceback they end with, for which the report names more than a bare `python_exception`: a
  signature's cause, or, for a raise no signature reads, what the place it was raised says
  (`logphase/diagnosing/diagnosis.py`): the failure's `check` (`configuration`: SGLang's own check
  refused a value, a type or a feature, or anything at launch; `environment`: its own check of the
  environment, later in start-up; the cause stays `python_exception`, the labelling vocabulary's
  word), or `model_load_error` (a loader's). **of which by place**: those named by their check.
- **log formats read**: the Python-logging formats the release's own code configures (mined by
  `scripts/sglang_formats.py` into the catalogue's `logging`: `configure_logger`'s prefix with its
  date format, `SGLANG_LOG_MS` and each order of rank tags the schedulers build, uvicorn's, the PD
  mini load balancer's, the n-gram cache's, the weight cache daemon's ...), each rendered in each
  of its variants, that logphase's envelope (`grammars/shared/envelope.lark`) peels (the time and
  the rank read, nothing of the format left) and whose message it then reads.
- **overrides read / in the source**: the settings the release changes on its own and says so
  (issue 30: `scripts/mine_overrides.py` finds every log call in the same block as an assignment
  to a `ServerArgs` field, `self.<field>` in ServerArgs, `server_args.<field>` anywhere, a 0.5.20+
  hook's `declare_resolution(..., <field>=...)`; the catalogue's `overrides`), printed at the default
  log level in a start-up phase; a setting filled in because it was unset (under `if <field> is
  None`) is a default, not counted. **read**: the message, rendered as above, gives an
  `ignored_parameter` warning (`grammars/sglang/overrides.json`, written from the catalogue by
  `scripts/override_rows.py`, or one of `sglang.lark`'s override rules).
- **start-up functions in functions.json**: functions the call graph places in a start-up
  phase that `functions.json` (the frame table as data) lists; it lists every function the
  call graph reaches, so this is 100 % by construction: the figure guards the regeneration. **placed by logphase's frames
  today**: those whose traceback frame (function name and file, as a frame prints them)
  logphase's frame reading puts in that phase now (`logphase/diagnosing/functions.py`, written by
  hand from three releases, until `functions.json` is wired in).

Target (issue 20): at least 95 % of the start-up messages of every minor release from 0.3 on,
and every raise that stops start-up mapped to a cause.

"""

DOC_TAIL = """
## Regenerate

    python scripts/mine_sglang.py          # wheels -> catalogue/<version>.json, index.json, functions.json
    python scripts/knowledge.py --update   # catalogue -> notes.json, noise.json `unplaced`;
                                           # catalogue + logphase -> this page and coverage.json

The first needs the package index (`pip download sglang==X --no-deps`, cached in the
git-ignored `scripts/.cache/`); the second reads only checked-in data and the installed
`logphase`.
"""


def standing(releases: list[Release]) -> str:
    """Where the releases from 0.3 on stand against the issue's targets."""
    since = [r for r in releases if not r.version.startswith(("0.1.", "0.2."))]
    below = [r for r in since if r.covered < 0.95 * r.total]
    lowest = min(since, key=lambda r: r.covered / r.total if r.total else 1.0)
    unmapped = [r for r in since if r.raises["unmapped"]]
    lines = [
        f"Releases from 0.3 on below 95 % of start-up messages covered: {len(below)} of {len(since)}"
        f" (lowest: {lowest.version}, {_pct(lowest.covered, lowest.total)}).",
        f"Releases from 0.3 on with start-up raises not mapped to a cause: {len(unmapped)} of {len(since)}.",
    ]
    return "\n".join(lines) + "\n"


def doc(releases: list[Release], vllm_releases: list[Release] | None = None) -> str:
    vllm = vllm_releases if vllm_releases is not None else [vllm_measure(v) for v in vllm_versions()]
    head = DOC_HEAD + "## Coverage\n\n" + table(releases) + "\n\n" + standing(releases) + DOC_TAIL + vllm_doc(vllm)
    return head + pack_sections()


def pack_sections() -> str:
    """The sections packs bring themselves (``grammars/<pack>/knowledge.md``: a server whose coverage
    this script does not measure yet), after the measured ones, in the registry's folder order."""
    return "".join("\n" + path.read_text() for path in sorted((ROOT / "grammars").glob("*/knowledge.md")))


def ratchet(releases: list[Release]) -> dict:
    return {"schema": 1, "generator": "scripts/knowledge.py", "releases": {r.version: r.figures() for r in releases}}


# -- the gaps, grouped for the grammar --------------------------------------------------------------

def group_of(message: dict) -> str:
    """The kind of rule that would cover a message: an error rule (a failure), evidence added to
    a message logphase already reads, a bar, or a note of the phase it is printed in."""
    phase = message["phase"]
    if message["verdict"] in ("no_phase", "other_phase"):
        return f"read already, without the evidence of {phase}: give its row that phase"
    if message["level"] in FAILING:
        return "error lines: an error rule (a failure; its phase comes from the rank's)"
    if message["level"] == "tqdm":
        return f"progress bars of {phase}: a bar description"
    return f"notes of {phase}: a note rule with {phase} evidence"


def group_order() -> list[str]:
    out = [f"read already, without the evidence of {p}: give its row that phase" for p in START_UP_PHASES]
    out += [f"notes of {p}: a note rule with {p} evidence" for p in START_UP_PHASES]
    out += [f"progress bars of {p}: a bar description" for p in START_UP_PHASES]
    return [*out, "error lines: an error rule (a failure; its phase comes from the rank's)"]


def gaps(eras: list[tuple[str, list[Release]]]) -> str:
    """The uncovered start-up messages of each era (a few releases), one row per message with
    the releases of the era that print it, grouped by the kind of rule that would cover them."""
    out = [
        "# Start-up messages logphase does not place in their phase (issue 20, second wave)",
        "",
        "Generated by `python scripts/knowledge.py --gaps FILE` from the catalogue: for each era, the",
        "catalogued start-up messages (info and above, print, tqdm, in a function of a start-up phase)",
        "that logphase does not cover, one row per message (`releases`: those of the era that print",
        "it), grouped by the kind of rule that would cover them. `phase`: the phase the line",
        "is printed in (its function's, from the call graph). `verdict`: `unrecognised` (no event),",
        "`no_phase` (an event without phase evidence), `other_phase` (evidence of another phase: `seen`).",
        "Then the start-up raises the report names no specific cause for, by exception class.",
        "",
    ]
    for title, releases in eras:
        merged: dict[tuple[str, str, str, str], dict] = {}
        for r in releases:
            for m in r.misses:
                row = merged.setdefault((m["template"], m["function"], m["file"], m["level"]), {**m, "releases": []})
                row["releases"].append(r.version)
        totals = ", ".join(f"{r.version} {len(r.misses)}/{r.total}" for r in releases)
        out += [f"## {title}: not covered ({totals}); {len(merged)} distinct messages", ""]
        by_group: dict[str, list[dict]] = {}
        for m in merged.values():
            by_group.setdefault(group_of(m), []).append(m)
        for name in group_order():
            items = by_group.get(name, [])
            if items:
                out += _gap_table(name, items, len(releases))
        for r in releases:
            out += _raise_gaps(r)
    return "\n".join(out) + "\n"


def _gap_table(name: str, items: list[dict], n_releases: int) -> list[str]:
    out = [f"### {name}: {len(items)}", "", "| template | level | function | file | phase | verdict | releases |", "|---|---|---|---|---|---|---|"]
    for m in sorted(items, key=lambda m: (START_UP_PHASES.index(m["phase"]), m["file"], m["line"])):
        t = m["template"].replace("|", "\\|").replace("\n", "\\n")
        if len(t) > 160:
            t = t[:157] + "..."
        seen = f" (seen: {', '.join(m['seen_phases'])})" if m["seen_phases"] else ""
        releases = "all" if len(m["releases"]) == n_releases else ", ".join(m["releases"])
        out.append(
            f"| `{t}` | {m['level']} | {m['function']} | {m['file'].removeprefix('sglang/srt/')} "
            f"| {m['phase']} | {m['verdict']}{seen} | {releases} |"
        )
    out.append("")
    return out


def _raise_gaps(r: Release) -> list[str]:
    """The start-up raises the report names no specific cause for, by exception class."""
    by_exc: dict[str, list[dict]] = {}
    for m in r.raise_misses:
        by_exc.setdefault(m["exception"].split(".")[-1], []).append(m)
    total = sum(r.raises.values())
    out = [f"### {r.version}: raises on the start-up path without a specific cause: {len(r.raise_misses)} of {total}", ""]
    out.append("| exception | count | phases | examples (template, function) |")
    out.append("|---|---|---|---|")
    for exc, items in sorted(by_exc.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        phases = ", ".join(f"{p} {n}" for p, n in Counter(m["phase"] for m in items).most_common())
        examples = "; ".join(
            f"`{m['template'][:70].replace('|', '/').replace(chr(10), ' ')}` ({m['function']})" for m in items[:3]
        )
        out.append(f"| {exc} | {len(items)} | {phases} | {examples} |")
    out.append("")
    return out


# -- vLLM (issue 21) ---------------------------------------------------------------------------------
#
# vLLM's catalogue (grammars/vllm/catalogue, mine_vllm.py) has no start-up call graph: a message's
# phase is its file's area (mine_vllm.START_UP_FILES) where the area is one phase, any start-up
# phase where the area spans several (the engine, its workers and executors, platforms, helpers).

VLLM_CATALOGUE = ROOT / "grammars" / "vllm" / "catalogue"
VLLM_NOISE = ROOT / "grammars" / "vllm" / "noise.json"
VLLM_RATCHET = VLLM_CATALOGUE / "coverage.json"
# areas printed while serving or by the logging set-up itself: not start-up messages
VLLM_NOT_START_UP = {"runtime", "logging"}
# the area -> the phase its lines are printed in, for areas of one phase
VLLM_AREA_PHASE = {
    "launch": "launch",
    "server_args": "launch",
    "config": "launch",
    "distributed": "distributed_init",
    "weight_loading": "weight_loading",
    "memory_pool": "memory_pool",
    "compilation": "cuda_graph_capture",
    "http": "warmup",
}
VLLM_LEVELS = {"info": "INFO", "warning": "WARNING", "error": "ERROR", "exception": "ERROR", "critical": "CRITICAL"}


@cache
def vllm_noise() -> dict:
    return json.loads(VLLM_NOISE.read_text())


def vllm_noise_reason(message: dict, area: str) -> str | None:
    """Why a vLLM message is deliberately not recognised (grammars/vllm/noise.json), or None:
    `rules` match the message's fields (and `area`) exactly, `messages` a template's beginning."""
    data = vllm_noise()
    fields = {**message, "area": area}
    for rule in data["rules"]:
        if all(fields.get(k) == v for k, v in rule["match"].items()):
            return str(rule["reason"])
    for entry in data["messages"]:
        if message["template"].startswith(entry["template"]):
            return str(entry["reason"])
    return None


def vllm_versions() -> list[str]:
    return _indexed_versions(VLLM_CATALOGUE)


@cache
def vllm_catalogue(version: str) -> dict:
    return json.loads((VLLM_CATALOGUE / f"{version}.json").read_text())


def vllm_prefix_style(version: str) -> str:
    """`file.py:N]` up to 0.7, `[file.py:N]` from 0.8 (vllm/logger.py's _FORMAT)."""
    major, minor = (int(x) for x in version.split(".")[:2])
    return "bare" if (major, minor) < (0, 8) else "bracketed"


# what a positional %s stands for, by the words around it (vLLM's templates name no placeholder)
_VLLM_VERSION_BEFORE = ("version ", "(v", "==")
# what vLLM's compile messages start with (their leading %s): the compiled module's tag, or nothing
_VLLM_TAG = "[backbone] "
_VLLM_NUMBER_AFTER = (" tokens", " seconds", " secs", " GiB", " GB", " MiB", " blocks", " s ", " s.", " s,", "x")


def _vllm_percent(template: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "%%":
            return "%"
        conv, before, after = m.group(2), template[max(0, m.start() - 12) : m.start()], template[m.end() : m.end() + 8]
        if m.start() == 0 and conv == "s" and after[:1].isalpha():
            return _VLLM_TAG  # "%sDynamo bytecode transform time: ...": the compiled module's tag
        if conv in "dix":
            return "42"
        if conv in "fge":
            return "12" if ".0f" in m.group(0) else "12.34"  # "%.0f secs": printed as a whole number
        if before.endswith(_VLLM_VERSION_BEFORE):
            return "0.11.0"
        if after.startswith(_VLLM_NUMBER_AFTER):
            return "42"
        return value_for(m.group(1) or "", "", after)

    return _PERCENT.sub(sub, template)


def vllm_render(message: dict) -> str | None:
    """``render`` with vLLM's positional ``%s`` read by the words around it (a version after
    'version ', a count before ' tokens') and ``%.0f`` as the whole number it prints."""
    if message["format"] != "percent":
        return render(message)
    lines = [ln for ln in _vllm_percent(message["template"]).splitlines() if ln.strip()]
    return lines[0] if lines else None


def vllm_log_line(version: str, path: str, message: dict, text: str) -> str:
    """The line in a log: vLLM's prefix of the release (level, month-day stamp, file and line), a
    bare print, a bar."""
    if message["level"] == "print":
        return text
    if message["level"] == "tqdm":
        return f"{text}: 100%|##########| 4/4 [00:05<00:00,  1.25s/it]"
    where = f"{path.rsplit('/', 1)[-1]}:{message['line']}"
    where = f"[{where}]" if vllm_prefix_style(version) == "bracketed" else f"{where}]"
    return f"{VLLM_LEVELS[message['level']]} 01-01 10:00:00 {where} {text}"


def vllm_judge(version: str, path: str, area: str, message: dict) -> Verdict:
    """covered: placed in its area's phase (any start-up phase for an area of several), an error
    line read as a failure, or noise with a reason; else unrecognised, no_phase or other_phase."""
    if vllm_noise_reason(message, area) is not None:
        return Verdict("noise")
    text = vllm_render(message)
    expected = VLLM_AREA_PHASE.get(area)
    return line_verdict(
        None if text is None else vllm_log_line(version, path, message, text),
        lambda phases: (expected in phases) if expected else bool(phases),
        message["level"],
    )


def vllm_measure(version: str) -> Release:
    """The start-up messages and raises of a vLLM release (no call graph: functions are not counted)."""
    rel = Release(version)
    areas = {path: f["area"] for path, f in vllm_catalogue(version)["files"].items()}
    measure_overrides(
        rel,
        [o for o in vllm_catalogue(version).get("overrides", []) if printed_override(o, areas)],
        lambda o, text: vllm_log_line(version, o["file"], o, text),
        vllm_render,
    )
    for path, f in vllm_catalogue(version)["files"].items():
        if f["area"] in VLLM_NOT_START_UP:
            continue
        for m in f["messages"]:
            if m["level"] == "raise":
                text = vllm_render(m) if m["format"] != "none" else None
                cause = read_traceback(traceback_of(path, m, text))
                mapped = cause is not None and cause not in GENERIC_CAUSES
                rel.raises["mapped" if mapped else "unmapped"] += 1
                if not mapped:
                    rel.raise_misses.append({**m, "file": path, "cause": cause})
                continue
            if m["level"] not in PRINTED:
                continue
            verdict = vllm_judge(version, path, f["area"], m)
            rel.messages[verdict.kind] += 1
            if verdict.kind not in ("covered", "noise"):
                rel.misses.append({**m, "file": path, "area": f["area"], "verdict": verdict.kind, "seen_phases": list(verdict.phases)})
    return rel


def vllm_table(releases: list[Release]) -> str:
    rows = [
        "| release | start-up messages covered | recognised at all | noise | raises mapped to a cause "
        "| overrides read / in the source |",
        "|---|---|---|---|---|---|",
    ]
    for r in releases:
        f = r.figures()
        rows.append(
            f"| {r.version} | {f['covered']}/{f['messages']} ({_pct(f['covered'], f['messages'])}) "
            f"| {f['recognised']}/{f['messages']} ({_pct(f['recognised'], f['messages'])}) | {f['noise']} "
            f"| {f['raises_mapped']}/{f['raises']} ({_pct(f['raises_mapped'], f['raises'])}) "
            f"| {f['overrides_read']}/{f['overrides']} ({_pct(f['overrides_read'], f['overrides'])}) |"
        )
    return "\n".join(rows)


VLLM_DOC_HEAD = """
# What logphase knows of vLLM, per release

The same measure on vLLM's catalogue (`grammars/vllm/catalogue/`, `python scripts/mine_vllm.py`:
one release per era) and its noise list (`grammars/vllm/noise.json`), written by the same
command; the ratchet is `grammars/vllm/catalogue/coverage.json` (`tests/test_knowledge_coverage_vllm.py`).

- **start-up messages**: the log calls, `print`s and `tqdm` bars at the default log level in the
  files mine_vllm.py reads (its `START_UP_FILES`), but for the areas printed while serving
  (`runtime`: request and throughput lines) or by the logging set-up (`logging`).
- **covered**: the message, rendered with plausible values behind the release's prefix
  (`INFO 01-01 10:00:00 file.py:N]` up to 0.7, `INFO 01-01 10:00:00 [file.py:N]` from 0.8) and read
  by `logphase.parse_text`, gives an event that places the line in a phase. vLLM's catalogue has
  no start-up call graph: the phase expected is the file's area where the area is one phase
  (launch, server_args and config: launch; distributed: distributed_init; weight_loading;
  memory_pool; compilation: cuda_graph_capture; http: warmup), any phase for the areas of several
  (engine, engine core, executors, workers, platforms, helpers). An `error` line counts when it is
  read as a failure. Or `noise.json` lists it with the reason it says nothing about the phase.
  **recognised at all**: it gives an event, in any phase or none.
- **the notes** (`grammars/vllm/notes.json`, written by `scripts/vllm_notes.py`, which `--update`
  runs): the start-up messages of the areas of one phase that no grammar rule reads, as SGLang's
  notes (the literal pieces of the first line, the area's phase), read the same way: weak evidence
  of their phase until ready. Not for the areas of several phases, bars, too little literal text,
  noise, or a text printed while serving too.
- **raises mapped to a cause**: every `raise` in those files (the catalogue keeps no call graph to
  hold the start-up path's only), rendered as the traceback it ends with, for which the report names
  a cause more specific than `python_exception`. The frame's function is placed by vLLM's mined frame
  table (`grammars/vllm/functions.json`): a raise in one that vLLM runs only while serving (a
  request's `add_request`, the engine's `step`) is a serving error, no start-up check, and a raise in
  the request validation of its OpenAI handlers (`_validate_input`) no failure of the server: both
  count as unmapped.
- **overrides read / in the source**: SGLang's measure on vLLM's settings: a log call in the same
  block as an assignment to an engine setting (a field of `EngineArgs` or `CompilationConfig`, the
  ones a user passes: `self.<field>` in a `*Config` or `EngineArgs` class, `<x>_config.<field>`
  anywhere but the model's own configs), printed at the default log level outside the areas
  printed while serving; a default filled in is not counted. **read**: the line, behind the
  release's prefix, gives an `ignored_parameter` warning (`grammars/vllm/overrides.json`).

"""


def vllm_standing(releases: list[Release]) -> str:
    lowest = min(releases, key=lambda r: r.covered / r.total if r.total else 1.0)
    unmapped = sum(r.raises["unmapped"] for r in releases)
    return (
        f"Lowest share of start-up messages covered: {lowest.version}, {_pct(lowest.covered, lowest.total)}."
        f" Raises without a specific cause, all releases: {unmapped}"
        " (most are argument and configuration checks, a `python_exception` with the message quoted).\n"
    )


def vllm_doc(releases: list[Release]) -> str:
    return VLLM_DOC_HEAD + "## Coverage of vLLM\n\n" + vllm_table(releases) + "\n\n" + vllm_standing(releases)


def vllm_ratchet(releases: list[Release]) -> dict:
    return {"schema": 1, "generator": "scripts/knowledge.py", "releases": {r.version: r.figures() for r in releases}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", action="store_true", help="rewrite docs/knowledge.md and the ratchet figures")
    ap.add_argument("--gaps", type=Path, help="write the uncovered start-up messages, grouped, to this file")
    ap.add_argument(
        "--era", nargs="+", action="append", metavar="RELEASE",
        help="releases of one era for --gaps (repeatable; default: the newest three, then 0.3-0.4)",
    )
    args = ap.parse_args(argv)
    if args.update:
        # the notes first: what logphase reads of the catalogue depends on them
        from sglang_notes import write

        write()
        noise.cache_clear()
        skipped_notes.cache_clear()
        from vllm_notes import write as write_vllm_notes  # vLLM's notes (grammars/vllm/notes.json) too

        write_vllm_notes()
        from override_rows import write as write_overrides  # both packs' overrides.json

        write_overrides()
    releases = [measure(v) for v in versions()]
    vllm_releases = [vllm_measure(v) for v in vllm_versions()]
    if args.update:
        DOC.write_text(doc(releases, vllm_releases))
        RATCHET.write_text(json.dumps(ratchet(releases), indent=1, sort_keys=True) + "\n")
        VLLM_RATCHET.write_text(json.dumps(vllm_ratchet(vllm_releases), indent=1, sort_keys=True) + "\n")
    if args.gaps:
        by_version = {r.version: r for r in releases}
        eras = args.era or [
            [r.version for r in releases[-3:]],
            [r.version for r in releases if r.version.startswith(("0.3.", "0.4."))],
        ]
        args.gaps.write_text(gaps([(f"{era[0]} ... {era[-1]}", [by_version[v] for v in era]) for era in eras]))
    print(table(releases))
    print(vllm_table(vllm_releases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
