"""Property-based robustness over every fixture (issue 4).

Profiles (tests/conftest.py PROFILE_EXAMPLES): HYPOTHESIS_PROFILE=ci (6 examples a property and
fixture, derandomized; CI sets CI=true), dev (6, new ones each run, the default locally), long (500).
"""

from __future__ import annotations

import functools
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logphase import Engine
from logphase.reading.envelope import wrappers_end
from logphase.reading.lines import LineSplitter
from logphase.reporting.report import Report, resolve_rank
from logphase.vocabulary.phases import PHASE_ORDER, Phase
from tests.conftest import fixture_logs
from tests.logs import fed_in_chunks

FIXTURES = fixture_logs()
FIXTURE_BYTES = {p.name: p.read_bytes() for p in FIXTURES}
ids = [p.stem for p in FIXTURES]


def report_of(data: bytes, cuts: list[int] | None = None) -> Report:
    return fed_in_chunks(Engine(source="x"), data, cuts)


@functools.cache
def whole_report(name: str) -> Report:
    """The report on a whole fixture, read once: properties compare thousands of variants with it."""
    return report_of(FIXTURE_BYTES[name])


def verdict(r: Report) -> dict[str, Any]:
    f = r.failure
    return {
        "outcome": r.outcome,
        "phase": r.phase,
        "cause": f.cause if f else None,
        "rank": f.rank if f else None,
        "phases": [p.name for p in r.phases],
        "runs": r.runs,
    }


def phase_index(phase: object) -> int:
    return -1 if phase is None else PHASE_ORDER.index(phase)  # type: ignore[arg-type]


def furthest_index(r: Report) -> int:
    """The furthest phase a report's run reached: its phase, or a later one its timeline shows when
    its failure struck in an earlier step (vLLM V1 sizes the KV cache after torch.compile, which the
    corpus counts as cuda_graph_capture: a KV-cache failure there is memory_pool)."""
    return max([phase_index(r.phase), *(phase_index(Phase(p.name)) for p in r.phases)])


def assert_conserved(r: Report) -> None:
    lines = r.lines
    assert lines.total == lines.events + lines.unrecognized + lines.blank + lines.ignored + lines.truncated


# -- never raises, nothing lost ------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURE_BYTES, ids=ids)
@given(data=st.data())
def test_garbage_anywhere_never_raises(name: str, data: st.DataObject) -> None:
    log = bytearray(FIXTURE_BYTES[name])
    for _ in range(data.draw(st.integers(1, 5))):
        pos = data.draw(st.integers(0, len(log)))
        log[pos:pos] = data.draw(st.binary(min_size=1, max_size=200) | st.sampled_from([b"\x00" * 50, b"\xff\xfe", b"\r" * 30]))
    r = report_of(bytes(log))
    assert_conserved(r)


@pytest.mark.parametrize(
    "data",
    [b"", b"\r" * 10000, b"\x00" * 5000, b"x" * (20 * 1024 * 1024), b"\xff" * 100000, b"\n" * 1000, bytes(range(256)) * 1000],
    ids=["empty", "only-cr", "nul", "20MB-line", "invalid-utf8", "only-newlines", "binary"],
)
def test_pathological_inputs(data: bytes) -> None:
    r = report_of(data, cuts=[len(data) // 3, len(data) // 2])
    assert r.outcome == "starting"
    assert_conserved(r)


# -- chunking --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURE_BYTES, ids=ids)
@given(data=st.data())
def test_chunking_invariance(name: str, data: st.DataObject) -> None:
    log = FIXTURE_BYTES[name]
    cuts = data.draw(st.lists(st.integers(0, len(log)), max_size=30))
    assert report_of(log, cuts) == whole_report(name)


@pytest.mark.parametrize("name", FIXTURE_BYTES, ids=ids)
def test_one_byte_at_a_time(name: str) -> None:
    log = FIXTURE_BYTES[name]
    assert report_of(log, list(range(len(log)))) == whole_report(name)


# -- conservation ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURE_BYTES, ids=ids)
def test_every_line_accounted_for(name: str) -> None:
    log = FIXTURE_BYTES[name]
    r = whole_report(name)
    assert_conserved(r)
    splitter = LineSplitter()
    logical = splitter.feed(log) + splitter.finish()
    assert r.lines.total == len(logical)
    assert r.lines.physical == log.count(b"\n") + (0 if log.endswith(b"\n") or not log else 1)


# -- truncation --------------------------------------------------------------------------------------


def _line_span(log: bytes, line: int) -> tuple[int, int]:
    """Byte offsets of 1-based line ``line``: where it starts and just past its newline."""
    start = 0
    for _ in range(line - 1):
        nxt = log.find(b"\n", start)
        if nxt < 0:
            return len(log), len(log)
        start = nxt + 1
    end = log.find(b"\n", start)
    return start, len(log) if end < 0 else end + 1


Span = tuple[int, int]


@functools.cache
def _decisive_lines(name: str) -> tuple[Span | None, Span | None]:
    """Where the whole log's outcome was decided: the spans of the line where its last run became
    ready (the ready phase's first line) and of its root cause's line."""
    log, full = FIXTURE_BYTES[name], whole_report(name)
    ready = next((p for p in full.phases if p.name.value == "ready"), None)
    ready_line = _line_span(log, ready.first_line) if ready is not None and ready.first_line else None
    failure_line = _line_span(log, full.failure.line) if full.failure is not None and full.failure.line else None
    return ready_line, failure_line


def outcomes_at(name: str, cut: int) -> set[str]:
    """The outcome the whole log had when its first ``cut`` bytes were written: failed past its root
    cause's line, else ready past its ready line, else starting. A log that is ready and then fails
    while serving (ray_wrapped_oom) is rightly ``ready`` between the two. Inside a decisive line
    (its newline not yet written) both the state before and after it are right, and a log that
    fails may read as failed early (a headerless traceback's frames come before the line that
    states the error)."""
    ready_line, failure_line = _decisive_lines(name)
    early_failure = {"failed"} if failure_line is not None else set()
    if failure_line is not None and cut >= failure_line[1]:
        return {"failed"}
    if ready_line is not None and cut >= ready_line[1]:
        return {"ready"} | early_failure
    if ready_line is not None and cut > ready_line[0]:
        return {"starting", "ready"} | early_failure
    return {"starting"} | early_failure


@pytest.mark.parametrize("name", FIXTURE_BYTES, ids=ids)
@given(data=st.data())
def test_truncation(name: str, data: st.DataObject) -> None:
    log = FIXTURE_BYTES[name]
    full = whole_report(name)
    cut = data.draw(st.integers(0, len(log)))
    r = report_of(log[:cut])
    assert_conserved(r)
    if r.runs == full.runs:
        assert phase_index(r.phase) <= furthest_index(full)
        assert r.outcome in outcomes_at(name, cut)
    assert r.outcome in ("starting", "failed", "ready")
    # the end of the input ends its last line (issue 18): a cut line is read as a line, unless it
    # is visibly cut, and then it is the one truncated line and the warning names it
    flagged = [w.line for w in r.warnings if w.kind == "truncated_input"]
    assert r.lines.truncated == len(flagged) <= 1
    if cut > 0 and log[cut - 1 : cut] not in (b"\n", b"\r") and not flagged:
        assert r == report_of(log[:cut] + b"\n")
    if flagged:
        assert flagged == [log.count(b"\n", 0, cut) + 1]


def test_a_cut_between_ready_and_a_failure_while_serving_is_ready() -> None:
    """ray_wrapped_oom is ready at line 61 and fails while serving at line 72: every cut between the
    two is ready, as the log was then (the property above once demanded ``starting``)."""
    name = "ray_wrapped_oom.log"
    log, full = FIXTURE_BYTES[name], whole_report(name)
    ready_line, failure_line = _decisive_lines(name)
    assert ready_line is not None and failure_line is not None
    assert full.failure is not None and (log.count(b"\n", 0, ready_line[0]) + 1, full.failure.line) == (61, 72)
    for cut in range(ready_line[1], failure_line[0] + 1):
        if log[cut - 1 : cut] == b"\n":  # every whole line between the two
            assert outcomes_at(name, cut) == {"ready", "failed"}
            assert report_of(log[:cut]).outcome == "ready"
    assert outcomes_at(name, failure_line[1]) == {"failed"} and report_of(log[: failure_line[1]]).outcome == "failed"
    assert report_of(log[: ready_line[0]]).outcome == "starting"


# -- interleaving ------------------------------------------------------------------------------------

_STAMPED = re.compile(rb"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?P<tags>(?: [A-Z_]+\d+)*)\]")
_TORCH_RANK = re.compile(rb"^\[(rank\d+)\]:")


_GLUED = re.compile(rb"(?<=.)(?=\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


def _unglued(log: bytes) -> list[bytes]:
    """Physical lines, with lines of two writers glued together split apart again."""
    out: list[bytes] = []
    for line in log.splitlines(keepends=True):
        parts = _GLUED.split(line)
        out.extend(part if part.endswith(b"\n") else part + b"\n" for part in parts if part)
    return out


_UVICORN = re.compile(rb"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL): +")


def split_streams(log: bytes) -> dict[bytes, list[bytes]]:
    """Per-writer streams of records. A stamped line belongs to its rank tags (the main process:
    b''), a torchrun-prefixed line to its rank; the unprefixed lines after a line continue its
    record (a logged traceback is one write, so writers interleave whole records); tqdm bars come
    from rank 0."""
    streams: dict[bytes, list[bytes]] = {}
    current = b"?"
    for line in _unglued(log):
        m = _STAMPED.match(line)
        t = _TORCH_RANK.match(line)
        if m:
            current = m.group("tags").strip() or b""
            streams.setdefault(current, []).append(line)
        elif t:
            # torchrun's [rankN]: is the same process as SGLang's TPN: one writer, its order kept
            current = b"TP" + t.group(1)[len(b"rank") :]
            streams.setdefault(current, []).append(line)
        elif b"%|" in line or b"% Completed" in line:
            streams.setdefault(_rank0(streams), []).append(line)
        elif _UVICORN.match(line):
            # uvicorn runs in the main process (unstamped up to 0.4.0, spec 1.3): its lines and
            # what follows them are the main process's, not the previous rank's
            current = b""
            streams.setdefault(current, []).append(line)
        elif streams.get(current):
            streams[current][-1] += line
        else:
            streams.setdefault(current, []).append(line)
    return streams


def _rank0(streams: dict[bytes, list[bytes]]) -> bytes:
    ranked = sorted(k for k in streams if k not in (b"", b"?"))
    return ranked[0] if ranked else b"?"


# multi-rank fixtures that end with a newline (a cut last line cannot be moved around)
def _wrapped(log: bytes) -> bool:
    """Most lines carry another program's envelope (docker, srun, mpirun ...): their writers are that
    program's, which split_streams does not know (test_envelopes interleaves them per writer)."""
    lines = [line for line in log.split(b"\n") if line.strip()]
    return sum(wrappers_end(line.decode("utf-8", "replace")) > 0 for line in lines) > len(lines) // 2


MULTI_RANK = [
    n
    for n, b in FIXTURE_BYTES.items()
    if b.endswith(b"\n") and not _wrapped(b) and len([k for k in split_streams(b) if k not in (b"", b"?")]) > 1
]


@pytest.mark.parametrize("name", MULTI_RANK)
@given(seed=st.integers(0, 2**32 - 1), glue=st.booleans())
def test_interleaving_keeps_the_verdict(name: str, seed: int, glue: bool) -> None:
    log = FIXTURE_BYTES[name]
    rng = random.Random(seed)
    merged: list[bytes] = []
    # runs follow each other in time: writers interleave within a run, not across runs
    for segment in re.split(rb"(?m)^(?=\[[^\]]*\] server_args=)", log):
        streams = {k: list(v) for k, v in split_streams(segment).items()}
        keys = list(streams)
        while keys:
            key = rng.choice(keys)
            # a writer emits a few records before another gets a turn
            for _ in range(rng.randint(1, 4)):
                if not streams[key]:
                    break
                line = streams[key].pop(0)
                if glue and merged and _STAMPED.match(line) and rng.random() < 0.3 and merged[-1].endswith(b"\n"):
                    merged[-1] = merged[-1][:-1]  # unbuffered writers: no newline before the next rank's line
                merged.append(line)
            keys = [k for k in keys if streams[k]]
    full_report, mixed_report = whole_report(name), report_of(b"".join(merged))
    full, mixed = verdict(full_report), verdict(mixed_report)
    for key in ("outcome", "cause", "runs"):
        assert mixed[key] == full[key], key
    assert set(mixed["phases"]) == set(full["phases"])
    if full_report.failure is not None and mixed_report.failure is not None:
        # the root is the earliest line among the failures of the earliest second: interleaving may
        # put another failing rank's line of that second first (lines without a time take the
        # time of the line before them, which interleaving changes), never a rank that did not fail.
        # c10d's '[rank3]:' is the TP3 process (resolve_rank): either name says the same rank
        failing = {full_report.failure.rank} | {c.rank for c in full_report.failure.consequences}
        root = mixed_report.failure.rank
        assert root in failing or any(root is not None and resolve_rank(r, [root]) == root for r in failing)


# -- noise -----------------------------------------------------------------------------------------

NOISE = [
    b"\rFetching 4 files:  25%|##5       | 1/4 [00:01<00:03,  1.00s/it]\rFetching 4 files:  50%|#####     | 2/4 [00:02<00:02,  1.00s/it]\n",
    b"gpu-node-7:4242:4242 [0] NCCL INFO Channel 00/32 :    0   1   2   3\n",
    b"gpu-node-7:4242:4313 [1] NCCL INFO comm 0x55d1 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0\n",
    b"\n",
    b"\n\n",
]


def _is_window(name: str) -> bool:
    return any(w.kind == "partial_log" for w in whole_report(name).warnings)


def _ansi(line: bytes, rng: random.Random) -> bytes:
    pos = rng.randint(0, max(0, len(line.rstrip(b"\n"))))
    return line[:pos] + rng.choice([b"\x1b[32m", b"\x1b[0m", b"\x1b[1;31m"]) + line[pos:]


@pytest.mark.parametrize("name", FIXTURE_BYTES, ids=ids)
@given(seed=st.integers(0, 2**32 - 1), crlf=st.booleans())
def test_noise_keeps_the_verdict(name: str, seed: int, crlf: bool) -> None:
    log = FIXTURE_BYTES[name]
    rng = random.Random(seed)
    lines = log.splitlines(keepends=True)
    noisy: list[bytes] = []
    in_traceback = False
    # in a window NCCL's lines are evidence of distributed init (weak, but all the window may have);
    # nor can NCCL speak before a failure at launch (it starts with distributed init)
    failure = whole_report(name).failure
    at_launch = failure is not None and failure.phase is not None and failure.phase.value == "launch"
    # nor in a log whose timeline has no distributed init (one GPU of vLLM prints none; vLLM's c10d
    # timeout shows the phase only in workers' lines whose prefixes the envelope reads)
    no_dist = all(p.name != "distributed_init" for p in whole_report(name).phases)
    noise = NOISE if not (_is_window(name) or at_launch or no_dist) else [n for n in NOISE if b"NCCL" not in n]
    for line in lines:
        stripped = line.lstrip()
        if b"Traceback (most recent call last)" in line or (not noisy and stripped.startswith(b"File ")):
            in_traceback = True  # a window may start inside a traceback
        elif _STAMPED.match(line):
            in_traceback = False
        # noise goes between records, not inside a traceback's message (a blank line ends it)
        if not in_traceback and not stripped.startswith((b"File ", b"raise")) and rng.random() < 0.25:
            noisy.append(rng.choice(noise))
        noisy.append(_ansi(line, rng) if rng.random() < 0.2 else line)
    text = b"".join(noisy)
    if crlf:
        text = text.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    assert verdict(report_of(text)) == verdict(whole_report(name))


# -- unknown future lines ---------------------------------------------------------------------------


@given(
    tags=st.lists(st.sampled_from(["DP0", "TP3", "EP1", "PP1", "ATTN_CP2", "MOE_DP1", "CP0"]), max_size=4, unique=True),
    message=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=300),
)
def test_unknown_sglang_messages(tags: list[str], message: str) -> None:
    prefix = "[2026-05-09 09:20:26" + "".join(" " + t for t in tags) + "] "
    r = report_of((prefix + message + "\n").encode())
    assert_conserved(r)
    assert r.lines.total == 1


@given(extra=st.lists(st.from_regex(r"[a-z_]{1,12}=[0-9a-z.]{1,8}", fullmatch=True), min_size=1, max_size=4))
def test_extra_fields_on_known_messages(extra: list[str]) -> None:
    suffix = ", " + ", ".join(extra)
    lines = [
        "[2026-05-09 09:20:03 TP0] Load weight begin. avail mem=47.00 GB" + suffix,
        "[2026-05-09 09:20:20 TP0] Load weight end. elapsed=17.00 s, type=M, avail mem=20.00 GB, mem usage=27.00 GB" + suffix,
        "[2026-05-09 09:20:23 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=6.90 GB" + suffix,
    ]
    engine = Engine()
    events = engine.feed(("\n".join(lines) + "\n").encode())
    assert [e.kind for e in events] == ["weight_load_begin", "weight_load_end", "capture_begin"]
    assert events[0].avail_mem_gb == 47.0  # type: ignore[attr-defined]
    assert events[1].elapsed_s == 17.0  # type: ignore[attr-defined]
    assert engine.report().phase is not None and engine.report().phase.value == "cuda_graph_capture"


def test_fixture_list_is_the_real_one() -> None:
    assert len(FIXTURES) >= 13 and all(isinstance(p, Path) for p in FIXTURES)
    assert len(MULTI_RANK) >= 5


@pytest.mark.parametrize("name", FIXTURE_BYTES, ids=ids)
@given(data=st.data())
def test_follow_phase_records_do_not_depend_on_the_reads(name: str, data: st.DataObject) -> None:
    """follow prints one record per phase entered, the same ones for any chunking of the input."""
    from tests.test_follow import follower_records, phase_records

    text = FIXTURE_BYTES[name]
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
    assert phase_records(follower_records(text, cuts)) == _followed_whole(name)


@functools.cache
def _followed_whole(name: str) -> list[tuple[object, ...]]:
    from tests.test_follow import follower_records, phase_records

    return phase_records(follower_records(FIXTURE_BYTES[name], []))


@pytest.mark.parametrize("name", FIXTURE_BYTES, ids=ids)
def test_follow_phase_records_line_by_line(name: str) -> None:
    """Read a line at a time (tail -f on a slow writer): the same phase records, each once."""
    from tests.test_follow import follower_records, phase_records

    text = FIXTURE_BYTES[name]
    whole = _followed_whole(name)
    lines = [i + 1 for i, b in enumerate(text) if b == 0x0A]
    assert phase_records(follower_records(text, lines)) == whole
    assert len(whole) == len(set(whole))


def test_hypothesis_keeps_what_it_stores_in_the_checkout() -> None:
    """The example database and Hypothesis's own files are in the checkout's git-ignored .hypothesis/
    (never in the user's home, where every checkout would replay another's failures)."""
    from hypothesis import settings
    from hypothesis.configuration import storage_directory

    from tests.conftest import ROOT

    home = ROOT / ".hypothesis"
    stored = storage_directory("unicode_data")
    assert Path(getattr(stored, "path", stored)).is_relative_to(home)  # a Path, or an object holding it
    database = settings.default.database
    assert database is None or Path(database.path).is_relative_to(home)  # type: ignore[attr-defined]
    assert ".hypothesis/" in (ROOT / ".gitignore").read_text().splitlines()
