"""The start-up probe on real logs: each log replayed at the pace of its own stamps into the sidecar's
follower on a fake clock (tests/probe_replay.py), and what the probe answered.

    python scripts/probe_replay.py [DIR ...]     (default: ../shared/{realworld,excerpts,vllm,trtllm} and fixtures/logs)

One line per log: its outcome, when its root cause's line was written (seconds from its first
stamp), when the probe that says it first failed (/startup, or /live for a failure while serving),
the delay between the two (negative: a stall failed it first), and every failure of the start-up
probe while the start-up was making progress. Then the counts the closing note gives. A kubelet
probing every P seconds fails within delay + P seconds of the root cause.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.probe_replay import replay  # noqa: E402


def _folders(argv: list[str]) -> list[Path]:
    if argv:
        return [Path(a) for a in argv]
    shared = ROOT.parent / "shared"
    return [*(shared / name for name in ("realworld", "excerpts", "vllm", "trtllm")), ROOT / "fixtures" / "logs"]


def main(argv: list[str]) -> int:
    logs = [log for folder in _folders(argv) for log in sorted(folder.glob("*.log"))]
    if not logs:
        print("no .log files", file=sys.stderr)
        return 2
    delays: list[float] = []
    undetected: list[str] = []
    progressing = left_alone = 0
    print(f"{'log':<52} {'outcome':<8} {'cause at':>9} {'failed at':>9} {'delay':>7}  false failures")
    for log in logs:
        r = replay(log.read_bytes())
        name = f"{log.parent.name}/{log.name}"
        false = r.false_failures()
        if r.outcome != "failed" or r.while_serving:
            progressing += 1
            left_alone += not false
        delay = r.delay()
        if r.failure_at is not None:
            if delay is None:
                undetected.append(name)
            else:
                delays.append(delay)
        at = f"{r.failure_at:9.1f}" if r.failure_at is not None else f"{'-':>9}"
        detected = r.detected_at()
        failed = f"{detected:9.1f}" if detected is not None else f"{'-':>9}"
        shown = f"{delay:7.1f}" if delay is not None else f"{'-':>7}"
        said = "; ".join(f"{s:.0f}-{e:.0f} s: {m[:90]}" for s, e, _, m in false)
        print(f"{name:<52} {r.outcome + ('/serving' if r.while_serving else ''):<8} {at} {failed} {shown}  {said}")
    late = sorted(d for d in delays if d > 0)
    print(
        f"\n{len(logs)} logs: {len(delays) + len(undetected)} with a root cause, the probe failed on {len(delays)} "
        f"(delay <= 0 s on {sum(d <= 0 for d in delays)}, later on {len(late)}: {', '.join(f'{d:.0f}' for d in late)} s); "
        f"never on {len(undetected)} ({', '.join(undetected) or 'none'}); "
        f"{left_alone} of {progressing} start-ups that made progress (ready, or cut while starting) never failed"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
