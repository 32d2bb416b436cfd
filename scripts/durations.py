"""The durations property (tests/durations.py) over real logs: ../shared's by default, when present.

    python scripts/durations.py [--show] [LOG_OR_DIR ...]

For each log, its report (logphase's library, as `parse` reads a file) is checked against the log's text:
no total over the span of the server's own clock, none without a launch in the log, none null without
its reason; no step outside the phase that lists it; every duration the server printed agrees with the
report within 1 s or 3 %. Prints the counts (and, with --show, every violation); exits 1 when any
property fails. A reality check for developers: the logs stay outside the repo and no test depends on
them (the tests run the same property over the fixtures: tests/test_durations.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from logphase import parse_file
from tests.durations import Findings, check

SHARED = Path(__file__).resolve().parents[2] / "shared"
FOLDERS = ("realworld", "vllm", "excerpts", "trtllm")


def logs_of(targets: list[str]) -> list[Path]:
    if not targets:
        return [log for folder in FOLDERS for log in sorted((SHARED / folder).glob("*.log"))]
    out: list[Path] = []
    for target in map(Path, targets):
        out.extend(sorted(target.glob("*.log")) if target.is_dir() else [target])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="*", help=f"logs or folders of logs (default: {SHARED}/{{{','.join(FOLDERS)}}})")
    parser.add_argument("--show", action="store_true", help="print every violation")
    args = parser.parse_args(argv)
    logs = logs_of(args.logs)
    if not logs:
        print(f"no logs found (looked in {SHARED})", file=sys.stderr)
        return 2
    total, phased, failing = Findings(), 0, 0
    for log in logs:
        report = parse_file(str(log))
        found = check(log.read_bytes(), report)
        phased += bool(report.phases)
        failing += bool(found.violations)
        total.add(found)
        if args.show:
            for violation in found.violations:
                print(f"{log.parent.name}/{log.name}: {violation}")
    print(
        f"logs {len(logs)} with_phases {phased} totals {total.totals} steps {total.steps} "
        f"server_printed {total.matched}/{total.printed} logs_with_violations {failing} violations {len(total.violations)}"
    )
    return 1 if total.violations else 0


if __name__ == "__main__":
    sys.exit(main())
