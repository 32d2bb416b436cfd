"""Stage 2c: multi-line records. Python tracebacks (chained ones included) become one
``PythonException`` event; a Python warning absorbs its indented source line.

Open records are kept per stream: torchrun's ``[rank3]:`` prefix names the stream, so two ranks'
tracebacks can interleave; unprefixed lines share one stream. A line from another writer (a
timestamped log line, NCCL, Gloo, glog, uvicorn, tqdm) does not break a traceback that has not
reached its exception line yet: it was written by another process in between.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from logphase.pipeline import events as ev
from logphase.pipeline.envelope import Envelope
from logphase.pipeline.grammars import parse

# An exception message may run over several lines ("Possible solutions:", torchrun's failure
# report); beyond this many lines the record is closed and what follows is read on its own.
MAX_MESSAGE_LINES = 40
MAX_FRAMES = 200

TRACEBACK_HEADER = "Traceback (most recent call last):"


@dataclass
class _Exception:
    exc_type: str | None
    message_lines: list[str]


@dataclass
class OpenTraceback:
    meta: dict[str, object]
    header: str | None
    uncaught: bool
    frames: list[ev.Frame] = field(default_factory=list)
    exceptions: list[_Exception] = field(default_factory=list)
    state: str = "frames"  # frames | message | gap | fatal
    lines: int = 1
    last_line: int = 0
    fatal_message: str | None = None

    def to_event(self) -> ev.EventBase:
        meta = dict(self.meta)
        meta["end_line"] = self.last_line
        if self.fatal_message is not None:
            return ev.FatalSignal(message=self.fatal_message, **meta)  # type: ignore[arg-type]
        chain = [ev.ChainedException(exc_type=e.exc_type, message="\n".join(e.message_lines)) for e in self.exceptions]
        last = chain[-1] if chain else None
        return ev.PythonException(
            header=self.header,
            exc_type=last.exc_type if last else None,
            message=last.message if last else "",
            frames=self.frames[-MAX_FRAMES:],
            chain=chain[:-1],
            complete=last is not None,
            uncaught=self.uncaught,
            **meta,  # type: ignore[arg-type]
        )


class RecordAssembler:
    def __init__(self) -> None:
        self.open: dict[str | None, OpenTraceback] = {}

    def start(self, stream: str | None, record: OpenTraceback) -> list[ev.EventBase]:
        """Open a record on ``stream``; a record already open there is closed first."""
        closed = self.close(stream)
        self.open[stream] = record
        return closed

    def close(self, stream: str | None) -> list[ev.EventBase]:
        record = self.open.pop(stream, None)
        return [record.to_event()] if record else []

    def close_all(self) -> list[ev.EventBase]:
        out: list[ev.EventBase] = []
        for stream in list(self.open):
            out.extend(self.close(stream))
        return out

    def peek_all(self) -> list[ev.EventBase]:
        return [record.to_event() for record in self.open.values()]

    def offer(self, env: Envelope, lineno: int, foreign: bool) -> tuple[bool, list[ev.EventBase]]:
        """Give a line to the open record of its stream. Returns (consumed, closed events)."""
        stream = env.torch_rank
        record = self.open.get(stream)
        if record is None:
            return False, []
        text = env.message if env.ts is None else ""
        if env.ts is not None or foreign:
            # Another writer's line. Only a stamped line of the record's own writer ends it (or, for
            # a rank-prefixed stream, any line of that rank): other ranks interleave mid-record,
            # even between the parts of a chained traceback.
            same_writer = env.ts is not None and env.rank == record.meta.get("rank")
            if stream is None and (record.state == "frames" or not same_writer):
                return False, []
            return False, self.close(stream)
        consumed = self._continue(record, text)
        if consumed:
            record.lines += 1
            record.last_line = lineno
            if record.state == "message" and len(record.exceptions[-1].message_lines) > MAX_MESSAGE_LINES:
                return True, self.close(stream)
            return True, []
        return False, self.close(stream)

    @staticmethod
    def _continue(record: OpenTraceback, text: str) -> bool:
        stripped = text.strip()
        if record.state == "fatal":
            # faulthandler dump: "Thread 0x... (most recent call first):" and '  File "..."' lines
            return (
                not stripped
                or text.startswith((" ", "\t"))
                or stripped.startswith(("Thread 0x", "Current thread", "Extension modules"))
            )
        if text.startswith("Exception in thread ") and record.state != "gap":
            return False  # the next thread's traceback begins
        if not stripped:
            if record.state == "message":
                record.state = "gap"
            return True
        if stripped == TRACEBACK_HEADER:
            if record.state in ("gap", "chain", "frames") and (record.state != "gap" or not record.exceptions):
                record.state = "frames"
                return True
            return False
        if text.startswith((" ", "\t")):
            if stripped.startswith('File "'):
                frame = parse("traceback", text)
                if frame is not None and frame.rule == "tb_frame":
                    record.frames.append(
                        ev.Frame(
                            path=frame.first("FRAME_PATH") or "",
                            lineno=int(frame.first("INT") or 0),
                            function=frame.first("FRAME_FUNC"),
                        )
                    )
                if record.state != "frames":
                    record.state = "frames"
                return True
            if record.state == "message":
                record.exceptions[-1].message_lines.append(stripped)
            return record.state != "gap"
        chain = parse("traceback", stripped)
        if chain is not None and chain.rule == "tb_chain":
            record.state = "chain"
            return True
        if record.state == "frames":
            exc_type, message = None, stripped
            parsed = parse("traceback", stripped) if len(stripped) < 4096 else None
            if parsed is not None and parsed.rule == "tb_exception":
                exc_type = parsed.first("EXC_TYPE")
                message = (parsed.first("REST") or "").strip()
            record.exceptions.append(_Exception(exc_type, [message] if message else []))
            record.state = "message"
            return True
        if record.state == "message":
            record.exceptions[-1].message_lines.append(stripped)
            return True
        return False


def opens_record(env: Envelope, meta: dict[str, object]) -> OpenTraceback | None:
    """A record starts at a traceback header (bare, rank-prefixed or after a logged message such as
    'Scheduler hit an exception: '), or at faulthandler's 'Fatal Python error'."""
    text = env.message
    if text.startswith("Exception in thread ") and text.rstrip().endswith(":"):
        # threading's excepthook prints this line, then the traceback
        return OpenTraceback(meta=meta, header=text.strip().rstrip(":"), uncaught=True, state="gap")
    idx = text.find(TRACEBACK_HEADER)
    if idx >= 0:
        header = text[:idx].strip().rstrip(":").strip() or None
        uncaught = env.ts is None and header is None
        return OpenTraceback(meta=meta, header=header, uncaught=uncaught)
    if text.startswith("Fatal Python error: "):
        record = OpenTraceback(meta=meta, header=None, uncaught=True, state="fatal")
        record.fatal_message = text.strip()
        return record
    return None
