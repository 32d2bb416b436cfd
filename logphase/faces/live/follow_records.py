"""The records ``logphase follow`` prints (one JSON object per line with ``--json``), as typed models.

Each record has a ``kind`` (the discriminator of :data:`FollowRecord`) and a one-line ``message``
for people; the other fields are for programs. ``logphase schema`` prints their JSON schema.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from logphase.reporting.report import FailureReport, Outcome, Report, WarningReport
from logphase.vocabulary.phases import Phase

RECORD_KIND = (
    "the record kind: phase, failure, warning, outcome, stall, run, stale, truncated, rotated, deleted, waiting, "
    "draining, timeout, summary"
)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: str = Field(description="the record in one line, for people")


class PhaseRecord(_Record):
    """The run entered a phase (one record per phase, whatever the size of the reads)."""

    kind: Literal["phase"] = Field("phase", description=RECORD_KIND)
    phase: Phase = Field(description="the phase entered")
    ts: str | None = Field(description="when the first rank entered it, as printed")
    rank: str | None = Field(description="the first rank to enter it; null for the server as a whole")
    line: int | None = Field(description="the line that shows it first")
    elapsed_s: float | None = Field(description="seconds from the run's first timestamp to the phase's start")


class FailureRecord(_Record):
    """The run failed: the root cause, with its hint and consequences."""

    kind: Literal["failure"] = Field("failure", description=RECORD_KIND)
    phase: Phase | None = Field(description="the phase the root cause struck in")
    failure: FailureReport = Field(description="the root cause, as in the report")


class WarningRecord(_Record):
    kind: Literal["warning"] = Field("warning", description=RECORD_KIND)
    warning: WarningReport = Field(description="the warning, as in the report")


class OutcomeRecord(_Record):
    """The verdict on the run being followed: ready or failed."""

    kind: Literal["outcome"] = Field("outcome", description=RECORD_KIND)
    outcome: Outcome = Field(description="ready or failed")
    ts: str | None = Field(default=None, description="when the server became ready, or failed")
    total_startup_s: float | None = Field(description="first timestamp of the run to ready or to the failure")
    run: int = Field(description="which run of the input (1-based) this verdict is about")


class StallRecord(_Record):
    """No new input for longer than the phase usually stays silent."""

    kind: Literal["stall"] = Field("stall", description=RECORD_KIND)
    phase: Phase | None = Field(description="the phase the server is silent in")
    silent_s: float = Field(description="seconds since the last input")
    last_line: str = Field(description="the end of the last line read")
    hint: str = Field(description="what the silence usually means in this phase")


class RunRecord(_Record):
    """A new run of the server started in the same input."""

    kind: Literal["run"] = Field("run", description=RECORD_KIND)
    runs: int = Field(description="runs seen so far; the new one is the last")
    line: int = Field(description="the new run's first line")


class StaleRecord(_Record):
    """The file ends in a finished run and was not written since before following began: that
    run's outcome is not reported as this run's; follow waits for a new run."""

    kind: Literal["stale"] = Field("stale", description=RECORD_KIND)
    outcome: Outcome = Field(description="how the old run ended")
    age_s: float = Field(description="seconds between the file's last write and the start of following")
    line: int = Field(description="first line of the old run")


class TruncatedRecord(_Record):
    """The file was cut (or cut and written again, longer): it is read again from its start, as a
    new input (line numbers restart)."""

    kind: Literal["truncated"] = Field("truncated", description=RECORD_KIND)
    at_byte: int = Field(description="the read position when the file was found cut")


class RotatedRecord(_Record):
    """Another file now has the name: the old one was read to its end, the new one is read from its start."""

    kind: Literal["rotated"] = Field("rotated", description=RECORD_KIND)


class DeletedRecord(_Record):
    """The file was deleted (said once): all it held was read; follow waits for a file of that
    name to appear again (then a ``rotated`` record), as ``tail -F`` does, until --timeout."""

    kind: Literal["deleted"] = Field("deleted", description=RECORD_KIND)
    at_byte: int = Field(description="the bytes read from the deleted file")


class WaitingRecord(_Record):
    """The file does not exist yet."""

    kind: Literal["waiting"] = Field("waiting", description=RECORD_KIND)


class DrainingRecord(_Record):
    """The verdict is in, but follow keeps reading the pipe to its end so that the writer upstream
    (``tee``, the server) never gets SIGPIPE; ``--exit-at-verdict`` leaves at once instead."""

    kind: Literal["draining"] = Field("draining", description=RECORD_KIND)
    exit_code: int = Field(
        description="the verdict now; the exit code at the end of the input is the verdict on all of it (the state "
        "then, as parse says, unless --until ready or a phase was reached before a failure: 0)"
    )


class TimeoutRecord(_Record):
    kind: Literal["timeout"] = Field("timeout", description=RECORD_KIND)
    after_s: float = Field(description="seconds waited")
    stale: bool = Field(default=False, description="true when the report is about a stale run")
    report: Report = Field(description="the report at the time of giving up")


class SummaryRecord(_Record):
    """The last record: the report, and the exit code a launch script sees."""

    kind: Literal["summary"] = Field("summary", description=RECORD_KIND)
    exit_code: int = Field(description="the exit code follow returns")
    stale: bool = Field(default=False, description="true when the report is about a stale run")
    report: Report = Field(description="the final report")


FollowRecord = Annotated[
    PhaseRecord
    | FailureRecord
    | WarningRecord
    | OutcomeRecord
    | StallRecord
    | RunRecord
    | StaleRecord
    | TruncatedRecord
    | RotatedRecord
    | DeletedRecord
    | WaitingRecord
    | DrainingRecord
    | TimeoutRecord
    | SummaryRecord,
    Field(discriminator="kind"),
]

FOLLOW_RECORD_ADAPTER: TypeAdapter[FollowRecord] = TypeAdapter(FollowRecord)

HUMAN_LABELS = {"failure": "FAILED", "run": "new run"}


def human_line(record: FollowRecord) -> str:
    """A record as ``follow`` prints it without --json: time, label, message (and a failure's hint)."""
    kind = record.kind
    label = HUMAN_LABELS.get(kind, kind)
    when = getattr(record, "ts", None) or ""
    when = when.replace("T", " ") + "  " if when else ""
    text = f"{when}{label:<8} {record.message}"
    if isinstance(record, FailureRecord):
        text += f"\n         hint: {record.failure.hint}"
    return text + "\n"


__all__ = [
    "FOLLOW_RECORD_ADAPTER",
    "DeletedRecord",
    "DrainingRecord",
    "FailureRecord",
    "FollowRecord",
    "OutcomeRecord",
    "PhaseRecord",
    "RotatedRecord",
    "RunRecord",
    "StaleRecord",
    "StallRecord",
    "SummaryRecord",
    "TimeoutRecord",
    "TruncatedRecord",
    "WaitingRecord",
    "WarningRecord",
    "human_line",
]
