"""Draw the startup as a picture: one self-contained HTML page (inline SVG and CSS, nothing
fetched), a Gantt chart of the phases per rank with the failure, its consequences and free GPU
memory at each phase boundary; optionally the drawing alone as an SVG file."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from logphase.faces.exit_codes import OUTCOME_EXIT
from logphase.faces.inputs import InputError, check_since, feed_all, open_input, parse_expect, read_head
from logphase.faces.options import add_expect_since, add_merge, add_server
from logphase.vocabulary.names import shown_name

if TYPE_CHECKING:
    from logphase.reporting.merge import MergedReport

NAME = "report"
HELP = "draw the startup timeline as a self-contained HTML page (and SVG)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "files",
        nargs="+",
        metavar="LOG",
        help="log file, a saved `parse --json` report, or - for standard input; several only with --merge",
    )
    p.add_argument(
        "-o", "--output", default="startup.html", metavar="HTML", help="the page to write (default startup.html; - for stdout)"
    )
    p.add_argument("--svg", metavar="SVG", help="also write the drawing alone as an SVG file")
    p.add_argument("--run", type=int, metavar="N", help="draw run N of the file (1 is the first; default: the last)")
    add_merge(p)
    add_expect_since(p)
    add_server(p)


def run(args: argparse.Namespace) -> int:
    from logphase.engine.engine import Engine
    from logphase.faces.timeline import render_html, render_svg
    from logphase.faces.wording import headline
    from logphase.reading.clock import input_year_hint

    expect = parse_expect(args.expect)
    check_since(args.since)
    if args.run is not None and args.run < 1:
        raise InputError(f"--run {args.run}: runs are numbered from 1")
    if args.merge:
        return _merged(args, expect)
    if len(args.files) > 1:
        raise InputError("report draws one log (several are the nodes of one deployment: add --merge)")
    handle, source = open_input(args.files[0])
    saved, head = read_head(handle, source)
    if saved is not None:
        from logphase.reporting.merge import MergedReport

        if args.run is not None or args.since or expect:
            raise InputError(f"{source}: a saved report: --run, --since and --expect apply to logs")
        if isinstance(saved, MergedReport):  # a saved `parse --merge --json`: drawn as --merge draws it
            return _draw_merged(saved, args)
        report = saved
    else:
        year = input_year_hint(args.files[0])
        engine = Engine(source=source, since=args.since, collect_events=False, server=args.server, year=year)
        feed_all(engine, handle, source, head=head)
        try:
            report = engine.report(expect, run=args.run)
        except ValueError as exc:
            raise InputError(f"--run {args.run}: {exc}") from None
    page = render_html(report)
    _write(args.output, page)
    if args.svg:
        _write(args.svg, render_svg(report))
    written = " and ".join(shown_name(x) if x != "-" else "stdout" for x in (args.output, args.svg) if x)
    print(f"{source}: {headline(report)}; wrote {written}", file=sys.stderr if "-" in (args.output, args.svg) else sys.stdout)
    return OUTCOME_EXIT[report.outcome]


def _merged(args: argparse.Namespace, expect: dict[str, str]) -> int:
    """One page per server of the deployment: a multi-node server's ranks in a row group per node."""
    from logphase.faces.batch import default_jobs
    from logphase.faces.merged import read_merged

    if args.run is not None:
        raise InputError("--run picks a run of one log; --merge reads the last run of each")
    return _draw_merged(read_merged(args.files, args.since, expect, default_jobs(), args.server), args)


def _draw_merged(merged: MergedReport, args: argparse.Namespace) -> int:
    from logphase.faces.timeline import render_html, render_svg
    from logphase.faces.wording import headline

    several = len(merged.servers) > 1
    for server in merged.servers:
        page, svg = args.output, args.svg
        if several:
            # prefill, decode, router: a page each, named after the role
            page = _suffixed(page, server.role)
            svg = _suffixed(svg, server.role) if svg else None
        _write(page, render_html(server.report, server.rank_nodes))
        if svg:
            _write(svg, render_svg(server.report, server.rank_nodes))
        written = " and ".join(shown_name(x) if x != "-" else "stdout" for x in (page, svg) if x)
        out = sys.stderr if "-" in (page, svg) else sys.stdout
        print(f"{server.role} ({', '.join(server.nodes)}): {headline(server.report)}; wrote {written}", file=out)
    return OUTCOME_EXIT[merged.outcome]


def _suffixed(path: str, role: str) -> str:
    if path == "-":
        return path
    stem, dot, ext = path.rpartition(".")
    return f"{stem}-{role}.{ext}" if dot and stem else f"{path}-{role}"


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise InputError(f"{shown_name(path)}: cannot write: {exc.strerror or exc}") from None
