"""Run logphase over a folder of real logs (default ../shared/realworld) and print a table.

    python scripts/realworld.py [DIR]

A reality check for developers; the logs stay outside the repo and no test depends on them.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

from logphase import parse_file


def main() -> int:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "realworld"
    logs = sorted(folder.glob("*.log"))
    if not logs:
        print(f"no .log files in {folder}", file=sys.stderr)
        return 2
    print(
        f"{'file':<9} {'outcome':<9} {'phase':<19} {'cause':<29} {'rank':<12} {'line':>6} {'runs':>4} {'startup':>8} {'unrec':>6} {'ms':>6}  warnings"
    )
    for log in logs:
        t0 = time.perf_counter()
        try:
            r = parse_file(str(log))
        except Exception:
            print(f"{log.name:<9} CRASH")
            traceback.print_exc()
            continue
        ms = (time.perf_counter() - t0) * 1000
        f = r.failure
        warnings = ",".join(sorted({w.kind for w in r.warnings}))
        startup = f"{r.total_startup_s:.0f}" if r.total_startup_s is not None else "-"
        print(
            f"{log.name:<9} {r.outcome:<9} {(r.phase.value if r.phase else '-'):<19} "
            f"{(f.cause.value if f else '-'):<29} {((f.rank or '-') if f else '-'):<12} {(f.line if f else 0):>6} "
            f"{r.runs:>4} {startup:>8} {r.lines.unrecognized:>6} {ms:>6.0f}  {warnings}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
