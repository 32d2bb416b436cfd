"""Converters from the text of a field value to typed values ("4.50 GB" -> 4.5)."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_UNIT_TO_GB = {
    "B": 1 / 2**30,
    "KB": 1 / 2**20,
    "KIB": 1 / 2**20,
    "MB": 1 / 1024,
    "MIB": 1 / 1024,
    "GB": 1.0,
    "GIB": 1.0,
    "TB": 1024.0,
    "TIB": 1024.0,
    "BYTES": 1 / 2**30,
}


def number(text: str | None) -> float | None:
    if text is None:
        return None
    m = _NUMBER.search(text)
    return float(m.group()) if m else None


def integer(text: str | None) -> int | None:
    value = number(text)
    return int(value) if value is not None and value == int(value) else None


def gigabytes(text: str | None) -> float | None:
    """'4.50 GB' -> 4.5; '512 MiB' -> 0.5; a bare number is taken as GB (SGLang's unit)."""
    if text is None:
        return None
    m = _NUMBER.search(text)
    if not m:
        return None
    unit = text[m.end() :].strip().split(" ")[0].rstrip(".,)").upper()
    return round(float(m.group()) * _UNIT_TO_GB.get(unit, 1.0), 4)


def int_list(text: str | None) -> list[int] | None:
    if text is None:
        return None
    values = [int(float(v)) for v in _NUMBER.findall(text)]
    return values or None


def clock_seconds(text: str | None) -> float | None:
    """tqdm's '02:18' or '1:02:18' -> seconds; None for '?' (unknown)."""
    if text is None or not text[:1].isdigit():
        return None
    total = 0.0
    for part in text.split(":"):
        total = total * 60 + float(part)
    return total


def clean(text: str | None) -> str | None:
    if text is None:
        return None
    text = text.strip().rstrip(".").strip()
    return text or None
