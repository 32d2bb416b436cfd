"""Follow a log as it is written (a FILE by name like tail -F, or standard input) and print one
line per phase change, failure, warning and stall; stop when the outcome is known.

Replaces `until grep -q "fired up" log; do sleep 15; done` loops:
  python -m sglang.launch_server ... > server.log 2>&1 &
  logphase follow server.log --until ready --timeout 900 && run_benchmark

On a pipe (`... 2>&1 | tee server.log | logphase follow`) the verdict is printed at once and the
pipe is then read to its end, so that the server and tee keep writing (--exit-at-verdict to leave).

Exit code: 0 ready, 1 failed, 3 still starting, 124 --timeout, 141 output closed (| head).
A file by name is left at the verdict point (--until; default: ready or failed) with the verdict on
what was read then. A pipe (stdin, or a named pipe given by name) is read to its end, and the exit
code is the verdict on all of it, as `parse` says on the same bytes: ready and then failed while
serving is 1. With --until ready or a phase, reaching it before any failure is 0 (a later failure
while serving included). The same bytes give the same records and exit code however they are cut
into reads and paced.
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from logphase.faces.exit_codes import EXIT_INTERRUPTED, EXIT_TIMEOUT, OUTCOME_EXIT
from logphase.faces.inputs import InputError, check_since, parse_expect
from logphase.faces.options import add_color, add_expect_since, add_merge, add_otlp, add_server
from logphase.vocabulary.names import shown_name
from logphase.vocabulary.phases import Phase

if TYPE_CHECKING:
    from logphase.faces.fleet.otlp import FollowTraces
    from logphase.faces.fleet.sidecar import StateKeeper
    from logphase.faces.live.follow import Follower, FollowOptions
    from logphase.faces.live.follow_records import FollowRecord
    from logphase.reporting.report import Report

NAME = "follow"
HELP = "follow a log live; stop when ready, failed or at --until"
# the description's example is a shell session: shown with its line breaks, not refilled
HELP_FORMATTER = argparse.RawDescriptionHelpFormatter

UNTIL_CHOICES = ("outcome", "ready", "failed", "eof", *(p.value for p in Phase if p is not Phase.READY))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "files",
        metavar="FILE",
        nargs="*",
        help="log file to follow by name, or - for stdin (default); several only with --merge",
    )
    p.add_argument("--json", action="store_true", help="print JSON Lines records, each with a 'kind' (see `logphase schema`)")
    p.add_argument(
        "--until",
        choices=UNTIL_CHOICES,
        default=None,
        metavar="POINT",
        help="the verdict point: ready, failed, a phase name, outcome (ready or failed; default) "
        "or eof (read to the end of the input; the default with --metrics-port or --state-file, so that the "
        "metrics and probes outlive the start-up)",
    )
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="give up after this long (exit 124)")
    p.add_argument(
        "--stall-after",
        action="append",
        default=[],
        metavar="[PHASE=]SECONDS",
        help="report silence after this long (default: per phase, e.g. 900 s in weight_loading, 600 s in CUDA graph "
        "capture); PHASE=SECONDS sets one phase's budget (repeatable): the start-up probe fails at a stall too",
    )
    p.add_argument(
        "--exit-at-verdict",
        action="store_true",
        help="on a pipe, exit as soon as the verdict is in instead of reading the pipe to its end; the writer "
        "(tee, the server) then gets SIGPIPE, so use it only when nothing else reads from it. A file by name "
        "is left at the verdict (unless --until eof, the default with --metrics-port)",
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="while following, serve Prometheus metrics on this port (0: a free one, said on stderr): phase, outcome, "
        "phase durations, seconds since the last line, the failure's cause, free GPU memory per rank; and the "
        "probes /startup, /ready and /live (200 or 503 with the cause) (needs pip install 'logphase[metrics]')",
    )
    p.add_argument(
        "--state-file",
        metavar="PATH",
        help="keep the state the probes judge by in this small file (rewritten on every change and every "
        "5 s), for `logphase probe PATH` as a Kubernetes exec probe; implies --until eof",
    )
    p.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        metavar="ADDR",
        help="the address to serve metrics on (default: 127.0.0.1, this machine only; in a sidecar container, "
        "--metrics-host 0.0.0.0 lets Prometheus scrape the pod)",
    )
    add_otlp(p)
    add_merge(p)
    add_expect_since(p)
    add_color(p)
    add_server(p)


def run(args: argparse.Namespace) -> int:
    options = follow_options(args)
    if len(args.files) > 1 and not args.merge:
        raise InputError("follow takes one log (several are the nodes of one deployment: add --merge)")
    args.file = args.files[0] if args.files else "-"
    for name in args.files:
        refuse_what_is_no_log(name)
    if args.merge:
        from logphase.faces.commands.follow_merged import follow_merged

        if args.state_file is not None or args.otlp is not None:
            raise InputError("--state-file and --otlp follow one log: each node's sidecar follows its own")

        return follow_merged(args, options)
    current: list[Follower] = []
    observers: list[Callable[[FollowRecord], None]] = []
    if args.state_file is not None:
        keeper = _keep_state(args, current)
        keeper.start()  # written within a second of the follower's start, then at every record
        observers.append(keeper.poke)
    traces = _traces(args, current)
    if traces is not None:
        observers.append(traces.observe)
    if args.metrics_port is not None:
        _serve_metrics(args, current)
    if args.file != "-":
        from logphase.faces.live.follow import follow_file

        if os.path.isdir(args.file):
            raise InputError(f"{shown_name(args.file)}: is a directory, give a log file")
        records = follow_file(args.file, options, on_follower=current.append)
    else:
        from logphase.faces.live.follow import follow_stream

        records = follow_stream(sys.stdin.buffer, options, on_follower=current.append, check_head=refuse_stream_head)
    try:
        return _print_records(args, records, current, observers)
    finally:
        if args.state_file is not None:
            keeper.stop()
            keeper.keep()  # the last state (a probe then sees it age: the sidecar has stopped)
        if traces is not None:
            traces.close()


def _traces(args: argparse.Namespace, current: list[Follower]) -> FollowTraces | None:
    """--otlp: each run followed sent as one trace (faces/fleet/otlp.py)."""
    if args.otlp is None:
        return None
    from logphase.faces.fleet.otlp import FollowTraces, check_url

    def say(message: str) -> None:
        sys.stderr.write(f"logphase: {message}\n")
        sys.stderr.flush()

    path = args.file if args.file != "-" else None
    return FollowTraces(check_url(args.otlp), lambda: current[-1] if current else None, path, say)


def follow_options(args: argparse.Namespace) -> FollowOptions:
    """The options of a follow, checked (a bad one is an InputError)."""
    from logphase.faces.live.follow import FollowOptions

    check_since(args.since)
    if args.timeout is not None and args.timeout <= 0:
        raise InputError("--timeout must be a positive number of seconds")
    stall_after, per_phase = stall_budgets(args.stall_after)
    sidecar = args.metrics_port is not None or args.state_file is not None
    return FollowOptions(
        # a sidecar (metrics, probes) keeps serving after the verdict (and through later runs)
        until=args.until or ("eof" if sidecar else "outcome"),
        timeout=args.timeout,
        stall_after=stall_after,
        stall_after_phase=per_phase,
        expect=parse_expect(args.expect),
        since=args.since,
        exit_at_verdict=args.exit_at_verdict,
        server=args.server,
    )


def stall_budgets(values: list[str]) -> tuple[float | None, dict[Phase | None, float]]:
    """``--stall-after`` values: ``S`` for every phase (the last one given), ``PHASE=S`` for one."""
    every: float | None = None
    per_phase: dict[Phase | None, float] = {}
    for value in values:
        name, _, seconds = value.rpartition("=")
        try:
            budget = float(seconds)
        except ValueError:
            budget = math.nan
        if not budget > 0 or math.isinf(budget):
            raise InputError(f"--stall-after {value}: a positive number of seconds, or PHASE=SECONDS")
        if not name:
            every = budget
            continue
        if name not in {p.value for p in Phase if p is not Phase.READY}:
            starting = ", ".join(p.value for p in Phase if p is not Phase.READY)
            raise InputError(f"--stall-after {value}: unknown phase {name!r} (phases: {starting})")
        per_phase[Phase(name)] = budget
    return every, per_phase


def _serve_metrics(args: argparse.Namespace, current: list[Follower]) -> None:
    """Prometheus metrics of the follower in use (the latest: a replaced file gets a new one), and
    the probes /startup, /ready and /live on its state."""
    from logphase.faces.fleet.sidecar import live_state
    from logphase.faces.live.metrics import serve

    def latest() -> tuple[Report | None, float | None]:
        return (current[-1].report, current[-1].last_input) if current else (None, None)

    def follower() -> Follower | None:
        return current[-1] if current else None

    port = serve(args.metrics_port, latest, args.metrics_host, probe_state=live_state(follower))
    sys.stderr.write(f"logphase: serving metrics on port {port} (/metrics; probes /startup, /ready, /live)\n")
    sys.stderr.flush()


def _keep_state(args: argparse.Namespace, current: list[Follower]) -> StateKeeper:
    """The state file of --state-file, kept for `logphase probe` from a thread of its own."""
    from logphase.faces.fleet.sidecar import StateKeeper

    keeper = StateKeeper(args.state_file, lambda: current[-1] if current else None)
    keeper.check_writable()
    return keeper


def _print_records(
    args: argparse.Namespace,
    records: Iterable[FollowRecord],
    current: list[Follower],
    observers: Sequence[Callable[[FollowRecord], None]] = (),
) -> int:
    """Prints each record as it comes, then hands it to each observer (the state file, the trace
    exporter); returns the exit code (the summary's, or the timeout's)."""
    from logphase.faces.live.follow_records import SummaryRecord, TimeoutRecord

    write = _record_writer(args, current)
    code = OUTCOME_EXIT["starting"]
    try:
        for record in records:
            write(record)
            for observe in observers:
                observe(record)
            if isinstance(record, TimeoutRecord):
                code = EXIT_TIMEOUT
            elif isinstance(record, SummaryRecord):
                code = record.exit_code
        if args.file == "-" and current and current[-1].engine.bytes_seen == 0:
            sys.stderr.write("logphase: <stdin>: empty: nothing was written to it (exit 3: still starting)\n")
    except KeyboardInterrupt:
        # the summary of what was read so far (the input ends here: a partial last line is read),
        # then the conventional exit code
        if current:
            for record in current[-1].end_of_input():
                write(record)
            write(current[-1].summary(EXIT_INTERRUPTED))  # its exit code is the one returned
        sys.stderr.write("logphase: interrupted\n")
        sys.stdout.buffer.flush()
        return EXIT_INTERRUPTED
    return code


def _record_writer(args: argparse.Namespace, current: list[Follower]) -> Callable[[FollowRecord], None]:
    """How a record is printed: a JSON line, or a line of text (the summary as parse's report)."""
    import orjson

    from logphase.faces.live.follow_records import SummaryRecord, TimeoutRecord, human_line
    from logphase.faces.text import render_text, use_color

    out = sys.stdout.buffer
    color = use_color(sys.stdout, args.color)

    def write(record: FollowRecord) -> None:
        if args.json:
            out.write(orjson.dumps(record.model_dump(mode="json")) + b"\n")
        elif isinstance(record, SummaryRecord | TimeoutRecord):
            out.write(b"\n" + render_text(record.report, color).encode())
            if isinstance(record, TimeoutRecord):
                out.write(f"logphase: gave up after {args.timeout:g} s\n".encode())
            elif current and (why := current[-1].exit_reason(record.exit_code)):
                out.write(f"logphase: {why}\n".encode())
        else:
            out.write(human_line(record).encode())
        out.flush()

    return write


def refuse_what_is_no_log(name: str) -> None:
    """A file that is there and is no log text (binary, an image, an executable) or a compressed
    one (a finished, rotated log: parse reads it) is refused in one line, as parse refuses it. An
    empty or missing file is waited for: the server has not written yet."""
    from logphase.reading.sniff import NotALog, compression_of, refuse_binary

    try:
        if not stat.S_ISREG(os.stat(name).st_mode):
            return  # a FIFO (opening it would wait for a writer, reading would take its bytes) or a device
        with open(name, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return  # missing, a directory, unreadable: follow's own checks say so
    kind = compression_of(head)
    if kind is not None:
        shown = shown_name(name)
        raise InputError(f"{shown}: {kind}-compressed, a finished log: read it with logphase parse {shown}")
    try:
        refuse_binary(head, shown_name(name))
    except NotALog as exc:
        raise InputError(str(exc)) from None


def refuse_stream_head(head: bytes, whole: bool) -> None:
    """A pipe whose first bytes are compressed or no log text is refused in one line, as a file is
    (``whole``: the pipe held no more; otherwise its last bytes may cut a character in two)."""
    from logphase.reading.sniff import NotALog, compression_of, refuse_binary

    kind = compression_of(head)
    if kind is not None:
        raise InputError(
            f"<stdin>: {kind}-compressed: decompress it into follow (zcat, bzcat, xzcat), or read it with logphase parse -"
        )
    try:
        refuse_binary(head if whole else head[:-3], "<stdin>")
    except NotALog as exc:
        raise InputError(str(exc)) from None
