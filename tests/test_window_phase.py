"""Windows on a failure: what a pasted excerpt of a failed log must say (issue 20, point 3).

People paste excerpts that start in the middle of a log, often inside the traceback that stopped the
server, and the paste wraps them: a chat or issue tracker folds long lines at 80 or 120 columns,
drops the rank prefixes, strips the indentation of the frames, doubles the line breaks. For every
fixture of one failed run, a window starts at any line (above all inside the root traceback: at its
header, at a frame, at a frame's source line, at the exception line, after it) and runs to the end
of the log; a variant wraps it as a paste does. The rule each window must keep:

* **outcome**: failed, as long as the window holds a line of the root's record (its header, a frame,
  the exception line; not only the source line a cut record ends with, which alone is any indented
  text) or a line that states or echoes the failure (a consequence);
* **phase, when the window holds evidence of it**: the whole log's failure phase. Evidence is
  (a) phase markers: the window's lines before the root record, read alone, reach the phase;
  (b) the root's frames: the innermost frame (of those in the window) whose WHOLE function the
  frame table of the packs knows names the phase (the hand rows first, then the rows mined from
  the call graphs, inside the innermost frame of a function that runs several phases); a frame whose
  line is not in the window, or whose function is cut, is not evidence; frames of other packages
  (torch, triton, transformers) count only where the table lists them as known call sites;
  (c) the root's own text: its exception line, or its header, when the cause table reads a phase
  from it; (d) a cut record's statement under way, with the frame line it belongs to;
* **phase, when the window holds no evidence**: never later than the whole log's (a window cannot
  justify more than the log it is cut from), unless the window itself shows a later one (another
  rank's traceback whose frames serve, markers of a rank further on); ``launch`` or no phase at all
  are both honest;
* **cause**: the whole log's when the window holds every exception line of the root's chain (or
  the root's stating line, for a root that is one line); a window without the frames that made a
  cause-less exception in weight loading a ``model_load_error`` may call it ``python_exception``;
* **cause line** (windows that keep line numbers): the root's header when it is in the window, else
  the first line of the headerless record, one of its exception lines (a chain's first exception is
  the original error) or the header of one of the chain's tracebacks.

Wrapped variants that keep each line whole (rank prefixes dropped, frames dedented, lines doubled)
keep the same rule. Folded variants (80 and 120 columns) keep the phase their frames show and never
claim a later one (a frame the fold parts from its line's envelope, the fold falling before its
'File "' ends, is no evidence there: its record's other lines are behind an envelope it has lost); a fold also cuts one-line messages (markers, 'Received sigquit', one-line errors),
which are not put back together: that gap is the hunt's (``python -m tests.test_window_phase`` checks
every interesting window in every wrap against the whole rule and prints what breaks it).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logphase import Engine, parse_bytes
from logphase.diagnosing.diagnosis import frames_phase, statement_phase
from logphase.diagnosing.functions import frame_phase
from logphase.diagnosing.signatures import read_error
from logphase.reporting.report import Report
from logphase.vocabulary import events as ev
from logphase.vocabulary.causes import Cause
from logphase.vocabulary.phases import Phase
from tests.conftest import fixture_logs

_HEADER = b"Traceback (most recent call last):"
_FRAME_START = b'File "'
FIXTURES = {p.name: p.read_bytes() for p in fixture_logs()}
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<lineno>\d+), in (?P<function>[\w.<>]+)\s*$')


@functools.cache
def whole(name: str) -> Report:
    return parse_bytes(FIXTURES[name], source="x")


class Root(NamedTuple):
    """The root failure of a fixture, by line numbers (1-based) of the whole log."""

    first: int  # the first line of its record (the header, or its first line)
    last: int  # the last line of its record
    stating: tuple[int, ...]  # the lines that state the error (each exception line of a chain)
    header: int | None  # the header line, when the record has one
    header_text: str | None
    statement: str | None  # a cut record's call under way
    complete: bool
    # the last line that is the record's own (its header, a frame, an exception line): after it a
    # cut record has only its innermost frame's source line, which alone is any indented text
    last_own: int


def lines_of(name: str) -> list[bytes]:
    """The fixture's lines (without their newlines): line n is ``lines_of(name)[n - 1]``."""
    return FIXTURES[name].split(b"\n")


@functools.cache
def root_of(name: str) -> Root | None:
    full = whole(name)
    if full.failure is None:
        return None
    engine = Engine(source="x")
    events = engine.feed(FIXTURES[name]) + engine.finish()
    line = full.failure.line
    for e in events:
        if isinstance(e, ev.PythonException) and e.line <= line <= (e.end_line or e.line):
            stating = tuple(x for x in [*(c.exception_line for c in e.chain), e.exception_line] if x is not None)
            header = None if e.headerless else e.line
            last = e.end_line or e.line
            return Root(e.line, last, stating, header, e.header, e.statement, e.complete, _last_own(name, e.line, last, stating))
    for e in events:
        if e.line <= line <= (e.end_line or e.line) and e.kind != "progress_bar":
            return Root(e.line, e.end_line or e.line, (line,), None, None, None, True, e.end_line or e.line)
    return Root(line, line, (line,), None, None, None, True, line)


def _last_own(name: str, first: int, last: int, stating: tuple[int, ...]) -> int:
    """The record's last line that is a frame line or an exception line (else its first)."""
    own = [n for n in range(first, last + 1) if _FRAME_START in lines_of(name)[n - 1] or n in stating]
    return max([first, *own])


def _one_run_failures() -> list[str]:
    return [n for n in FIXTURES if whole(n).outcome == "failed" and whole(n).runs == 1 and root_of(n) is not None]


FAILED = _one_run_failures()


def _frames_in(name: str, start: int, root: Root, fold: int | None = None) -> list[ev.Frame]:
    """The root's frames whose whole frame line is in a window that starts at line ``start`` (and,
    folded at ``fold`` columns, whose 'File "' the fold leaves whole beside its line's envelope)."""
    frames: list[ev.Frame] = []
    lines = lines_of(name)
    for number in range(max(start, root.first), root.last + 1):
        text = lines[number - 1].decode("utf-8", "replace")
        found = _FRAME.search(text)
        if found and (fold is None or text.index('File "') + len('File "') <= fold):
            frames.append(ev.Frame(path=found["path"], lineno=int(found["lineno"]), function=found["function"]))
    return frames


def _text_phase(name: str, line: int) -> Phase | None:
    return read_error(lines_of(name)[line - 1].decode("utf-8", "replace")).phase


@functools.cache
def _markers_reach(name: str, start: int) -> Phase | None:
    """The phase the window's lines before the root record reach, read alone (its markers)."""
    root = root_of(name)
    assert root is not None
    if start >= root.first:
        return None
    return parse_bytes(b"\n".join(lines_of(name)[start - 1 : root.first - 1]) + b"\n", source="x").phase


class Expected(NamedTuple):
    failed: bool  # the window must report a failure
    phase: Phase | None  # the phase it must report (None: any, up to ``ceiling``)
    ceiling: Phase | None  # the latest phase it may report (None: no bound)
    causes: frozenset[Cause] | None  # the causes it may report (None: any)
    lines: frozenset[int] | None  # the cause lines it may report, in window lines (None: any)
    evidence: str  # what the phase rests on, for the failure message


def expected(name: str, start: int, fold: int | None = None) -> Expected:
    """What a window of fixture ``name`` that starts at line ``start`` must report (the module's rule),
    folded at ``fold`` columns when given."""
    full, root = whole(name), root_of(name)
    assert full.failure is not None and root is not None and full.phase is not None
    phase = full.failure.phase or full.phase
    consequences = [c.line for c in full.failure.consequences]
    failed = start <= root.last_own or any(line >= start for line in consequences)
    evidence = _evidence(name, start, root, phase, fold)
    ceiling = max([phase, *_later_evidence(name, start)], key=lambda p: p.order)
    causes: frozenset[Cause] | None = None
    lines: frozenset[int] | None = None
    if root.stating and start <= min(root.stating):
        causes = frozenset({full.failure.cause})
        if full.failure.cause is Cause.MODEL_LOAD_ERROR and evidence is None:
            causes |= {Cause.PYTHON_EXCEPTION}
        if root.header is not None and start <= root.header:
            lines = frozenset({full.failure.line - start + 1})
        elif root.header is not None or full.failure.line in root.stating:
            headers = [n for n in range(start, root.last + 1) if _HEADER in lines_of(name)[n - 1]]
            accepted = {*root.stating, *headers, max(start, root.first)}
            lines = frozenset(line - start + 1 for line in accepted if line >= start)
    return Expected(failed, phase if evidence else None, ceiling, causes, lines, evidence or "none")


def _later_evidence(name: str, start: int) -> list[Phase]:
    """The phases the window shows anywhere: its markers before the root, and every whole frame of
    every record in it (another rank's traceback may show it further on than the root's rank)."""
    found = [p for p in [_markers_reach(name, start)] if p is not None]
    for line in lines_of(name)[start - 1 :]:
        frame = _FRAME.search(line.decode("utf-8", "replace"))
        phase = frame_phase(frame["function"], frame["path"]) if frame else None
        if phase is not None:
            found.append(phase)
    return found


def _evidence(name: str, start: int, root: Root, phase: Phase, fold: int | None = None) -> str | None:
    """What in the window shows the failure's phase (None: nothing); ``fold``: folded at that width."""
    markers = _markers_reach(name, start)
    if markers is phase:
        return "markers"
    frames = _frames_in(name, start, root, fold)
    if frames and frames_phase(frames) is phase:
        return f"frames ({frames[-1].function} ...)"
    if not root.complete and root.statement and start <= root.last_own and statement_phase(root.statement) is phase:
        return "statement"
    if any(line >= start and _text_phase(name, line) is phase for line in root.stating):
        return "exception text"
    if root.header is not None and start <= root.header and root.header_text and read_error(root.header_text).phase is phase:
        return "header"
    return None


def problems(r: Report, want: Expected, numbered: bool) -> list[str]:
    """How a window's report breaks the rule (empty: it keeps it)."""
    found: list[str] = []
    if want.failed and r.outcome != "failed":
        found.append(f"outcome {r.outcome}, want failed")
    phase = r.failure.phase if r.failure is not None and r.failure.phase is not None else r.phase
    if want.phase is not None and phase is not want.phase:
        found.append(f"phase {phase}, want {want.phase} (evidence: {want.evidence})")
    elif want.ceiling is not None and phase is not None and phase.order > want.ceiling.order:
        found.append(f"phase {phase}, later than {want.ceiling} (no evidence)")
    if want.causes is not None and (r.failure is None or r.failure.cause not in want.causes):
        found.append(f"cause {r.failure.cause if r.failure else None}, want {sorted(c.value for c in want.causes)}")
    if numbered and want.lines is not None and r.failure is not None and r.failure.line not in want.lines:
        found.append(f"cause line {r.failure.line}, want {sorted(want.lines)}")
    return found


# -- how a paste wraps a window --------------------------------------------------------------------

_RANK_PREFIX = re.compile(
    rb"^(?:\[rank\d+\]: ?|\[\d+,\d+\]<std(?:out|err)>:|\(\w+(?: rank=\d+)? pid=\d+\) |\d+: )",
    re.MULTILINE,
)


def fold(width: int) -> Callable[[bytes], bytes]:
    """A terminal or a text box of ``width`` columns: long lines go on in the next line."""

    def folded(log: bytes) -> bytes:
        out: list[bytes] = []
        for line in log.split(b"\n"):
            out.extend([line[i : i + width] for i in range(0, len(line), width)] or [b""])
        return b"\n".join(out)

    return folded


def without_ranks(log: bytes) -> bytes:
    """A paste of one rank's lines: the launcher's or torch's rank prefix dropped."""
    return _RANK_PREFIX.sub(b"", log)


def dedented(log: bytes) -> bytes:
    """A tracker that strips each line's leading whitespace (the frames lose their indentation)."""
    return b"\n".join(line.lstrip(b" \t") for line in log.split(b"\n"))


def double_spaced(log: bytes) -> bytes:
    """A chat that turns every line break into a paragraph break."""
    return b"\n\n".join(log.split(b"\n"))


# name -> (wrap, whether the window keeps its line numbers)
WRAPS: dict[str, tuple[Callable[[bytes], bytes], bool]] = {
    "plain": (lambda log: log, True),
    "fold80": (fold(80), False),
    "fold120": (fold(120), False),
    "no_ranks": (without_ranks, True),
    "dedented": (dedented, True),
    "double_spaced": (double_spaced, False),
}


def window(name: str, start: int) -> bytes:
    return b"\n".join(lines_of(name)[start - 1 :])


def window_problems(name: str, start: int, wrap: str) -> list[str]:
    wrapper, numbered = WRAPS[wrap]
    r = parse_bytes(wrapper(window(name, start)), source="x")
    return problems(r, expected(name, start), numbered)


def interesting_starts(name: str) -> list[int]:
    """Every line of the root record and its neighbours, and every consequence's line."""
    full, root = whole(name), root_of(name)
    assert full.failure is not None and root is not None
    count = len(lines_of(name))
    starts = set(range(max(1, root.first - 2), min(count, root.last + 2) + 1))
    starts |= {c.line for c in full.failure.consequences}
    return sorted(starts)


# the wraps that keep each line whole (the property holds in full), and the folds: a fold also cuts
# one-line messages (a marker, 'Received sigquit ...', a c10d or HSA error line), which only a
# traceback's record puts back together: a folded window keeps the phase its frames show
WHOLE_LINES = ("plain", "no_ranks", "dedented", "double_spaced")
FOLDS = ("fold80", "fold120")
_FOLD_WIDTH = {"fold80": 80, "fold120": 120}


def _start(name: str, data: st.DataObject) -> int:
    count = len(lines_of(name))
    return data.draw(st.one_of(st.sampled_from(interesting_starts(name)), st.integers(1, count)), label="window starts at line")


@pytest.mark.parametrize("name", FAILED)
@given(data=st.data())
def test_a_window_of_a_failure_keeps_its_phase_and_cause(name: str, data: st.DataObject) -> None:
    start = _start(name, data)
    wrap = data.draw(st.sampled_from(WHOLE_LINES), label="wrapped as")
    assert window_problems(name, start, wrap) == []


def folded_problems(name: str, start: int, wrap: str) -> list[str]:
    """The rule on a folded window: the phase its frames show (markers and one-line errors may be
    cut by the fold), never a later one."""
    want = expected(name, start, _FOLD_WIDTH[wrap])
    if not want.evidence.startswith(("frames", "statement")):
        want = want._replace(phase=None)
    want = want._replace(failed=False, causes=None, lines=None)
    return problems(parse_bytes(WRAPS[wrap][0](window(name, start)), source="x"), want, False)


@pytest.mark.parametrize("name", FAILED)
@given(data=st.data())
def test_a_folded_window_of_a_failure_keeps_the_phase_its_frames_show(name: str, data: st.DataObject) -> None:
    start = _start(name, data)
    wrap = data.draw(st.sampled_from(FOLDS), label="folded at")
    assert folded_problems(name, start, wrap) == []


def test_there_are_failures_to_window() -> None:
    assert len(FAILED) >= 30, FAILED


def hunt() -> Iterator[tuple[str, int, str, list[str]]]:
    """Every interesting window of every fixture in every wrap (``python -m tests.test_window_phase``)."""
    for name in FAILED:
        for start in interesting_starts(name):
            for wrap in WRAPS:
                found = window_problems(name, start, wrap)
                if found:
                    yield name, start, wrap, found


if __name__ == "__main__":
    import collections
    import sys

    kinds: collections.Counter[str] = collections.Counter()
    total = 0
    for name, start, wrap, found in hunt():
        total += 1
        for problem in found:
            kinds[f"{wrap}: {problem.split(',')[0].split(' ')[0]}"] += 1
        print(name, start, wrap, "; ".join(found), file=sys.stdout)
    print(total, "windows break the rule", dict(kinds))


# -- frames of other packages ----------------------------------------------------------------------

_SITE = "/usr/local/lib/python3.12/dist-packages"


def test_a_library_function_named_like_a_server_function_is_no_evidence() -> None:
    """A row for any file is a server's function: torch's 'capture' (cuda/graphs.py) is not
    SGLang's; a library's frame says a phase only by a row naming its file (a known call site)."""
    assert frame_phase("capture", f"{_SITE}/torch/cuda/graphs.py") is None
    assert frame_phase("load_model", f"{_SITE}/transformers/modeling_utils.py") is None
    assert frame_phase("capture", f"{_SITE}/sglang/srt/model_executor/cuda_graph_runner.py") is Phase.CUDA_GRAPH_CAPTURE
    assert frame_phase("load_model", f"{_SITE}/vllm/worker/model_runner.py") is Phase.WEIGHT_LOADING
    assert frame_phase("init_process_group", f"{_SITE}/torch/distributed/distributed_c10d.py") is Phase.DISTRIBUTED_INIT
    assert frame_phase("capture", "scheduler.py") is Phase.CUDA_GRAPH_CAPTURE  # a path a paste shortened


def test_the_innermost_server_frame_decides_over_library_frames() -> None:
    """A window inside a serving loop's traceback whose innermost frames are torch's and triton's."""
    window_text = (
        f'  File "{_SITE}/sglang/srt/managers/scheduler.py", line 1000, in event_loop_overlap\n'
        "    batch_result = self.run_batch(batch)\n"
        f'  File "{_SITE}/torch/cuda/graphs.py", line 80, in capture\n'
        "    super().capture_begin(pool=pool)\n"
        f'  File "{_SITE}/triton/runtime/autotuner.py", line 20, in load_model\n'
        "    return self.fn.run(*args)\n"
        "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered\n"
    )
    r = parse_bytes(window_text.encode(), source="x")
    assert (r.outcome, r.phase) == ("failed", Phase.READY)


# -- pastes, one shape each ------------------------------------------------------------------------

_TRACEBACK = (
    "[2026-05-09 09:20:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    f'  File "{_SITE}/sglang/srt/managers/scheduler.py", line 3107, in run_scheduler_process\n'
    "    scheduler = Scheduler(\n"
    f'  File "{_SITE}/sglang/srt/model_executor/model_runner.py", line 659, in initialize\n'
    "    self.init_memory_pool(pre_model_load_memory)\n"
    f'  File "{_SITE}/sglang/srt/model_executor/model_runner_kv_cache_mixin.py", line 412, in init_memory_pool\n'
    "    raise RuntimeError(\n"
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.85\n"
    "[2026-05-09 09:20:06] Received sigquit from a child process. It usually means the child failed.\n"
)


@pytest.mark.parametrize("wrap", sorted(WRAPS))
@pytest.mark.parametrize("start", range(1, 9))
def test_a_pasted_window_of_a_traceback_keeps_its_phase_and_cause(wrap: str, start: int) -> None:
    text = "".join(_TRACEBACK.splitlines(keepends=True)[start - 1 :]).encode()
    r = parse_bytes(WRAPS[wrap][0](text), source="x")
    assert r.outcome == "failed"
    assert r.phase is Phase.MEMORY_POOL
    assert r.failure is not None and r.failure.cause is Cause.KV_CACHE_INSUFFICIENT_MEMORY


def test_a_line_that_only_looks_like_a_frame_s_first_part_says_nothing() -> None:
    r = parse_bytes(b'  File "notes.txt\nwas not found, retrying\n', source="x")
    assert r.failure is None and r.outcome != "failed"
