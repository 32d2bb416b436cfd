"""What a MB of server_args lines just over 64 KiB costs `logphase parse`, against a MB of a normal log.

    python bench/overlong_lines.py [--mb 8] [--runs 3]

Generates, in a temporary folder, about ``--mb`` MB of each input:

* ``normal``: the reference log of bench/generate.py (a TP8 start-up, then its serving tail);
* ``startup``: the fixtures tp2_gloo_nccl_success.log and kv_cache_insufficient.log, back to back,
  repeated (start-up lines only: the slowest a MB of a normal log costs);
* ``overlong``: server_args dumps of 66,000 bytes (tp2_gloo_nccl_success.log's, with one long list
  more, ``layer_ids=[0, 1, ...]``, as a long --json-model-override-args makes it), each followed by
  ``Init torch distributed begin.``: the reader keeps a line's first 64 KiB, so every dump is cut;
  each has its own port (no two alike, as a relaunch gives);
* ``overlong-same``: the same with one dump for every run (a launcher that repeats it);
* ``under``, ``under-same``: the same with 60,000-byte dumps, read whole.

Reads each in this process (``parse_bytes``, the tree this script is in), once on its head to warm
the caches, then alternating, ``--runs`` times; prints the median CPU time a MB (start-up not counted)
and each input's ratio to normal.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logs"
LINE_BYTES = 66_000
UNDER_BYTES = 60_000


def _normal(size: int) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ref.log"
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "generate.py"), "--size", str(size), "-o", str(out)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return out.read_bytes()


def _startup(size: int) -> bytes:
    unit = b"".join((FIXTURES / n).read_bytes() for n in ("tp2_gloo_nccl_success.log", "kv_cache_insufficient.log"))
    return unit * max(1, size // len(unit))


def _dumps(size: int, same: bool, line_bytes: int) -> bytes:
    lines = (FIXTURES / "tp2_gloo_nccl_success.log").read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if b"server_args=ServerArgs(" in line)
    # a list long enough to make the dump line_bytes long (LINE_BYTES: just over the reader's 64 KiB),
    # of small values: the most a grammar reads in a line (a long --json-model-override-args)
    values = b", ".join(b"%d" % i for i in range(line_bytes // 3))
    pairs = b"layer_ids=[" + values[: line_bytes - len(lines[at]) - 16].rsplit(b", ", 1)[0] + b"]"
    rest = b"[2026-03-04 10:12:46 TP0] Init torch distributed begin.\n"
    out: list[bytes] = []
    total, n = 0, 0
    while total < size:
        dump = lines[at] if same else re.sub(rb"port=\d+", b"port=%d" % (20000 + n), lines[at], count=1)
        run = dump[:-1] + b", " + pairs + b")\n" + rest
        out.append(run)
        total, n = total + len(run), n + 1
    return b"".join(out)


def _cpu_seconds(data: bytes) -> float:
    """CPU seconds of reading ``data`` whole (parse_bytes, in this process: no start-up counted)."""
    from logphase.engine.whole import parse_bytes

    start = time.process_time()
    parse_bytes(data)
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=8.0)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    size = int(args.mb * 1e6)
    inputs = {
        "normal": _normal(size),
        "startup": _startup(size),
        "overlong": _dumps(size, same=False, line_bytes=LINE_BYTES),
        "overlong-same": _dumps(size, same=True, line_bytes=LINE_BYTES),
        "under": _dumps(size, same=False, line_bytes=UNDER_BYTES),
        "under-same": _dumps(size, same=True, line_bytes=UNDER_BYTES),
    }
    for data in inputs.values():
        _cpu_seconds(data[:200_000])  # the grammars and patterns built, the caches warm
    times: dict[str, list[float]] = {name: [] for name in inputs}
    for _ in range(args.runs):
        for name, data in inputs.items():
            times[name].append(_cpu_seconds(data))
    per_mb = {name: statistics.median(times[name]) / (len(inputs[name]) / 1e6) for name in inputs}
    for name, seconds in per_mb.items():
        print(f"{name:14} {len(inputs[name]) / 1e6:5.1f} MB  {seconds * 1000:7.1f} ms CPU a MB  {seconds / per_mb['normal']:6.2f}x normal")


if __name__ == "__main__":
    main()
