"""Memory stays flat in the number of tracebacks: a run keeps what its report needs of its
incidents (the root candidates, the first consequences, counts), not every one of them; and the
report is the one that keeping them all would give."""

from __future__ import annotations

import random

from logphase import Engine
from logphase.diagnosing.cause_table import ECHO_PREFERENCE
from logphase.diagnosing.diagnosis import Assessment, Severity
from logphase.folding.runs import MAX_CONSEQUENCES, Incident, Incidents
from logphase.vocabulary import events as ev
from logphase.vocabulary.causes import Cause
from tests.logs import tp2_startup

SCHEDULER = "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py"


def scheduler_traceback(ts: str, rank: int, i: int) -> str:
    return (
        f"[{ts} TP{rank}] Scheduler hit an exception: Traceback (most recent call last):\n"
        f'  File "{SCHEDULER}", line 1733, in run_batch\n'
        "    logits_output, next_token_ids = self.tp_worker.forward_batch_generation(\n"
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {i % 7 + 1}.00 GiB. GPU {rank}\n"
    )


def many_tracebacks(n: int) -> bytes:
    """A ready TP2 server, then ``n`` scheduler tracebacks from both ranks while serving."""
    out = [tp2_startup()]
    for i in range(n):
        ts = f"2026-05-09 {10 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        out.append(
            f"[{ts} TP0] Decode batch, #running-req: 3, #token: 900, token usage: 0.01, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0\n"
        )
        out.append(scheduler_traceback(ts, i % 2, i))
    return "".join(out).encode()


def read(data: bytes) -> Engine:
    engine = Engine(source="many.log", collect_events=False)
    for i in range(0, len(data), 1 << 16):
        engine.feed(data[i : i + (1 << 16)])
    engine.finish()
    return engine


def test_the_incidents_kept_do_not_grow_with_the_tracebacks() -> None:
    few, many = read(many_tracebacks(400)), read(many_tracebacks(4000))
    kept_few, kept_many = few._machine.run.incidents, many._machine.run.incidents
    assert kept_few.stored() == kept_many.stored() <= MAX_CONSEQUENCES + 2
    # the counts are exact: every traceback is a failure that states its error
    assert kept_few.counts[Severity.ROOT] == len(kept_few) == 400
    assert kept_many.counts[Severity.ROOT] == len(kept_many) == 4000
    for engine in (few, many):
        report = engine.report()
        assert report.failure is not None and report.failure.cause is Cause.CUDA_OOM
        assert report.failure.line == tp2_startup().count("\n") + 2  # the first traceback's header
        assert len(report.failure.consequences) == MAX_CONSEQUENCES
        # the echoes are counted exactly, beyond those listed (the text says how many follow)
        assert report.failure.consequences_total == report.failure.echo_count() == len(engine._machine.run.incidents) - 1
        assert [c.line for c in report.failure.consequences] == sorted(c.line for c in report.failure.consequences)
    few_failure, many_failure = few.report().failure, many.report().failure
    assert few_failure is not None and many_failure is not None
    assert (few_failure.consequences_total, many_failure.consequences_total) == (399, 3999)
    assert few_failure.model_copy(update={"consequences_total": 0}) == many_failure.model_copy(update={"consequences_total": 0})


# -- the kept incidents answer as the whole list would (the report's rules, kept them all) ----------


def _whole_root(incidents: list[Incident]) -> Incident | None:
    for severity in (Severity.ROOT, Severity.UNSTATED):
        found = [i for i in incidents if i.assessment.severity is severity]
        if found:
            return min(found, key=lambda i: ((i.event.ts or "")[:19], i.event.line))
    echoes = [i for i in incidents if i.assessment.severity is Severity.ECHO]
    for cause in ECHO_PREFERENCE:
        for incident in echoes:
            if incident.assessment.cause is cause:
                return incident
    return echoes[0] if echoes else None


def _kept_root(kept: Incidents) -> Incident | None:
    for severity in (Severity.ROOT, Severity.UNSTATED):
        found = kept.earliest(severity)
        if found is not None:
            return found
    return next((e for c in ECHO_PREFERENCE if (e := kept.first_echo(c)) is not None), kept.first_echo())


def random_incident(rng: random.Random, line: int) -> Incident:
    event = ev.ErrorLine(
        line=line,
        offset=0,
        raw="x",
        # times go back now and then (ranks interleave; a record closes after later lines)
        ts=f"2026-05-09 10:00:{rng.randrange(60):02d}" if rng.random() < 0.9 else None,
        rank=rng.choice([None, "TP0", "TP1", "TP2"]),
        error="not_enough_memory",
        message="x",
    )
    severity = rng.choice(list(Severity))
    cause = rng.choice([Cause.KILLED, Cause.NCCL_ERROR, Cause.CUDA_OOM, Cause.UNKNOWN, Cause.DISTRIBUTED_TIMEOUT])
    return Incident(event, Assessment(severity, cause, None, "x"), None)


def test_kept_incidents_answer_as_the_whole_list() -> None:
    for seed in range(300):
        rng = random.Random(seed)
        whole: list[Incident] = []
        kept = Incidents()
        line = 1
        for _ in range(rng.randrange(0, 200)):
            # mostly in line order; a multi-line record that closes late comes after later lines
            line += rng.randrange(0, 4)
            incident = random_incident(rng, max(1, line - rng.randrange(0, 30) * (rng.random() < 0.1)))
            whole.append(incident)
            kept.add(incident)
        root = _whole_root(whole)
        assert _kept_root(kept) is root, seed
        others = sorted((i for i in whole if i is not root), key=lambda i: i.event.line)[:MAX_CONSEQUENCES]
        assert kept.consequences(root) == others, seed
        for after in (0, line // 2, line):
            assert kept.ranks_after(after) == {i.event.rank for i in whole if i.event.rank and i.event.line > after}
        assert len(kept) == len(whole)
        assert all(kept.counts[s] == sum(i.assessment.severity is s for i in whole) for s in Severity)
        assert kept.has_failure() == any(i.assessment.severity in (Severity.ROOT, Severity.UNSTATED) for i in whole)
        assert kept.stored() <= MAX_CONSEQUENCES + 1 + 2 + len(Cause) + 1
