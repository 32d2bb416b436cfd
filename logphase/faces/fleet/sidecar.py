"""The sidecar's side of the probes: the state of the log being followed (what ``probe.py`` judges),
kept in a small file for ``logphase probe`` (``follow --state-file``) and served over HTTP beside the
metrics (``follow --metrics-port``: ``/startup``, ``/ready``, ``/live``).

The state is computed from the follower in use (the latest: a truncated or replaced log gets a new
one) at the moment it is asked for, so an HTTP probe is never behind the log; the file is rewritten
when the state changes (at once after a record: a failure reaches the probe before its next period)
and every ``HEARTBEAT_S`` seconds, so that a probe can tell a sidecar that stopped.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from logphase.faces.fleet.probe import HEARTBEAT_S, PROBE_KINDS, STATE_FORMAT, answer, write_state
from logphase.faces.inputs import InputError
from logphase.vocabulary.redact import redact_text

if TYPE_CHECKING:
    from logphase.faces.live.follow import Follower

# how often the keeper looks at the follower when no record pokes it: the last line's time moves on
# with every line, and is kept to the second (the budgets are minutes)
LOOK_EVERY_S = 1.0

StateSource = Callable[[], "dict[str, Any] | None"]


def state_of(follower: Follower, mono_now: float, wall_now: float) -> dict[str, Any]:
    """What a probe needs of ``follower`` now: the outcome, the phase, when the log last grew (on the
    wall clock, which the probe reads too), the phase's stall budget, and the failure."""
    from logphase.faces.live.follow import STALL_HINTS
    from logphase.faces.wording import headline

    report = follower.report
    stale = follower.stale
    phase = None if stale else report.phase
    failure = report.failure
    return {
        "logphase_state": STATE_FORMAT,
        "source": report.source,
        "pid": os.getpid(),
        "written_at": round(wall_now, 3),
        "outcome": "starting" if stale else report.outcome,
        "phase": phase.value if phase is not None else None,
        "headline": "waiting for a new run (the log holds an earlier one)" if stale else headline(report),
        "last_line_at": round(wall_now - max(0.0, mono_now - follower.last_input), 3),
        "last_line": redact_text(follower.last_line_text),
        "stall_after_s": follower.stall_budget(phase),
        "stall_hint": STALL_HINTS.get(phase, STALL_HINTS[None]),
        "run": report.run,
        "failure": None
        if failure is None or stale
        else {
            "cause": failure.cause.value,
            "phase": failure.phase.value if failure.phase is not None else None,
            "rank": failure.rank,
            "line": failure.line,
            "ts": failure.ts,
            "message": failure.message,
            "hint": failure.hint,
            "while_serving": failure.while_serving,
        },
    }


class StateKeeper:
    """Keeps ``path`` holding the state of the follower ``current()`` returns: rewritten at once when
    poked (after each record), else when it changed or every HEARTBEAT_S seconds, from a thread of
    its own so that the follow loop never waits on the disk."""

    def __init__(
        self,
        path: str,
        current: Callable[[], Follower | None],
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.path, self._current, self._clock, self._wall = path, current, clock, wall
        self._poked = threading.Event()
        self._stopped = False
        self._written: dict[str, Any] | None = None
        self._written_at = 0.0

    def check_writable(self) -> None:
        """The file can be written (its folder exists and takes files): else an InputError now, not a
        probe that never finds a state."""
        folder = os.path.dirname(self.path) or "."
        if not os.path.isdir(folder):
            raise InputError(f"--state-file {self.path}: no folder {folder}")
        if not os.access(folder, os.W_OK):
            raise InputError(f"--state-file {self.path}: {folder} cannot be written")

    def start(self) -> None:
        self.keep()
        threading.Thread(target=self._run, daemon=True, name="logphase state").start()

    def poke(self, _record: object = None) -> None:
        """Something happened (a record): write the state now."""
        self._poked.set()

    def stop(self) -> None:
        self._stopped = True
        self._poked.set()

    def _run(self) -> None:
        while not self._stopped:
            self._poked.wait(LOOK_EVERY_S)
            self._poked.clear()
            if not self._stopped:
                self.keep()

    def keep(self) -> None:
        """Write the state when it changed (the last line's time to the second) or the heartbeat is due."""
        follower = self._current()
        if follower is None:
            return
        wall = self._wall()
        state = state_of(follower, self._clock(), wall)
        if self._same(state) and wall - self._written_at < HEARTBEAT_S:
            return
        try:
            write_state(self.path, state)
        except OSError:
            return  # a full disk or a folder gone: the probe then says the state is old
        self._written, self._written_at = state, wall

    def _same(self, state: dict[str, Any]) -> bool:
        if self._written is None:
            return False

        def key(s: dict[str, Any]) -> dict[str, Any]:
            return {**s, "written_at": None, "last_line_at": round(float(s["last_line_at"]))}

        return key(self._written) == key(state)


# -- the HTTP endpoints, beside /metrics ----------------------------------------------------------------

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def probe_paths(state: StateSource | None, fallback: WsgiApp, wall: Callable[[], float] = time.time) -> WsgiApp:
    """A WSGI app: ``/startup``, ``/ready`` and ``/live`` answered from ``state()`` (200 or 503, the
    answer as one line of text, or JSON with ``?format=json``), every other path by ``fallback``
    (the metrics). Without a state (``--merge``: each node's sidecar probes its own log) they are 404."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        probe = str(environ.get("PATH_INFO", "")).strip("/")
        if probe not in PROBE_KINDS:
            return fallback(environ, start_response)
        current = state() if state is not None else None
        if current is None:
            return _respond(
                start_response, "404 Not Found", "no probe here: follow --merge serves none (probe each node's log)\n"
            )
        result = answer(probe, current, wall())
        status = "200 OK" if result.ok else "503 Service Unavailable"
        if "json" in parse_qs(str(environ.get("QUERY_STRING", ""))).get("format", []):
            import json

            body = json.dumps({"probe": probe, "ok": result.ok, "message": result.message, "state": current}) + "\n"
            return _respond(start_response, status, body, "application/json")
        return _respond(start_response, status, result.message + "\n")

    return app


def _respond(start_response: Callable[..., Any], status: str, body: str, kind: str = "text/plain; charset=utf-8") -> list[bytes]:
    data = body.encode()
    start_response(status, [("Content-Type", kind), ("Content-Length", str(len(data))), ("Cache-Control", "no-store")])
    return [data]


def live_state(current: Callable[[], Follower | None]) -> StateSource:
    """The state of the follower in use, computed when asked (an HTTP probe)."""

    def state() -> dict[str, Any] | None:
        follower = current()
        return state_of(follower, time.monotonic(), time.time()) if follower is not None else None

    return state


__all__ = ["LOOK_EVERY_S", "StateKeeper", "live_state", "probe_paths", "state_of"]
