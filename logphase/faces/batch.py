"""Several independent logs at once: each read on its own (in parallel processes), results in the
order given, and one verdict for all of them, the worst."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING, NamedTuple

from logphase.faces.exit_codes import EXIT_FAILED, EXIT_READY, EXIT_STARTING, EXIT_USAGE, OUTCOME_EXIT
from logphase.faces.inputs import InputError, read_input
from logphase.vocabulary.names import shown_name

if TYPE_CHECKING:
    from logphase.reporting.report import Report
    from logphase.vocabulary.servers import Server

# the worst verdict decides the exit code: a failed start-up matters most, then one still
# starting, then a file that could not be read at all, then ready
_SEVERITY = {EXIT_FAILED: 3, EXIT_STARTING: 2, EXIT_USAGE: 1, EXIT_READY: 0}
# files handed to a worker at once: fewer round trips, still balanced over a few hundred files
_CHUNK = 4


class FileOutcome(NamedTuple):
    """One log's result: its report, or the one-line reason it has none."""

    source: str
    report: Report | None
    error: str | None

    @property
    def exit_code(self) -> int:
        return OUTCOME_EXIT[self.report.outcome] if self.report is not None else EXIT_USAGE


def read_one(name: str, since: str | None, expect: dict[str, str], server: Server | None = None) -> FileOutcome:
    """The report on one log (or a saved report); an unreadable file is an error, not an exception.
    ``server``: --server, the server every run of the log is."""
    try:
        return FileOutcome(shown_name(name), read_input(name, since, expect, server), None)
    except InputError as exc:
        return FileOutcome(shown_name(name), None, str(exc))


def default_jobs() -> int:
    return os.cpu_count() or 1


def read_many(
    names: Sequence[str], since: str | None, expect: dict[str, str], jobs: int, server: Server | None = None
) -> Iterator[FileOutcome]:
    """Each log's outcome, in the order given; ``jobs`` processes read them side by side."""
    if "-" in names and len(names) > 1:
        raise InputError("- (standard input) cannot be read along with other files")
    workers = max(1, min(jobs, len(names)))
    if workers == 1:
        for name in names:
            yield read_one(name, since, expect, server)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(read_one, names, [since] * len(names), [expect] * len(names), [server] * len(names), chunksize=_CHUNK)


def worst_exit(codes: Sequence[int]) -> int:
    """The exit code of a batch: its worst verdict (failed > starting > unreadable > ready)."""
    return max(codes, key=lambda code: _SEVERITY.get(code, 1), default=EXIT_READY)


def summary(outcomes: Sequence[FileOutcome]) -> str:
    """'200 logs: 180 ready, 15 failed, 4 starting, 1 unreadable'."""
    from logphase.faces.wording import plural

    counts: dict[str, int] = {}
    for o in outcomes:
        key = o.report.outcome if o.report is not None else "unreadable"
        counts[key] = counts.get(key, 0) + 1
    parts = [f"{counts[k]} {k}" for k in ("ready", "failed", "starting", "unreadable") if counts.get(k)]
    return f"{plural(len(outcomes), 'log')}: {', '.join(parts)}"


def run_batch(
    names: Sequence[str],
    since: str | None,
    expect: dict[str, str],
    jobs: int,
    emit: Callable[[FileOutcome], None],
    report_error: Callable[[str], None],
    server: Server | None = None,
) -> list[FileOutcome]:
    """Read every log, hand each outcome to ``emit`` as soon as the ones before it are out (errors
    to ``report_error``), and return them all."""
    outcomes: list[FileOutcome] = []
    for outcome in read_many(names, since, expect, jobs, server):
        outcomes.append(outcome)
        if outcome.error is not None:
            report_error(outcome.error)
        else:
            emit(outcome)
    return outcomes
