"""follow --merge: follow the logs of one deployment at once (the nodes of a multi-node server;
prefill, decode and router) and stop at the deployment's verdict.

Each log is followed as ``follow FILE`` follows one (a thread each: files appear, grow, rotate on
their own); its records are printed as they come, tagged with their log. After each record the
logs' latest reports are merged: the verdict is the merged one (the root cause across nodes, ready
when every server is), so a node's echo never ends the follow as if it were the cause.
"""

from __future__ import annotations

import argparse
import os
import queue
import sys
import threading
import time

from logphase.faces.exit_codes import EXIT_INTERRUPTED, EXIT_TIMEOUT, OUTCOME_EXIT
from logphase.faces.inputs import InputError
from logphase.faces.live.follow import Follower, FollowOptions, follow_file
from logphase.faces.live.follow_records import FollowRecord, OutcomeRecord, SummaryRecord, TimeoutRecord, human_line
from logphase.faces.merged import merge_logs, render_merged
from logphase.reporting.merge import MergedReport
from logphase.reporting.report import Report

_DONE = object()
# after a first failure, how long the other logs are read before the verdict
SETTLE_S = 2.0


def follow_merged(args: argparse.Namespace, options: FollowOptions) -> int:
    names: list[str] = list(args.files)
    if len(names) < 2 or "-" in names:
        raise InputError("--merge follows two log files or more, by name (not standard input)")
    for name in names:
        if os.path.isdir(name):
            raise InputError(f"{name}: is a directory, give a log file")
    following = _MergedFollow(args, options, names)
    following.start()
    return following.run()


class _MergedFollow:
    """The logs of one deployment followed at once: a thread each puts its records in one inbox;
    this prints them and decides the deployment's verdict on the merged report."""

    def __init__(self, args: argparse.Namespace, options: FollowOptions, names: list[str]) -> None:
        from logphase.faces.text import use_color

        self.args, self.options, self.names = args, options, names
        self.followers: list[Follower | None] = [None] * len(names)
        self.inbox: queue.Queue[tuple[int, object]] = queue.Queue()
        self.out = sys.stdout.buffer
        self.color = use_color(sys.stdout, args.color)
        self.deadline = time.monotonic() + options.timeout if options.timeout is not None else None
        self.running = len(names)
        # a log has said all it will for now: its own verdict, or its follow ended
        self.said = [False] * len(names)
        self.settle_until: float | None = None

    def start(self) -> None:
        for i in range(len(self.names)):
            threading.Thread(target=self._watch, args=(i,), daemon=True, name=f"follow {self.names[i]}").start()
        if self.args.metrics_port is not None:
            from logphase.faces.live.metrics import serve

            port = serve(self.args.metrics_port, self._latest, self.args.metrics_host)
            sys.stderr.write(f"logphase: serving metrics on port {port} (/metrics)\n")

    def _watch(self, i: int) -> None:
        def keep(follower: Follower) -> None:
            self.followers[i] = follower

        try:
            for record in follow_file(self.names[i], self.options, on_follower=keep):
                self.inbox.put((i, record))
        finally:
            self.inbox.put((i, _DONE))

    def _latest(self) -> tuple[Report | None, float | None]:
        merged = _merged(self.names, self.followers)
        server = merged.servers[0].report if merged is not None and len(merged.servers) == 1 else None
        last = max((f.last_input for f in self.followers if f is not None), default=None)
        return server, last

    def run(self) -> int:
        try:
            verdict = self._until_verdict()
        except KeyboardInterrupt:
            self._finish_if_merged()
            sys.stderr.write("logphase: interrupted\n")
            return EXIT_INTERRUPTED
        if verdict is not None:
            return verdict
        merged = self._finish_if_merged()
        if self.deadline is not None and time.monotonic() >= self.deadline:
            sys.stderr.write(f"logphase: gave up after {self.options.timeout:g} s\n")
            return EXIT_TIMEOUT
        return OUTCOME_EXIT[merged.outcome] if merged is not None else OUTCOME_EXIT["starting"]

    def _until_verdict(self) -> int | None:
        """Prints records until the deployment's verdict (its exit code), or until every log's
        follow ended or the time is up (None)."""
        while self.running:
            ends = [t for t in (self.deadline, self.settle_until) if t is not None]
            wait = max(0.0, min(ends) - time.monotonic()) if ends else None
            try:
                i, item = self.inbox.get(timeout=wait)
            except queue.Empty:
                return self._settled()
            self._take(i, item)
            merged = _merged(self.names, self.followers)
            if merged is None or merged.outcome == "starting" or not _verdict_reached(merged, self.options.until):
                continue
            if all(self.said):
                return self._finish_after(merged)
            if self.settle_until is None:
                # the other logs may still hold records (the root's lines can reach us after its
                # echoes): they get a moment to say them before the verdict
                self.settle_until = time.monotonic() + SETTLE_S
        return None

    def _take(self, i: int, item: object) -> None:
        if item is _DONE or isinstance(item, SummaryRecord | TimeoutRecord | OutcomeRecord):
            # a single log's verdict is not the deployment's: the merged one follows
            self.said[i] = True
            self.running -= item is _DONE
        else:
            _write(self.out, self.names[i], item, self.args.json)  # type: ignore[arg-type]

    def _settled(self) -> int | None:
        """Nothing came before the deadline or the end of the settling time: the verdict after
        settling, if there is a merged report; else None (the time is up)."""
        if self.settle_until is not None and time.monotonic() >= self.settle_until:
            merged = _merged(self.names, self.followers)
            if merged is not None:
                return self._finish_after(merged)
        return None

    def _finish_if_merged(self) -> MergedReport | None:
        merged = _merged(self.names, self.followers)
        if merged is not None:
            self._finish_after(merged)
        return merged

    def _finish_after(self, merged: MergedReport) -> int:
        return _finish_after(self.inbox, self.out, self.names, merged, self.args.json, self.color)


def _verdict_reached(merged: MergedReport, until: str) -> bool:
    if until in ("outcome", "eof"):
        return until == "outcome"
    return until == merged.outcome or (until not in ("ready", "failed") and merged.outcome == "failed")


def _merged(names: list[str], followers: list[Follower | None]) -> MergedReport | None:
    if any(f is None or f.stale for f in followers):
        return None  # a log not read yet, or one holding an earlier run: no verdict on this one
    return merge_logs(names, [f.report for f in followers if f is not None])


def _write(out: object, source: str, record: FollowRecord, as_json: bool) -> None:
    import orjson

    assert hasattr(out, "write")
    if as_json:
        data = {"source": source, **record.model_dump(mode="json")}
        out.write(orjson.dumps(data) + b"\n")
    else:
        out.write(f"{os.path.basename(source)}: {human_line(record)}".encode(errors="replace"))
    out.flush()  # type: ignore[attr-defined]


def _drain(inbox: queue.Queue[tuple[int, object]], out: object, names: list[str], as_json: bool) -> None:
    """The records already read but not printed yet: the verdict comes after them."""
    while True:
        try:
            i, item = inbox.get_nowait()
        except queue.Empty:
            return
        if item is not _DONE and not isinstance(item, SummaryRecord | TimeoutRecord | OutcomeRecord):
            _write(out, names[i], item, as_json)  # type: ignore[arg-type]


def _finish_after(
    inbox: queue.Queue[tuple[int, object]], out: object, names: list[str], merged: MergedReport, as_json: bool, color: bool
) -> int:
    _drain(inbox, out, names, as_json)
    return _finish(out, merged, as_json, color)


def _finish(out: object, merged: MergedReport, as_json: bool, color: bool) -> int:
    import orjson

    assert hasattr(out, "write")
    if as_json:
        out.write(
            orjson.dumps({"kind": "merged", "message": f"deployment {merged.outcome}", "report": merged.model_dump(mode="json")})
            + b"\n"
        )
    else:
        out.write(b"\n" + render_merged(merged, color).encode(errors="replace"))
    out.flush()  # type: ignore[attr-defined]
    return OUTCOME_EXIT[merged.outcome]
