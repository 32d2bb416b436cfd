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
import os
import stat
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from logphase.faces.exit_codes import EXIT_INTERRUPTED, EXIT_TIMEOUT, OUTCOME_EXIT
from logphase.faces.inputs import InputError, check_since, parse_expect
from logphase.faces.options import add_color, add_expect_since, add_merge, add_server
from logphase.vocabulary.names import shown_name
from logphase.vocabulary.phases import Phase

if TYPE_CHECKING:
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
        "or eof (read to the end of the input; the default with --metrics-port, so that the metrics outlive the "
        "start-up)",
    )
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="give up after this long (exit 124)")
    p.add_argument(
        "--stall-after",
        type=float,
        metavar="SECONDS",
        help="report silence after this long (default: per phase, e.g. 600 s in CUDA graph capture)",
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
        "phase durations, seconds since the last line, the failure's cause, free GPU memory per rank "
        "(needs pip install 'logphase[metrics]')",
    )
    p.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        metavar="ADDR",
        help="the address to serve metrics on (default: 127.0.0.1, this machine only; in a sidecar container, "
        "--metrics-host 0.0.0.0 lets Prometheus scrape the pod)",
    )
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

        return follow_merged(args, options)
    current: list[Follower] = []
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
    return _print_records(args, records, current)


def follow_options(args: argparse.Namespace) -> FollowOptions:
    """The options of a follow, checked (a bad one is an InputError)."""
    from logphase.faces.live.follow import FollowOptions

    check_since(args.since)
    if args.timeout is not None and args.timeout <= 0:
        raise InputError("--timeout must be a positive number of seconds")
    if args.stall_after is not None and args.stall_after <= 0:
        raise InputError("--stall-after must be a positive number of seconds")
    return FollowOptions(
        # a metrics sidecar keeps serving after the verdict (and through later runs)
        until=args.until or ("eof" if args.metrics_port is not None else "outcome"),
        timeout=args.timeout,
        stall_after=args.stall_after,
        expect=parse_expect(args.expect),
        since=args.since,
        exit_at_verdict=args.exit_at_verdict,
        server=args.server,
    )


def _serve_metrics(args: argparse.Namespace, current: list[Follower]) -> None:
    """Prometheus metrics of the follower in use (the latest: a replaced file gets a new one)."""
    from logphase.faces.live.metrics import serve

    def latest() -> tuple[Report | None, float | None]:
        return (current[-1].report, current[-1].last_input) if current else (None, None)

    port = serve(args.metrics_port, latest, args.metrics_host)
    sys.stderr.write(f"logphase: serving metrics on port {port} (/metrics)\n")
    sys.stderr.flush()


def _print_records(args: argparse.Namespace, records: Iterable[FollowRecord], current: list[Follower]) -> int:
    """Prints each record as it comes; returns the exit code (the summary's, or the timeout's)."""
    from logphase.faces.live.follow_records import SummaryRecord, TimeoutRecord

    write = _record_writer(args, current)
    code = OUTCOME_EXIT["starting"]
    try:
        for record in records:
            write(record)
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
