"""The ``server_args=`` dumps of logs: the fast reading (Python's parser) against the grammar's.

    python bench/server_args_dumps.py --check FILES...   # every dump: fast reading == grammar's
    python bench/server_args_dumps.py [--runs 3] FILES... # CPU time per dump, grammar vs fast
    python bench/server_args_dumps.py --ref TREE FILES... # CPU of parse --json, TREE's vs this tree's

``--check`` compares, for every ``server_args=`` line that ends as a dump does, the values of
``read_fast`` and of the grammar (``repr`` equal: types, order, -0.0 included), and counts the dumps the
fast reading passes to the grammar. Exit status 1 on any difference. The timing reads each distinct
dump with each reader in turn (alternating, medians of ``--runs``; process CPU time). ``--ref``
times whole ``logphase parse --json`` processes of each file, the other tree's and this one's in
turn (each with its own cache folder, warmed by a first run), medians of ``--runs``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from logphase.packs.server_args import _read_lark, read_fast  # noqa: E402


def dumps(files: list[str]) -> list[str]:
    """Each ``server_args=`` line's text from the marker on, stripped, as the classifier gives it."""
    out: list[str] = []
    for name in files:
        for raw in Path(name).read_bytes().splitlines():
            line = raw.decode("utf-8", "replace")
            at = line.find("server_args=")
            if at >= 0:
                text = line[at:].strip()
                if text.endswith((")", "}")):
                    out.append(text)
    return out


def check(texts: list[str]) -> int:
    fast = differ = 0
    for text in texts:
        got = read_fast(text)
        if got is None:
            continue
        fast += 1
        if repr(got) != repr(_read_lark(text)):
            differ += 1
            print("DIFFERENT:", text[:200])
    print(f"{len(texts)} dumps, {fast} read fast, {len(texts) - fast} by the grammar, {differ} different")
    return 1 if differ else 0


def cpu(read: Callable[[str], Any], texts: list[str]) -> float:
    start = time.process_time()
    for text in texts:
        read(text)
    return time.process_time() - start


def parse_cpu(tree: Path, log: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree), LOGPHASE_CACHE_DIR=os.path.join(tempfile.gettempdir(), f"sa-bench-cache-{tree.name}"))
    proc = subprocess.Popen([sys.executable, "-m", "logphase", "parse", "--json", log], stdout=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir())
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def compare_trees(ref: Path, files: list[str], runs: int) -> None:
    for log in files:
        parse_cpu(ref, log), parse_cpu(ROOT, log)  # caches warmed
        old: list[float] = []
        new: list[float] = []
        for _ in range(runs):
            old.append(parse_cpu(ref, log))
            new.append(parse_cpu(ROOT, log))
        o, n = statistics.median(old), statistics.median(new)
        print(f"{Path(log).name}: {ref} {o:.2f} CPU s, this tree {n:.2f} CPU s ({(o - n) / o:+.1%} saved); runs {old} {new}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ref", type=Path, help="another source tree: time parse --json of each file with both")
    args = ap.parse_args(argv)
    if args.ref:
        compare_trees(args.ref.resolve(), args.files, args.runs)
        return 0
    texts = dumps(args.files)
    if args.check:
        return check(texts)
    distinct = sorted(set(texts), key=len)
    _read_lark(distinct[0])  # the grammar's parser built before timing
    old: list[float] = []
    new: list[float] = []
    for _ in range(args.runs):
        old.append(cpu(_read_lark, distinct))
        new.append(cpu(read_fast, distinct))
    size = sum(map(len, distinct)) / len(distinct)
    o, n = statistics.median(old), statistics.median(new)
    print(f"{len(distinct)} distinct dumps, mean {size / 1024:.1f} KiB")
    print(f"grammar {o / len(distinct) * 1e3:.2f} ms/dump, fast {n / len(distinct) * 1e3:.2f} ms/dump, {o / n:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
