"""Peak memory of ``logphase parse --json`` against the number of tracebacks in a log, and its
speed on bytes that are no log at all.

    python bench/memory.py                          # quick: 1k and 10k tracebacks, 20 MB of random input
    python bench/memory.py --tracebacks 10k,100k,1M # the full table (1M: a ~2 GB log, minutes)
    python bench/memory.py --tracebacks 0 --garbage 20MB --runs 3

Traceback logs (``--tracebacks``, one log per N, generated into bench/out/ if missing): the
start-up of bench/generate.py (TP8, ready), then serving lines with N tracebacks among them, in
turn of four shapes modelled on ../shared/spec/log-formats.md: a scheduler's ``Scheduler hit an
exception: Traceback ...`` with its frames and a CUDA OOM, from one of the eight ranks; a
chained NCCL error (``During handling of the above exception ...``) from another rank; a request
that failed while serving (uvicorn's ``Exception in ASGI application`` through SGLang's
http_server, the context-length ValueError); and SGLang's one-line request error
(``[http_server] Error: ...``). A baseline log of plain serving lines with as many lines as the
largest traceback log is measured too ("plain").

Peak RSS: each ``logphase parse FILE --json`` runs in a small Python process of its own that
starts it and reads ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` after it exits (a child
forked from this process would inherit this process's size as its starting peak).

Random input (``--garbage``): the engine (``Engine(collect_events=False).feed``) on SIZE bytes of
``os.urandom``, of random printable ASCII without a newline, and of random printable ASCII with a
newline every ~64 kB, fed in 1 MiB blocks as ``parse`` does, in a fresh process each run; the
table shows the median MB/s of ``--runs`` runs (default 3).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"

sys.path.insert(0, str(BENCH))
from generate import Clock, parse_size, serving_second, startup  # noqa: E402

RANKS = 8
SITE = "/usr/local/lib/python3.12/dist-packages"
SCHEDULER = f"{SITE}/sglang/srt/managers/scheduler.py"


def _file(path: str, lineno: int, function: str, statement: str) -> list[str]:
    return [f'  File "{path}", line {lineno}, in {function}\n', f"    {statement}\n"]


def scheduler_oom(ts: str, rank: int) -> list[str]:
    """A rank's serving loop dies of a CUDA OOM (SGLang's ``Scheduler hit an exception``)."""
    out = [f"[{ts} TP{rank}] Scheduler hit an exception: Traceback (most recent call last):\n"]
    out += _file(SCHEDULER, 2712, "run_scheduler_process", "scheduler.event_loop_overlap()")
    out += _file(f"{SITE}/torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)")
    out += _file(SCHEDULER, 1021, "event_loop_overlap", "batch_result = self.run_batch(batch)")
    out += _file(SCHEDULER, 1733, "run_batch", "logits_output, next_token_ids = self.tp_worker.forward_batch_generation(")
    out += _file(
        f"{SITE}/sglang/srt/managers/tp_worker.py", 239, "forward_batch_generation", "logits_output = self.model_runner.forward("
    )
    out += _file(f"{SITE}/sglang/srt/model_executor/model_runner.py", 1905, "forward", "return self.forward_extend(")
    out.append(
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU {rank} has a total capacity of "
        "79.19 GiB of which 1.05 GiB is free. Including non-PyTorch memory, this process has 78.13 GiB memory in use.\n"
    )
    return out


def scheduler_nccl_chain(ts: str, rank: int) -> list[str]:
    """A rank's collective fails: an NCCL error, then the wrapper raised while handling it."""
    out = [f"[{ts} TP{rank}] Scheduler hit an exception: Traceback (most recent call last):\n"]
    out += _file(SCHEDULER, 1796, "run_scheduler_process", "scheduler.event_loop_normal()")
    out += _file(SCHEDULER, 586, "recv_requests", "recv_reqs = broadcast_pyobj(recv_reqs, self.tp_rank, self.tp_cpu_group)")
    out += _file(f"{SITE}/sglang/srt/utils.py", 804, "broadcast_pyobj", "dist.broadcast(tensor_size, src=src, group=dist_group)")
    out.append(
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
        "unhandled system error, NCCL version 2.21.5\n"
    )
    out.append("\n")
    out.append("During handling of the above exception, another exception occurred:\n")
    out.append("\n")
    out.append("Traceback (most recent call last):\n")
    out += _file(SCHEDULER, 1801, "run_scheduler_process", "raise RuntimeError(msg) from e")
    out.append(f"RuntimeError: TP{rank} scheduler lost its peers\n")
    return out


def request_traceback(ts: str, rank: int) -> list[str]:
    """A request that failed while serving: uvicorn prints the traceback of SGLang's handler."""
    del rank
    out = [f"[{ts}] ERROR:    Exception in ASGI application\n", "Traceback (most recent call last):\n"]
    out += _file(
        f"{SITE}/uvicorn/protocols/http/httptools_impl.py",
        409,
        "run_asgi",
        "result = await app(  # type: ignore[func-returns-value]",
    )
    out += _file(f"{SITE}/fastapi/routing.py", 301, "app", "raw_response = await run_endpoint_function(")
    out += _file(
        f"{SITE}/sglang/srt/entrypoints/http_server.py",
        1062,
        "openai_v1_chat_completions",
        "return await raw_request.app.state.openai_serving_chat.handle_request(",
    )
    out += _file(
        f"{SITE}/sglang/srt/managers/tokenizer_manager.py",
        512,
        "_tokenize_one_request",
        "self._validate_one_request(obj, input_ids)",
    )
    out.append("ValueError: The input (40312 tokens) is longer than the model's context length (32768 tokens).\n")
    return out


def request_error_line(ts: str, rank: int) -> list[str]:
    """SGLang's one-line request error."""
    del rank
    return [f"[{ts}] [http_server] Error: The input (40312 tokens) is longer than the model's context length (32768 tokens).\n"]


SHAPES = (scheduler_oom, scheduler_nccl_chain, request_traceback, request_error_line)


def generate_tracebacks(n: int, path: Path, seed: int = 1) -> tuple[int, int]:
    """Write a ready start-up and ``n`` tracebacks among serving lines; returns (bytes, lines)."""
    rng = random.Random(seed)
    clock = Clock()
    state = {"running": 24, "iter": 0}
    path.parent.mkdir(parents=True, exist_ok=True)
    written = lines = 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        batch: list[str] = startup(rng, clock)
        for i in range(n):
            if i % 4 == 0:
                serving_second(rng, clock, state, batch)
            batch.extend(SHAPES[i % len(SHAPES)](clock.stamp(), (i * 3) % RANKS))
            if len(batch) > 20000:
                data = "".join(batch)
                f.write(data)
                written += len(data.encode())
                lines += data.count("\n")
                batch.clear()
        serving_second(rng, clock, state, batch)
        data = "".join(batch)
        f.write(data)
        written += len(data.encode())
        lines += data.count("\n")
    tmp.replace(path)
    return written, lines


def generate_plain(line_count: int, path: Path, seed: int = 1) -> None:
    """The start-up, then serving lines only, up to ``line_count`` lines."""
    rng = random.Random(seed)
    clock = Clock()
    state = {"running": 24, "iter": 0}
    tmp = path.with_suffix(".tmp")
    lines = 0
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        batch: list[str] = startup(rng, clock)
        while lines < line_count:
            for _ in range(200):
                serving_second(rng, clock, state, batch)
            data = "".join(batch)
            f.write(data)
            lines += data.count("\n")
            batch.clear()
    tmp.replace(path)


_PEAK_RSS = """
import resource, subprocess, sys
with open(sys.argv[1], "wb") as out:
    code = subprocess.call(sys.argv[2:], stdout=out)
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_rss(path: Path, report_path: Path) -> tuple[float, float, int]:
    """(peak RSS in MB, wall seconds, exit code) of ``logphase parse FILE --json``."""
    cmd = [sys.executable, "-c", _PEAK_RSS, str(report_path), sys.executable, "-m", "logphase", "parse", str(path), "--json"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    wall = time.perf_counter() - t0
    code, kb = done.stdout.split()
    return int(kb) / 1024, wall, int(code)


def summary(report_path: Path) -> str:
    """Outcome, cause and consequences of a saved report, for the table."""
    report = json.loads(report_path.read_bytes())
    failure = report.get("failure") or {}
    return (
        f"{report['outcome']} {failure.get('cause', '-')} line {failure.get('line', '-')}, "
        f"{len(failure.get('consequences') or [])} consequences, {report['lines']['events']} events"
    )


def memory_table(counts: list[int]) -> None:
    rows: list[tuple[str, int, int, float, float, str]] = []
    biggest_lines = 0
    for n in counts:
        path = OUT / f"tracebacks-{n}.log"
        if not path.exists():
            print(f"generating {path.name} ...", file=sys.stderr)
            generate_tracebacks(n, path)
        size = path.stat().st_size
        with open(path, "rb") as f:
            lines = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
        biggest_lines = max(biggest_lines, lines)
        report = OUT / f"tracebacks-{n}.json"
        rss, wall, code = peak_rss(path, report)
        rows.append((f"{n:,} tracebacks", size, lines, rss, wall, f"exit {code}: {summary(report)}"))
    if biggest_lines:
        plain = OUT / f"plain-{biggest_lines}.log"
        if not plain.exists():
            print(f"generating {plain.name} ...", file=sys.stderr)
            generate_plain(biggest_lines, plain)
        report = OUT / "plain.json"
        size = plain.stat().st_size
        rss, wall, code = peak_rss(plain, report)
        with open(plain, "rb") as f:
            lines = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
        rows.append(("plain lines", size, lines, rss, wall, f"exit {code}: {summary(report)}"))
    print(f"{'input':<22} {'MB':>8} {'lines':>12} {'peak RSS MB':>12} {'wall s':>8}  report")
    for name, size, lines, rss, wall, what in rows:
        print(f"{name:<22} {size / 1e6:>8.1f} {lines:>12,} {rss:>12.1f} {wall:>8.1f}  {what}")


_FEED = """
import sys, time
from logphase.engine.engine import Engine
data = open(sys.argv[1], "rb").read()
engine = Engine(collect_events=False)
t0 = time.perf_counter()
for i in range(0, len(data), 1 << 20):
    engine.feed(data[i:i + (1 << 20)])
engine.finish()
report = engine.report()
print(time.perf_counter() - t0, report.outcome, report.lines.total)
"""


def garbage(kind: str, size: int) -> bytes:
    rng = random.Random(7)
    if kind == "urandom":
        return rng.randbytes(size)
    printable = bytes(range(0x20, 0x7F))
    data = bytearray(rng.choices(printable, k=size))
    if kind == "printable, rare newlines":
        for i in range(rng.randrange(1, 1 << 16), size, 1 << 16):
            data[i] = 0x0A
    return bytes(data)


def garbage_table(size: int, runs: int) -> None:
    print(f"\n{'random input (' + f'{size / 1e6:.0f} MB, engine feed)':<44} {'median MB/s':>12} {'runs s':>24}  report")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for kind in ("urandom", "printable, no newline", "printable, rare newlines"):
        path = OUT / f"garbage-{kind.split(',')[0]}-{'rare' if 'rare' in kind else 'none'}-{size}.bin"
        if not path.exists():
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_bytes(garbage(kind, size))
        times: list[float] = []
        what = ""
        for _ in range(runs):
            done = subprocess.run([sys.executable, "-c", _FEED, str(path)], capture_output=True, text=True, check=True, env=env)
            seconds, outcome, total = done.stdout.split()
            times.append(float(seconds))
            what = f"{outcome}, {total} lines"
        median = statistics.median(times)
        print(f"{kind:<44} {size / 1e6 / median:>12.1f} {' '.join(f'{t:.2f}' for t in times):>24}  {what}")


def _counts(text: str) -> list[int]:
    out = []
    for item in text.split(","):
        item = item.strip().lower()
        if item:
            out.append(
                int(float(item[:-1]) * 1000)
                if item.endswith("k")
                else int(float(item[:-1]) * 10**6)
                if item.endswith("m")
                else int(item)
            )
    return [n for n in out if n > 0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tracebacks", default="1k,10k", help="numbers of tracebacks, e.g. 10k,100k,1M (0: none)")
    parser.add_argument("--garbage", default="20MB", help="size of each random input (0: none)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each random input (the median is shown)")
    args = parser.parse_args()
    counts = _counts(args.tracebacks)
    if counts:
        memory_table(counts)
    size = parse_size(args.garbage)
    if size:
        garbage_table(size, args.runs)


if __name__ == "__main__":
    main()
