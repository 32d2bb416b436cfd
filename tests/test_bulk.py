"""The bulk path's one interface (recognising/bulk.py): a run of lines in; served and quiet lines
counted with the times that move the clock, and the lines that need the long way, out, in line
order, as the engine's state decides. (That the report is then the line path's is
tests/test_fast_path.py's question.)"""

from __future__ import annotations

from dataclasses import dataclass, field

from logphase.reading.lines import LineRun, LineSplitter, LogicalLine, RunPatterns
from logphase.recognising.bulk import PLAIN, BulkReader, QuietLines, bulk_patterns
from tests.test_fast_path import ts


@dataclass
class Target:
    """A BulkTarget that records what it was given; its state is set by the test."""

    ready_now: bool = True
    gate: bool = True
    room: int = 0
    stop_after: int | None = None  # the machine takes this many served lines, then stops (a clock jump)
    served_lines: list[tuple[int, list[tuple[bytes, bytes]]]] = field(default_factory=list)
    quiet_lines: list[QuietLines] = field(default_factory=list)
    long: list[LogicalLine] = field(default_factory=list)

    def gate_open(self) -> bool:
        return self.gate

    def ready(self) -> bool:
        return self.ready_now

    def takes_plain_lines(self) -> bool:
        return True

    def quiet_clean(self) -> bool:
        return True

    def sample_room(self) -> int:
        return self.room

    def notes_wanted(self) -> bool:
        return not self.ready_now  # as the engine: start-up notes are looked for until ready

    def served(self, stamps: list[tuple[bytes, bytes]], first_line: int) -> int:
        taken = len(stamps) if self.stop_after is None else min(len(stamps), self.stop_after)
        self.stop_after = None
        self.served_lines.append((first_line, stamps[:taken]))
        return taken

    def quiet(self, lines: QuietLines) -> None:
        self.quiet_lines.append(lines)

    def long_way(self, line: LogicalLine) -> None:
        self.long.append(line)
        self.room = max(0, self.room - 1)  # an unrecognized line read the long way joins the sample


def runs_of(text: str, patterns: RunPatterns = PLAIN) -> list[LineRun]:
    items = LineSplitter().feed_runs(text.encode(), patterns)
    runs = [item for item in items if isinstance(item, LineRun)]
    assert runs, "the text makes a run"
    return runs


def batch(second: int, rank: str = "TP0") -> str:
    return f"[{ts(second)} {rank}] Decode batch, #running-req: 1, #token: 10, token usage: 0.00, #queue-req: 0\n"


def test_served_lines_come_out_counted_with_their_stamps() -> None:
    (run,) = runs_of("".join(batch(s) for s in range(5)))
    target = Target()
    BulkReader().read(run, target)
    assert target.long == [] and target.quiet_lines == []
    [(first_line, stamps)] = target.served_lines
    assert first_line == 1 and [s for s, _ in stamps] == [ts(s).encode() for s in range(5)]
    assert {tags for _, tags in stamps} == {b" TP0"}


def test_where_the_machine_stops_the_line_goes_the_long_way_and_the_rest_is_served() -> None:
    (run,) = runs_of("".join(batch(s) for s in range(6)))
    target = Target(stop_after=2)
    BulkReader().read(run, target)
    assert [line.lineno for line in target.long] == [3]
    assert "Decode batch" in target.long[0].text
    assert [(first, len(stamps)) for first, stamps in target.served_lines] == [(1, 2), (4, 3)]


def test_before_ready_every_line_goes_the_long_way() -> None:
    (run,) = runs_of("".join(batch(s) for s in range(4)))
    target = Target(ready_now=False)
    BulkReader().read(run, target)
    assert target.served_lines == [] and [line.lineno for line in target.long] == [1, 2, 3, 4]


def test_before_since_every_line_goes_the_long_way() -> None:
    (run,) = runs_of("".join(batch(s) for s in range(3)))
    target = Target(gate=False)
    BulkReader().read(run, target)
    assert target.served_lines == [] and len(target.long) == 3


def test_quiet_lines_come_out_counted_with_their_times_and_the_sample_the_long_way() -> None:
    quiet = "".join(f"[{ts(s)}] Key {s} already exists. Skipped.\n" for s in (5, 7, 6, 9))
    (run,) = runs_of(quiet, bulk_patterns())
    assert run.quiet
    target = Target(room=1)
    BulkReader().read(run, target)
    assert [line.lineno for line in target.long] == [1]  # the sample of unrecognized lines
    [counted] = target.quiet_lines
    assert (counted.lines, counted.logical, counted.last_line) == (3, 3, 4)
    assert (counted.first, counted.last, counted.high) == (ts(7).encode(), ts(9).encode(), ts(9).encode())


def test_runs_of_each_kind_that_touch_are_found_apart() -> None:
    """A run's match ends before the "\\n" after its last line, so a run of another kind right
    after it is found too; a line of no run's kind between runs is left to the line path."""
    quiet = f"[{ts(1)}] Key 0123abcd already exists. Skipped.\n"
    loose = "       [2816] 16384 fr=1 mr=0 fll=True mll=False mv=None\n"
    other = "   \n"  # blank: no run's kind
    text = quiet * 3 + batch(2) * 2 + loose * 2 + other + quiet
    items = LineSplitter().feed_runs(text.encode(), bulk_patterns())
    shapes = [
        ("plain" if not item.quiet else "loose" if item.unstamped else "quiet", item.size) if isinstance(item, LineRun) else "line"
        for item in items
    ]
    assert shapes == [("quiet", 3), ("plain", 2), ("loose", 2), "line", ("quiet", 1)]
    # the runs hold exactly their lines, each through its "\n"
    runs = [item for item in items if isinstance(item, LineRun)]
    expected = [quiet * 3, batch(2) * 2, loose * 2, quiet]
    assert [run.data for run in runs] == [b"\n" + lines.encode() for lines in expected]
    assert [run.lineno for run in runs] == [1, 4, 6, 9]


def test_a_redrawn_bar_line_inside_loose_lines_leaves_the_rest_in_runs() -> None:
    """A line the splitter treats specially (a bar redrawn with \\r) inside a run of loose lines goes
    the line-by-line way alone: the loose lines before and after it stay runs."""
    loose = "       [2816] 16384 fr=1 mr=0 fll=True mll=False mv=None\n"
    text = loose * 3 + "\rLoading shards:   0% Completed | 0/2 [00:00<?, ?it/s]weights.0 torch.Size([1152])\n" + loose * 4
    items = LineSplitter().feed_runs(text.encode(), bulk_patterns())
    runs = [(item.lineno, item.size) for item in items if isinstance(item, LineRun)]
    assert runs == [(1, 3), (5, 4)]
    assert sum(item.size if isinstance(item, LineRun) else 1 for item in items) == 9  # 2 logical lines at line 4
