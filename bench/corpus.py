"""Benchmark inputs of ~100 MB built from folders of real logs, for ``bench/run.py --corpus``.

    python bench/corpus.py ../shared/realworld [--target-size 100MB] [--per-file 3]   # build only, print what was built

Per folder, one input: every ``*.log`` of the folder (sorted by name) concatenated, a newline added after
a file that does not end with one, and the concatenation repeated until the input is about the target size.
Each repetition k (0, 1, 2, ...) is a later run of the same logs: every ``YYYY-MM-DD HH:MM:SS`` time in it
(``[2026-02-05 12:28:06 TP0]`` prefixes, ``2026-02-05 12:28:06,123`` of Python's logging, ISO
``2026-02-05T12:28:06.123``) is moved forward by k * (span of the concatenation + 1 h); everything else,
``\\r``, non-UTF-8 bytes, times without a date (``[04:40:55 TP0]``, glog's ``I0205 12:28:06``), stays
byte for byte. The concatenation once, unrepeated, is an input too (``<folder>-all-once``). With ``--per-file N``, the N largest logs of each folder also get an input of their own
(the same log repeated the same way), to see which kinds of log are slow; logs under ``--per-file-min``
are left out (a 1 kB excerpt repeated 100,000 times says little about real logs).

Inputs go to bench/out/corpus/ (git-ignored, not under bench/out/*.log, which bench/compare.py reads) with
a ``.json`` beside each one describing it; an input is built again only when its sources or the target
size change.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

BENCH = Path(__file__).resolve().parent
CORPUS_OUT = BENCH / "out" / "corpus"
BUILD_VERSION = 1  # bump when the way inputs are built changes: every input is built again

sys.path.insert(0, str(BENCH))
from generate import parse_size  # noqa: E402

# a date and a time to the second; not inside a longer run of digits (fractions after it stay as they are)
STAMP = re.compile(rb"(?<![0-9])([0-9]{4})-([0-9]{2})-([0-9]{2})([ T])([0-9]{2}):([0-9]{2}):([0-9]{2})(?![0-9])")
GAP = 3600  # seconds between the last time of one repetition and the first of the next


@dataclass
class Input:
    """One benchmark input as built: where it is and where it comes from."""

    name: str
    path: str
    sources: list[str]
    bytes: int
    lines: int
    repetitions: int
    copy_bytes: int
    stamps_per_copy: int
    span_s: int
    shift_s: int


def concatenation(sources: list[Path]) -> bytes:
    """The logs back to back, each ending with a newline."""
    parts = []
    for path in sources:
        data = path.read_bytes()
        parts.append(data)
        if data and not data.endswith(b"\n"):
            parts.append(b"\n")
    return b"".join(parts)


class Shifter:
    """A text cut at its timestamps, to print again with every timestamp moved by the same offset."""

    def __init__(self, data: bytes) -> None:
        self.literals: list[bytes] = []  # the bytes between stamps: one more than stamps
        self.stamps: list[tuple[datetime, bytes]] = []  # each stamp's time and its date/time separator
        pos = 0
        for m in STAMP.finditer(data):
            y, mo, d, sep, h, mi, s = m.groups()
            try:
                when = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s))
            except ValueError:  # 2026-13-45 99:00:00: not a time, left as it is
                continue
            self.literals.append(data[pos : m.start()])
            self.stamps.append((when, sep))
            pos = m.end()
        self.literals.append(data[pos:])
        times = [when for when, _ in self.stamps]
        self.span_s = int((max(times) - min(times)).total_seconds()) if times else 0

    def shifted(self, seconds: int) -> bytes:
        return b"".join(self._pieces(timedelta(seconds=seconds)))

    def _pieces(self, delta: timedelta) -> Iterator[bytes]:
        cache: dict[tuple[datetime, bytes], bytes] = {}  # a log repeats its seconds: format each once
        for literal, key in zip(self.literals[:-1], self.stamps, strict=True):
            yield literal
            text = cache.get(key)
            if text is None:
                when = key[0] + delta
                text = cache[key] = f"{when:%Y-%m-%d}{key[1].decode()}{when:%H:%M:%S}".encode()
            yield text
        yield self.literals[-1]


def _fingerprint(sources: list[Path], target: int) -> dict[str, object]:
    return {
        "version": BUILD_VERSION,
        "target": target,
        "sources": [[str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns] for p in sources],
    }


def build(name: str, sources: list[Path], target: int, out_dir: Path = CORPUS_OUT) -> Input:
    """The input ``out_dir/name.log``: the sources concatenated, repeated with shifted times to ~target bytes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.log"
    meta_path = out_dir / f"{name}.json"
    fingerprint = _fingerprint(sources, target)
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("fingerprint") == fingerprint and meta["input"]["bytes"] == path.stat().st_size:
            return Input(**meta["input"])
    print(f"building {path.name} from {len(sources)} log(s) ...", file=sys.stderr)
    data = concatenation(sources)
    shifter = Shifter(data)
    repetitions = max(1, round(target / len(data))) if data else 1
    shift = shifter.span_s + GAP
    if shifter.stamps:
        try:
            max(when for when, _ in shifter.stamps) + timedelta(seconds=shift * (repetitions - 1))
        except OverflowError:
            raise ValueError(f"{name}: {repetitions} copies {shift} s apart run past the year 9999") from None
    lines = 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        for k in range(repetitions):
            copy = shifter.shifted(k * shift) if shifter.stamps else data
            assert len(copy) == len(data), name  # a stamp keeps its length
            f.write(copy)
            lines += copy.count(b"\n")
    tmp.replace(path)
    built = Input(
        name=name,
        path=str(path),
        sources=[str(p) for p in sources],
        bytes=path.stat().st_size,
        lines=lines,
        repetitions=repetitions,
        copy_bytes=len(data),
        stamps_per_copy=len(shifter.stamps),
        span_s=shifter.span_s,
        shift_s=shift if shifter.stamps else 0,
    )
    meta_path.write_text(json.dumps({"fingerprint": fingerprint, "input": asdict(built)}, indent=2) + "\n")
    return built


def folder_inputs(folder: Path, target: int, per_file: int = 0, per_file_min: int = 100_000) -> list[Input]:
    """The folder's input, the folder's logs concatenated once (``-all-once``: a start-up log's size,
    where fixed costs weigh), then one for each of its ``per_file`` largest logs of at least
    ``per_file_min`` bytes."""
    logs = sorted(folder.glob("*.log"))
    if not logs:
        return []
    label = folder.resolve().name
    inputs = [build(f"{label}-all", logs, target)]
    if len(logs) > 1:
        inputs.append(build(f"{label}-all-once", logs, 0))  # target 0: one copy
    largest = sorted((p for p in logs if p.stat().st_size >= per_file_min), key=lambda p: -p.stat().st_size)[:per_file]
    inputs += [build(f"{label}-{p.stem}", [p], target) for p in largest]
    return inputs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--target-size", default="100MB")
    ap.add_argument("--per-file", type=int, default=0)
    ap.add_argument("--per-file-min", default="100KB")
    args = ap.parse_args(argv)
    for folder in map(Path, args.folders):
        if not folder.is_dir():
            print(f"{folder}: no such folder, skipped", file=sys.stderr)
            continue
        for built in folder_inputs(folder, parse_size(args.target_size), args.per_file, parse_size(args.per_file_min)):
            print(
                f"{built.name}: {built.bytes / 1e6:.1f} MB, {built.lines:,} lines, {built.repetitions} x "
                f"{built.copy_bytes:,} B, {built.stamps_per_copy:,} stamps a copy, shifted by {built.shift_s:,} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
