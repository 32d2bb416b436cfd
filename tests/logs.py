"""Small log builders for unit tests (fixtures proper live in fixtures/logs/)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType

from logphase import Engine
from logphase.reporting.report import Report

# follow calls a file that ends in a finished run "stale" when its modification time is more than
# 1 s before follow started (faces/live/follow.py). Tests set that time explicitly rather than race the
# start-up of a `python -m logphase` process: a fresh file's time is put far enough ahead that no
# start-up, however slow, makes it look old; a stale file's an hour back.
FRESH_AHEAD_S = 3600.0


def written_now(path: Path) -> Path:
    """Mark ``path`` as written as follow starts, whenever that is (see FRESH_AHEAD_S)."""
    ahead = time.time() + FRESH_AHEAD_S
    os.utime(path, (ahead, ahead))
    return path


def written_long_ago(path: Path) -> Path:
    """Mark ``path`` as written an hour ago: a finished run in it is an earlier run's."""
    old = time.time() - 3600
    os.utime(path, (old, old))
    return path


def fed_in_chunks(engine: Engine, data: bytes, cuts: list[int] | None = None) -> Report:
    """Feed ``data`` split at ``cuts`` (any order, repeats allowed), finish, and report."""
    last = 0
    for cut in sorted(set(cuts or [])):
        engine.feed(data[last:cut])
        last = cut
    engine.feed(data[last:])
    engine.finish()
    return engine.report()


def stamp(second: int, minute: int = 20) -> str:
    return f"2026-05-09 09:{minute:02d}:{second:02d}"


def tp2_startup(ready: bool = True, mem: str = "0.85") -> str:
    lines = [
        f"[{stamp(0)}] server_args=ServerArgs(model_path='org/m', tp_size=2, dp_size=1, mem_fraction_static={mem}, port=30000)",
        f"[{stamp(2)} TP0] Init torch distributed begin.",
        f"[{stamp(2)} TP1] Init torch distributed begin.",
        "[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1",
        "[Gloo] Rank 1 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1",
        f"[{stamp(3)} TP0] Init torch distributed ends. mem usage=0.50 GB",
        f"[{stamp(3)} TP1] Init torch distributed ends. mem usage=0.50 GB",
        f"[{stamp(3)} TP0] Load weight begin. avail mem=47.00 GB",
        f"[{stamp(3)} TP1] Load weight begin. avail mem=47.00 GB",
        f"[{stamp(20)} TP0] Load weight end. type=M, dtype=torch.bfloat16, avail mem=20.00 GB, mem usage=27.00 GB.",
        f"[{stamp(21)} TP1] Load weight end. type=M, dtype=torch.bfloat16, avail mem=20.00 GB, mem usage=27.00 GB.",
        f"[{stamp(22)} TP0] KV Cache is allocated. #tokens: 100000, K size: 6.00 GB, V size: 6.00 GB",
        f"[{stamp(22)} TP1] KV Cache is allocated. #tokens: 100000, K size: 6.00 GB, V size: 6.00 GB",
        f"[{stamp(22)} TP0] Memory pool end. avail mem=7.00 GB",
        f"[{stamp(22)} TP1] Memory pool end. avail mem=7.00 GB",
        f"[{stamp(23)} TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=6.90 GB",
        f"[{stamp(23)} TP1] Capture cuda graph begin. This can take up to several minutes. avail mem=6.90 GB",
        f"[{stamp(30)} TP0] Capture cuda graph end. Time elapsed: 7.00 s. mem usage=0.50 GB. avail mem=6.40 GB.",
        f"[{stamp(30)} TP1] Capture cuda graph end. Time elapsed: 7.00 s. mem usage=0.50 GB. avail mem=6.40 GB.",
        f"[{stamp(31)} TP0] max_total_num_tokens=100000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=64, context_len=8192, available_gpu_mem=6.40 GB",
        f"[{stamp(32)}] INFO:     Started server process [100]",
        f"[{stamp(32)}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        f'[{stamp(33)}] INFO:     127.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK',
    ]
    if ready:
        lines.append(f"[{stamp(34)}] The server is fired up and ready to roll!")
    return "\n".join(lines) + "\n"


def kv_failure(minute: int = 20) -> str:
    return (
        "\n".join(
            [
                f"[{stamp(0, minute)}] server_args=ServerArgs(model_path='org/m', tp_size=1, mem_fraction_static=0.85, port=30000)",
                f"[{stamp(2, minute)}] Init torch distributed begin.",
                f"[{stamp(3, minute)}] Load weight begin. avail mem=47.00 GB",
                f"[{stamp(20, minute)}] Load weight end. type=M, dtype=torch.bfloat16, avail mem=5.00 GB, mem usage=42.00 GB.",
                f"[{stamp(21, minute)}] Scheduler hit an exception: Traceback (most recent call last):",
                '  File "/sglang/srt/managers/scheduler.py", line 10, in run_scheduler_process',
                "    scheduler = Scheduler()",
                '  File "/sglang/srt/model_executor/model_runner.py", line 20, in init_memory_pool',
                "    raise RuntimeError(...)",
                "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.85",
                "",
                f"[{stamp(21, minute)}] Received sigquit from a child process. It usually means the child failed.",
            ]
        )
        + "\n"
    )


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def logphase_cli(
    *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``logphase ARGS`` run in this process: the same main() the command runs, without paying an
    interpreter's and the imports' start-up for each call (tests that need a real process, its
    signals, pipes or exit, start one). stdin, stdout and stderr are byte streams; ``env`` is
    added to the environment for the call."""
    from logphase.faces.cli import main

    saved = sys.stdin, sys.stdout, sys.stderr
    out, err = io.BytesIO(), io.BytesIO()
    streams = (io.TextIOWrapper(io.BytesIO(stdin or b"")), io.TextIOWrapper(out), io.TextIOWrapper(err))
    sys.stdin, sys.stdout, sys.stderr = streams
    try:
        with _environment(env):
            code = main(list(args))
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        for stream in streams:
            stream.flush()
            stream.detach()  # or closing the wrapper would close the BytesIO
    return subprocess.CompletedProcess(["logphase", *args], code, out.getvalue(), err.getvalue())


def script_module(name: str) -> ModuleType:
    """One of the repo's scripts (scripts/NAME.py) imported as a module, for tests of its measures."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module
