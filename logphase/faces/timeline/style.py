"""The look of the timeline: colours, sizes and the small text helpers the drawing uses."""

from __future__ import annotations

import html
import re
from datetime import datetime

from logphase.reporting.report import CONFIG_KEYS
from logphase.vocabulary.phases import Phase

# above this many ranks, rows are grouped (identical phases) or summarised (min / median / max)
MAX_RANK_ROWS = 16
MAX_ROWS = 18

PHASE_COLORS: dict[Phase, str] = {
    Phase.LAUNCH: "#8d8d8d",
    Phase.DISTRIBUTED_INIT: "#9c6fb6",
    Phase.WEIGHT_LOADING: "#3f73b5",
    Phase.MEMORY_POOL: "#33a3a0",
    Phase.CUDA_GRAPH_CAPTURE: "#ef8a2e",
    Phase.WARMUP: "#e3c437",
    Phase.READY: "#3a9a48",
}
DARK_TEXT = {Phase.MEMORY_POOL, Phase.CUDA_GRAPH_CAPTURE, Phase.WARMUP}
FAILURE_COLOR = "#d01c1c"
ECHO_COLOR = "#b45309"
READY_COLOR = "#2e8540"
FONT = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"

WIDTH = 1320
LABEL_W = 210
RIGHT_PAD = 34
PLOT_X = LABEL_W
PLOT_W = WIDTH - LABEL_W - RIGHT_PAD
ROW_H = 24
BAR_H = 16
LANE_H = BAR_H + 3
CHAR_W = 6.6  # average advance of an 11 px sans-serif glyph: enough to decide whether a label fits

# the report's key configuration, less what the picture has no room for
CONFIG_SHOWN = tuple(k for k in CONFIG_KEYS if k not in ("node_rank", "cuda_graph_bs", "host"))
SCHEDULER_SHOWN = ("max_total_num_tokens", "max_running_requests", "context_len", "available_gpu_mem")


# -- formatting ------------------------------------------------------------------------------------


# what no XML 1.0 document may hold (the C0 controls but tab, newline and carriage return, lone
# surrogates, U+FFFE and U+FFFF) and what HTML reads as a parse error (DEL, the C1 controls): an
# error's text can hold any of them (a log's stray bytes, an escape code), and one makes the SVG
# ill-formed. Shown escaped, as Python writes them
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _escaped(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def esc(value: object) -> str:
    """Text for the page and the SVG: markup escaped, and characters no XML holds shown escaped."""
    return html.escape(_NOT_XML.sub(_escaped, str(value)), quote=True)


def fmt_offset(seconds: float, span: float) -> str:
    if span <= 180:
        return f"+{seconds:.0f} s"
    if span >= 3 * 3600 and seconds % 3600 == 0:
        return f"+{seconds / 3600:.0f} h"
    if seconds % 60 == 0:
        return f"+{seconds / 60:.0f} min"
    return f"+{int(seconds // 60)}:{int(seconds % 60):02d}"


def parse_ts(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts)
    except ValueError:
        return None


def text_width(text: str, size: float = 11) -> float:
    return len(text) * CHAR_W * size / 11


def num(value: float) -> str:
    """A coordinate, short."""
    return f"{value:.1f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def compress_ranks(ranks: list[str], limit: int = 30) -> str:
    """'TP0–TP7, TP9' for consecutive runs of a rank list; cut to ``limit`` characters."""
    if not ranks:
        return ""
    parts: list[str] = []
    parsed = [(r, re.fullmatch(r"([A-Za-z]+)(\d+)", r)) for r in ranks]
    i = 0
    while i < len(parsed):
        r, m = parsed[i]
        j = i
        if m:
            while j + 1 < len(parsed):
                nxt = parsed[j + 1][1]
                cur = parsed[j][1]
                if nxt and cur and nxt.group(1) == m.group(1) and int(nxt.group(2)) == int(cur.group(2)) + 1:
                    j += 1
                else:
                    break
        parts.append(r if j == i else (f"{r}, {parsed[j][0]}" if j == i + 1 else f"{r}–{parsed[j][0]}"))
        i = j + 1
    text = ", ".join(parts)
    if len(text) > limit:
        text = text[: limit - 1].rsplit(",", 1)[0] + ", …"
    return text
