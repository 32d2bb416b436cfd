"""Check that the fast path changes no report.

    python bench/compare.py [FILES...]            # default: ../shared/realworld/*.log, fixtures/logs/*, bench/out/*.log
    python bench/compare.py --ref DIR [FILES...]  # also compare `logphase parse --json` with another source tree

For every file, the report of ``Engine(collect_events=True)`` fed line by line in the old way
(every line classified, every event built) must equal the report of the bulk path
(``collect_events=False``) fed in several block sizes, and the line splitter must give the same
lines through ``feed`` and ``feed_runs``. With ``--ref DIR`` (a copy of an older tree, e.g. one
made with ``cp -r logphase grammars DIR/``) the CLI's JSON output is compared too.
Exit status 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from logphase.engine.engine import Engine  # noqa: E402
from logphase.reading.lines import LineRun, LineSplitter, LogicalLine  # noqa: E402
from logphase.recognising.bulk import PLAIN as _PLAIN  # noqa: E402


def report(data: bytes, collect: bool, block: int) -> dict[str, object]:
    engine = Engine(source="x", collect_events=collect)
    for i in range(0, len(data), block):
        engine.feed(data[i : i + block])
    engine.finish()
    return engine.report().model_dump(mode="json")


def split_lines(data: bytes, block: int, runs: bool) -> tuple[list[LogicalLine], object]:
    s = LineSplitter()
    out: list[LogicalLine] = []
    for i in range(0, len(data), block):
        chunk = data[i : i + block]
        items = s.feed_runs(chunk, _PLAIN) if runs else s.feed(chunk)
        for item in items:
            if isinstance(item, LineRun):
                out.extend(item.logical_lines())
            else:
                out.append(item)
    out.extend(s.finish())
    return out, s.stats


def cli(path: Path, tree: Path) -> bytes:
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, "-m", "logphase", "parse", str(path), "--json"], capture_output=True, env=env, cwd=tree)
    return r.stdout.replace(str(path).encode(), b"FILE")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--ref", help="source tree to compare the CLI output with")
    ap.add_argument("--max-bytes", type=int, default=30_000_000, help="skip the in-process checks of bigger files")
    args = ap.parse_args(argv)
    files = [Path(f) for f in args.files]
    if not files:
        files = sorted((ROOT.parent / "shared" / "realworld").glob("*.log"))
        files += sorted(p for p in (ROOT / "fixtures" / "logs").glob("*") if p.is_file())
        files += sorted((ROOT / "bench" / "out").glob("*.log"))
    bad = 0
    for path in files:
        data = path.read_bytes()
        problems: list[str] = []
        if len(data) <= args.max_bytes:
            want = report(data, True, 1 << 20)
            for block in (4 << 20, 65536, 4093):
                if report(data, False, block) != want:
                    problems.append(f"bulk report differs (block {block})")
            small = data[:2_000_000]
            for block in (1 << 20, 997):
                a, sa = split_lines(small, block, False)
                b, sb = split_lines(small, block, True)
                if a != b or sa != sb:
                    problems.append(f"feed_runs lines differ (block {block})")
        if args.ref:
            if cli(path, Path(args.ref)) != cli(path, ROOT):
                problems.append(f"CLI JSON differs from {args.ref}")
        else:
            out = json.loads(cli(path, ROOT))
            if out.get("lines", {}).get("total") is None:
                problems.append("CLI gave no report")
        print(f"{'DIFF' if problems else 'same'}  {path}  {'; '.join(problems)}")
        bad += bool(problems)
    print(f"{len(files) - bad} same, {bad} different")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
