"""A deterministic reference SGLang log for benchmarks: TP8 startup, then a long serving tail.

    python bench/generate.py --size 100MB [--variant ready|failed] [--seed 1] [-o bench/out/ref-100MB-ready.log]

Modelled on ../shared/spec/log-formats.md (v0.5.11 shapes): a launch_server UserWarning, the
``server_args=ServerArgs(...)`` dump, eight scheduler ranks with Gloo lines and ``NCCL_DEBUG=INFO``
chatter, two ranks' lines glued without a newline, ``\\r``-redrawn tqdm bars (weight shards, CUDA
graph capture), a FutureWarning with its source line, uvicorn startup and warmup, "fired up",
then ``Decode batch`` / ``Prefill batch`` lines from TP0 and uvicorn access lines with increasing
timestamps until the file reaches the size asked for. The ``failed`` variant ends with a
``Scheduler hit an exception`` CUDA OOM traceback and the main process's SIGQUIT line.

Sizes use decimal units (1 MB = 10**6 bytes); the same arguments always give the same bytes.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

TP = 8
HOST = "gpu-node-07"
START = datetime(2026, 5, 9, 9, 20, 26)
UNITS = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "B": 1}


def parse_size(text: str) -> int:
    text = text.strip().upper()
    for unit in ("KB", "MB", "GB", "B"):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * UNITS[unit])
    return int(text)


class Clock:
    """Seconds since START, printed the way SGLang's logger does; one string per second, cached."""

    def __init__(self) -> None:
        self.t = 0
        self._cache_t = -1
        self._cache = ""

    def stamp(self) -> str:
        if self._cache_t != self.t:
            self._cache_t = self.t
            self._cache = (START + timedelta(seconds=self.t)).strftime("%Y-%m-%d %H:%M:%S")
        return self._cache

    def tick(self, seconds: int = 1) -> None:
        self.t += seconds


def server_args_line(ts: str) -> str:
    args = {
        "model_path": "'deepseek-ai/DeepSeek-V3'",
        "tokenizer_path": "'deepseek-ai/DeepSeek-V3'",
        "tokenizer_mode": "'auto'",
        "skip_tokenizer_init": "False",
        "load_format": "'auto'",
        "trust_remote_code": "True",
        "dtype": "'auto'",
        "kv_cache_dtype": "'auto'",
        "quantization": "None",
        "context_length": "None",
        "device": "'cuda'",
        "served_model_name": "'deepseek-ai/DeepSeek-V3'",
        "chat_template": "None",
        "is_embedding": "False",
        "revision": "None",
        "host": "'0.0.0.0'",
        "port": "30000",
        "mem_fraction_static": "0.85",
        "max_running_requests": "None",
        "max_total_tokens": "None",
        "chunked_prefill_size": "8192",
        "max_prefill_tokens": "16384",
        "schedule_policy": "'fcfs'",
        "schedule_conservativeness": "1.0",
        "cpu_offload_gb": "0",
        "tp_size": str(TP),
        "pp_size": "1",
        "dp_size": "1",
        "ep_size": "1",
        "stream_interval": "1",
        "random_seed": "42",
        "watchdog_timeout": "300",
        "dist_timeout": "None",
        "download_dir": "None",
        "base_gpu_id": "0",
        "log_level": "'info'",
        "log_level_http": "None",
        "log_requests": "False",
        "show_time_cost": "False",
        "enable_metrics": "True",
        "decode_log_interval": "40",
        "api_key": "None",
        "file_storage_path": "'sglang_storage'",
        "enable_cache_report": "False",
        "attention_backend": "'flashinfer'",
        "sampling_backend": "'flashinfer'",
        "grammar_backend": "'xgrammar'",
        "disable_radix_cache": "False",
        "disable_cuda_graph": "False",
        "disable_cuda_graph_padding": "False",
        "enable_nccl_nvls": "False",
        "disable_custom_all_reduce": "False",
        "enable_dp_attention": "False",
        "enable_torch_compile": "False",
        "torch_compile_max_bs": "32",
        "cuda_graph_max_bs": "160",
        "cuda_graph_bs": "None",
        "triton_attention_reduce_in_fp32": "False",
        "num_continuous_decode_steps": "1",
        "delete_ckpt_after_loading": "False",
        "enable_memory_saver": "False",
        "allow_auto_truncate": "False",
        "enable_custom_logit_processor": "False",
        "tool_call_parser": "None",
        "enable_hierarchical_cache": "False",
        "warmups": "None",
    }
    body = ", ".join(f"{k}={v}" for k, v in args.items())
    return f"[{ts}] server_args=ServerArgs({body})\n"


def nccl_chatter(rng: random.Random, pids: list[int], tids: list[int]) -> list[str]:
    """What NCCL_DEBUG=INFO prints while the communicators of eight ranks come up (stdout, no ts)."""
    out: list[str] = []
    bus = [
        "0000:18:00.0",
        "0000:2a:00.0",
        "0000:3a:00.0",
        "0000:5d:00.0",
        "0000:9a:00.0",
        "0000:ab:00.0",
        "0000:ba:00.0",
        "0000:db:00.0",
    ]
    for dev in range(TP):
        origin = f"{HOST}:{pids[dev]}:{tids[dev]} [{dev}]"
        out.append(f"{origin} NCCL INFO Bootstrap : Using eth0:10.12.4.7<0>\n")
        out.append(f"{origin} NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)\n")
        out.append(f"{origin} NCCL INFO cudaDriverVersion 12040\n")
        if dev == 0:
            out.append(f"{origin} NCCL INFO NCCL version 2.21.5+cuda12.4\n")
        out.append(
            f"{origin} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB eth0:10.12.4.7<0>\n"
        )
        out.append(f"{origin} NCCL INFO Using non-device net plugin version 0\n")
        out.append(f"{origin} NCCL INFO Using network IB\n")
        out.append(
            f"{origin} NCCL INFO comm 0x{rng.getrandbits(40):x} rank {dev} nranks {TP} cudaDev {dev} nvmlDev {dev} busId {bus[dev]} commId 0x{rng.getrandbits(60):x} - Init START\n"
        )
        out.append(f"{origin} NCCL INFO Setting affinity for GPU {dev} to ffffff,ff000000,00ffffff\n")
        out.append(f"{origin} NCCL INFO NVLS multicast support is available on dev {dev}\n")
        out.append(
            f"{origin} NCCL INFO comm 0x{rng.getrandbits(40):x} rank {dev} nRanks {TP} nNodes 1 localRanks {TP} localRank {dev} MNNVL 0\n"
        )
        out.append(f"{origin} NCCL INFO NVLS Head  0:  0  1  2  3  4  5  6  7\n")
        out.append(
            f"{origin} NCCL INFO Trees [0] {(dev + 1) % TP}/-1/-1->{dev}->{(dev - 1) % TP} [1] {(dev + 1) % TP}/-1/-1->{dev}->{(dev - 1) % TP}\n"
        )
        out.append(f"{origin} NCCL INFO P2P Chunksize set to 524288\n")
        for channel in range(24):
            peer = (dev + 1) % TP
            out.append(f"{origin} NCCL INFO Channel {channel:02d}/0 : {dev}[{dev}] -> {peer}[{peer}] via P2P/CUMEM/read\n")
        out.append(f"{origin} NCCL INFO Connected all rings\n")
        for channel in range(24):
            peer = (dev - 1) % TP
            out.append(f"{origin} NCCL INFO Channel {channel:02d}/0 : {dev}[{dev}] -> {peer}[{peer}] via P2P/CUMEM/read\n")
        out.append(f"{origin} NCCL INFO Connected all trees\n")
        out.append(
            f"{origin} NCCL INFO NVLS comm 0x{rng.getrandbits(40):x} headRank {dev} nHeads {TP} buffSize 1048576 memSize 2097152 nvlsPerRankSize 201326592 nvlsTotalSize 1610612736\n"
        )
        out.append(f"{origin} NCCL INFO Connected NVLS\n")
        out.append(f"{origin} NCCL INFO threadThresholds 8/8/64 | 64/8/64 | 512 | 512\n")
        out.append(
            f"{origin} NCCL INFO 24 coll channels, 24 collnet channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer\n"
        )
        out.append(
            f"{origin} NCCL INFO TUNER/Plugin: Plugin load returned 11 : libnccl-tuner.so: cannot open shared object file: No such file or directory.\n"
        )
        out.append(
            f"{origin} NCCL INFO ncclCommInitRank comm 0x{rng.getrandbits(40):x} rank {dev} nranks {TP} cudaDev {dev} nvmlDev {dev} busId {bus[dev]} commId 0x{rng.getrandbits(60):x} - Init COMPLETE\n"
        )
    # stdout is block-buffered: the ranks' output arrives in chunks, roughly interleaved
    chunks = [out[i : i + 17] for i in range(0, len(out), 17)]
    rng.shuffle(chunks)
    return [line for chunk in chunks for line in chunk]


def startup(rng: random.Random, clock: Clock) -> list[str]:
    out: list[str] = []
    pids = [rng.randrange(2000, 60000) for _ in range(TP)]
    tids = [pid + rng.randrange(100, 900) for pid in pids]
    main_pid = rng.randrange(1000, 2000)

    def ts() -> str:
        return clock.stamp()

    def rank_line(r: int, msg: str) -> str:
        return f"[{ts()} TP{r}] {msg}\n"

    out.append(
        "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py:51: UserWarning: 'python -m sglang.launch_server' "
        "is still supported, but 'sglang serve' is the recommended entrypoint.\n"
    )
    out.append("  Example: sglang serve --model-path <model> [options]\n")
    out.append("  warnings.warn(\n")
    out.append(f"[{ts()}] Attention backend not specified. Use flashinfer backend by default.\n")
    out.append(server_args_line(ts()))
    clock.tick(2)
    out.append(f"[{ts()}] Using default HuggingFace chat template with detected content format: string\n")
    clock.tick(3)
    for r in range(TP):
        out.append(rank_line(r, "Init torch distributed begin."))
    for r in range(TP):
        for _ in range(3):
            out.append(
                f"[Gloo] Rank {r} is connected to {TP - 1} peer ranks. Expected number of connected peer ranks is : {TP - 1}\n"
            )
    out.append(rank_line(0, "sglang is using nccl==2.21.5"))
    out.extend(nccl_chatter(rng, pids, tids))
    clock.tick(4)
    for r in range(TP):
        out.append(rank_line(r, f"Init torch distributed ends. mem usage={0.8 + r * 0.01:.2f} GB"))
    for r in range(TP):
        out.append(rank_line(r, f"Load weight begin. avail mem={78.4 - r * 0.03:.2f} GB"))
    out.append(rank_line(0, "Using model weights format ['*.safetensors']"))
    # tqdm weight bar of global rank 0: one physical line of \r-separated redraws (0.5.11)
    shards = 163
    bar = []
    for done in range(0, shards + 1, 3):
        pct = done * 100 // shards
        bar.append(
            f"\rMulti-thread loading shards: {pct:3d}% Completed | {done}/{shards} [00:{done // 3:02d}<00:{(shards - done) // 3:02d},  2.96it/s]"
        )
    clock.tick(55)
    out.append("".join(bar) + "\n")
    # two ranks writing at once: their lines glued without a newline
    load_end = "Load weight end. elapsed=55.31 s, type=DeepseekV3ForCausalLM, quant=fp8, avail mem={:.2f} GB, mem usage=79.98 GB."
    for r in range(0, TP, 2):
        out.append(
            f"[{ts()} TP{r}] {load_end.format(61.2 - r * 0.02)}[{ts()} TP{r + 1}] {load_end.format(61.2 - (r + 1) * 0.02)}\n"
        )
    out.append(
        "<frozen importlib._bootstrap_external>:1184: FutureWarning: The cuda.cudart module is deprecated and will be removed "
        "in a future release, please switch to use the cuda.bindings.runtime module instead.\n"
    )
    out.append("  return f(*args, **kwargs)\n")
    out.append(rank_line(0, "Using KV cache dtype: torch.bfloat16"))
    clock.tick(1)
    for r in range(TP):
        out.append(rank_line(r, "KV Cache is allocated. #tokens: 1009152, KV size: 4.64 GB"))
    for r in range(TP):
        out.append(rank_line(r, f"Memory pool end. avail mem={9.21 - r * 0.02:.2f} GB"))
    for r in range(TP):
        out.append(
            rank_line(r, f"Capture cuda graph begin. This can take up to several minutes. avail mem={9.05 - r * 0.02:.2f} GB")
        )
    sizes = [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160]
    out.append(rank_line(0, f"Capture cuda graph bs {sizes}"))
    redraws = []
    for i, bs in enumerate(reversed(sizes)):
        pct = i * 100 // len(sizes)
        fill = "█" * (pct // 10)
        redraws.append(
            f"\rCapturing batches (bs={bs} avail_mem={8.9 - i * 0.02:.2f} GB): {pct:3d}%|{fill:<10}| {i}/{len(sizes)} [00:{i:02d}<00:{len(sizes) - i:02d},  1.85it/s]"
        )
    clock.tick(24)
    # the bar's last redraw has no newline: rank 1's end line is glued onto it
    out.append("".join(redraws))
    for r in range(1, TP):
        out.append(
            rank_line(
                r,
                f"Capture cuda graph end. Time elapsed: {23.1 + r * 0.1:.2f} s. mem usage=0.93 GB. avail mem={8.05 - r * 0.02:.2f} GB.",
            )
        )
    out.append(
        f"\rCapturing batches (bs=1 avail_mem=8.05 GB): 100%|██████████| {len(sizes)}/{len(sizes)} [00:24<00:00,  1.85it/s]\n"
    )
    out.append(rank_line(0, "Capture cuda graph end. Time elapsed: 24.05 s. mem usage=0.93 GB. avail mem=8.05 GB."))
    out.append(
        rank_line(
            0,
            "max_total_num_tokens=1009152, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, "
            "context_len=163840, available_gpu_mem=8.05 GB",
        )
    )
    clock.tick(1)
    out.append(f"[{ts()}] INFO:     Started server process [{main_pid}]\n")
    out.append(f"[{ts()}] INFO:     Waiting for application startup.\n")
    out.append(f"[{ts()}] INFO:     Application startup complete.\n")
    out.append(f"[{ts()}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n")
    clock.tick(1)
    out.append(f'[{ts()}] INFO:     127.0.0.1:{rng.randrange(30000, 60000)} - "GET /model_info HTTP/1.1" 200 OK\n')
    out.append(
        rank_line(
            0,
            "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, "
            "#pending-token: 0, cuda graph: False, input throughput (token/s): 0.00",
        )
    )
    clock.tick(1)
    out.append(f'[{ts()}] INFO:     127.0.0.1:{rng.randrange(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK\n')
    out.append(f"[{ts()}] The server is fired up and ready to roll!\n")
    return out


PATHS = (
    ("POST", "/generate", 40),
    ("POST", "/v1/chat/completions", 40),
    ("POST", "/v1/completions", 8),
    ("GET", "/health", 6),
    ("GET", "/metrics", 6),
)


def serving_second(rng: random.Random, clock: Clock, state: dict[str, int], out: list[str]) -> None:
    """One second of a busy server: requests finishing, prefill batches, a decode statistics line."""
    ts = clock.stamp()
    rand = rng.random
    randrange = rng.randrange
    requests = randrange(2, 11)
    running = state["running"]
    for _ in range(requests):
        if rand() < 0.45:
            new_seq = randrange(1, 5)
            new_tok = randrange(64, 8192)
            cached = randrange(0, new_tok)
            out.append(
                f"[{ts} TP0] Prefill batch, #new-seq: {new_seq}, #new-token: {new_tok}, #cached-token: {cached}, "
                f"token usage: {running / 400:.2f}, #running-req: {running}, #queue-req: {randrange(0, 4)}, "
                f"#pending-token: 0, cuda graph: False, input throughput (token/s): {rand() * 40000:.2f}\n"
            )
        roll = randrange(100)
        method, path = "POST", "/generate"
        for m, p, weight in PATHS:
            if roll < weight:
                method, path = m, p
                break
            roll -= weight
        out.append(f'[{ts}] INFO:     127.0.0.1:{randrange(32768, 61000)} - "{method} {path} HTTP/1.1" 200 OK\n')
    state["iter"] += 40
    tokens = running * randrange(600, 2400)
    out.append(
        f"[{ts} TP0] Decode batch, #running-req: {running}, #token: {tokens}, token usage: {min(tokens / 1009152, 0.99):.2f}, "
        f"cuda graph: True, gen throughput (token/s): {running * (20 + rand() * 10):.2f}, #queue-req: {randrange(0, 4)}\n"
    )
    running += randrange(-8, 9)
    state["running"] = max(1, min(running, 160))
    clock.tick(1)


def failure_tail(clock: Clock) -> list[str]:
    ts = clock.stamp()
    frames = [
        ("/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", 2712, "run_scheduler_process"),
        ("/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", 1021, "event_loop_overlap"),
        ("/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", 1733, "run_batch"),
        ("/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/tp_worker.py", 239, "forward_batch_generation"),
        ("/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/model_runner.py", 1905, "forward"),
        ("/usr/local/lib/python3.12/dist-packages/sglang/srt/models/deepseek_v2.py", 1797, "forward"),
        ("/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py", 1773, "_wrapped_call_impl"),
    ]
    out = [f"[{ts} TP3] Scheduler hit an exception: Traceback (most recent call last):\n"]
    for path, lineno, func in frames:
        out.append(f'  File "{path}", line {lineno}, in {func}\n')
        out.append("    return self._call_impl(*args, **kwargs)\n")
    out.append(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 3 has a total capacity of 79.19 GiB "
        "of which 1.05 GiB is free. Including non-PyTorch memory, this process has 78.13 GiB memory in use. Of the "
        "allocated memory 71.20 GiB is allocated by PyTorch, with 1.12 GiB allocated in private pools (e.g., CUDA Graphs), "
        "and 2.31 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
    )
    out.append("\n")
    out.append(
        f"[{ts}] SIGQUIT received. signum=<Signals.SIGQUIT: 3>, frame=<frame at 0x7f3a1c0b2a40, file "
        "'/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/http_server.py', line 1402, code launch_server>. "
        "It usually means one child failed.\n"
    )
    return out


def generate(size: int, variant: str, seed: int, path: Path) -> tuple[int, int]:
    """Write the log; returns (bytes, physical lines)."""
    rng = random.Random(seed)
    clock = Clock()
    head = startup(rng, clock)
    tail = failure_tail(Clock()) if variant == "failed" else []
    reserve = sum(len(s.encode()) for s in tail)
    written = 0
    lines = 0
    state = {"running": 24, "iter": 0}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        data = "".join(head)
        written += len(data.encode())
        lines += data.count("\n")
        f.write(data)
        batch: list[str] = []
        while written + reserve < size:
            batch.clear()
            for _ in range(200):
                serving_second(rng, clock, state, batch)
            data = "".join(batch)
            room = size - reserve - written
            if len(data) > room:  # ASCII only in the tail: chars == bytes
                data = data[: data.rfind("\n", 0, room) + 1] if data.rfind("\n", 0, room) >= 0 else ""
                if not data:
                    break
            f.write(data)
            written += len(data)
            lines += data.count("\n")
        if tail:
            data = "".join(failure_tail(clock))
            f.write(data)
            written += len(data.encode())
            lines += data.count("\n")
    return written, lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="10MB", help="target size: 10MB, 100MB, 1GB (decimal units)")
    ap.add_argument("--variant", choices=("ready", "failed"), default="ready")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", help="output path (default bench/out/ref-SIZE-VARIANT.log)")
    args = ap.parse_args(argv)
    size = parse_size(args.size)
    out = Path(args.output) if args.output else Path(__file__).resolve().parent / "out" / f"ref-{args.size}-{args.variant}.log"
    t0 = time.perf_counter()
    written, lines = generate(size, args.variant, args.seed, out)
    print(f"{out}: {written} bytes, {lines} lines, {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
