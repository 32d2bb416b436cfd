"""Stage 2a: the envelope of a logical line (time, rank, torchrun rank, Ray actor).

The per-line test is one regular expression compiled from the terminals of
``grammars/prefix.lark``; running Lark itself on every line would cost ~10 us a line.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from logphase.pipeline.grammars import terminal_pattern


class Envelope(NamedTuple):
    ts: str | None  # ISO 8601 as printed, "T" between date and time
    rank: str | None  # "TP0", "DP0 TP1 EP1", "rank3"
    message: str
    torch_rank: str | None  # "rank3" when torchrun's "[rank3]:" prefix was present


def _compile() -> tuple[re.Pattern[str], re.Pattern[str]]:
    timestamp = terminal_pattern("envelope", "TIMESTAMP")
    rank_tag = terminal_pattern("envelope", "RANK_TAG")
    ray = terminal_pattern("envelope", "RAY_ACTOR")
    torch_rank = terminal_pattern("envelope", "TORCH_RANK")
    source = terminal_pattern("envelope", "LOG_SOURCE")
    sglang = re.compile(rf"(?:{ray})?\[(?P<ts>{timestamp})(?P<tags>(?: (?:{rank_tag}))*)\](?:{source})? ?(?P<msg>.*)", re.DOTALL)
    return sglang, re.compile(rf"{torch_rank} ?")


_SGLANG, _TORCH_RANK = _compile()


def split_envelope(text: str) -> Envelope:
    torch_rank = None
    if text.startswith("[rank"):
        m = _TORCH_RANK.match(text)
        if m:
            torch_rank = text[1 : text.index("]")]
            text = text[m.end() :]
    if text[:1] in "[(" and text:
        m = _SGLANG.match(text)
        if m:
            ts = m.group("ts").replace(" ", "T", 1).replace(",", ".")
            tags = m.group("tags").strip() or None
            return Envelope(ts, tags or torch_rank, m.group("msg"), torch_rank)
    return Envelope(None, torch_rank, text, torch_rank)
