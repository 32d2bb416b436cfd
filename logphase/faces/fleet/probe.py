"""Kubernetes probes that know the phase: what ``/startup``, ``/ready`` and ``/live`` answer, from the
state a following sidecar keeps (``sidecar.py`` writes it; the HTTP endpoints compute it live).

``/startup`` passes while the start-up makes progress: a line within the stall budget of the phase it
is in (``follow``'s per-phase budgets: 900 s while loading weights, 600 s in CUDA graph capture ...),
so a large model is never killed while it loads, and a start-up that failed or went silent fails
the probe at once, with the cause. ``/ready`` passes only once the server is ready (after its warm-up
where it has one). ``/live`` fails once the log shows the server failed (while serving, typically: a
scheduler that died under a front end that still answers).

This module is what ``logphase probe STATE`` runs, as an exec probe every few seconds: it imports
nothing beyond the standard library's json and reads one small file (the state the sidecar keeps),
never the log, so a probe costs the interpreter's start and little more.
"""

from __future__ import annotations

import json
import os
import sys
import time

from logphase import TYPE_CHECKING  # typing's, without importing typing (a probe imports nothing it does not need)
from logphase.vocabulary.errors import LogphaseError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

STATE_FORMAT = 1  # the state file's own version: a probe refuses a state it does not know
PROBE_KINDS = ("startup", "ready", "live")
# the sidecar rewrites its state at least this often, even when nothing changed (written_at)
HEARTBEAT_S = 5.0
# a state older than this was left by a sidecar that is no longer running: what it says is not now
STALE_STATE_S = 30.0
# Kubernetes keeps at most 4096 bytes of a termination message
TERMINATION_LOG_MAX = 4096


class ProbeError(LogphaseError):
    """No state to judge by (no file, no sidecar, a file that is not a state): one line, exit 2."""


class Answer:
    """A probe's answer: pass or not, one line for the kubelet's event (and the HTTP body), and the
    lines a termination message holds (the cause, its line, the hint)."""

    __slots__ = ("detail", "message", "ok")

    def __init__(self, ok: bool, message: str, detail: str = "") -> None:
        self.ok, self.message, self.detail = ok, message, detail

    def __repr__(self) -> str:
        return f"Answer(ok={self.ok!r}, message={self.message!r})"


def answer(probe: str, state: dict[str, Any], now: float) -> Answer:
    """The answer of ``probe`` (startup, ready or live) on ``state`` at wall-clock time ``now``."""
    if probe == "ready":
        return _ready(state)
    if probe == "live":
        return _live(state)
    return _startup(state, now)


def _startup(state: dict[str, Any], now: float) -> Answer:
    """Fails at a start-up failure and at a stall (no line within the phase's budget); passes once
    ready (a failure while serving is past the start-up: /live says it) and while lines come."""
    failure = state.get("failure")
    if state.get("outcome") == "failed" and failure is not None and not failure.get("while_serving"):
        return _failed(state, failure)
    if state.get("outcome") in ("ready", "failed"):
        return Answer(True, f"start-up done: {state.get('headline', 'READY')}")
    silent = max(0.0, now - float(state.get("last_line_at", now)))
    budget = float(state.get("stall_after_s", 0.0))
    where = state.get("phase") or "no phase yet"
    if silent > budget:
        hint = state.get("stall_hint") or ""
        message = f"STALLED in {where}: no new output for {silent:.0f} s (budget {budget:.0f} s): {hint}"
        last = state.get("last_line") or ""
        return Answer(False, message, f"logphase: start-up STALLED in {where}: no new output for {silent:.0f} s "
                      f"(budget {budget:.0f} s)\nlast line: {last}\nhint: {hint}")  # fmt: skip
    return Answer(True, f"{state.get('headline', 'STARTING')}; last output {silent:.0f} s ago (budget {budget:.0f} s in {where})")


def _failed(state: dict[str, Any], failure: dict[str, Any]) -> Answer:
    where = failure.get("phase") or state.get("phase") or "an unknown phase"
    cause = failure.get("cause", "unknown")
    line = failure.get("line")
    at = f" (line {line}{' on ' + failure['rank'] if failure.get('rank') else ''})" if line else ""
    error = str(failure.get("message", "")).splitlines()[0] if failure.get("message") else ""
    hint = failure.get("hint") or ""
    message = f"FAILED in {where}: {cause}{at}: {error}" + (f"; hint: {hint}" if hint else "")
    detail = f"logphase: {state.get('headline', 'FAILED')}\n{cause}{at}: {failure.get('message', '')}\nhint: {hint}"
    return Answer(False, message, detail)


def _ready(state: dict[str, Any]) -> Answer:
    if state.get("outcome") == "ready":
        return Answer(True, str(state.get("headline", "READY")))
    failure = state.get("failure")
    if state.get("outcome") == "failed" and failure is not None:
        return Answer(False, _failed(state, failure).message)
    return Answer(False, f"not ready: {state.get('headline', 'STARTING')}")


def _live(state: dict[str, Any]) -> Answer:
    failure = state.get("failure")
    if state.get("outcome") == "failed" and failure is not None:
        failed = _failed(state, failure)
        return Answer(False, failed.message, failed.detail)
    return Answer(True, f"alive as far as the log says: {state.get('headline', 'STARTING')}")


# -- the exec probe: logphase probe STATE --------------------------------------------------------------


def read_state(path: str, now: float, max_age: float = STALE_STATE_S) -> dict[str, Any]:
    """The sidecar's state at ``path``; ProbeError when there is none to judge by (no file, not a
    state, or one the sidecar last wrote more than ``max_age`` seconds ago)."""
    try:
        with open(path, "rb") as handle:
            state = json.loads(handle.read())
    except FileNotFoundError:
        raise ProbeError(f"{path}: no state: is the sidecar running (logphase follow LOG --state-file {path})?") from None
    except OSError as exc:
        raise ProbeError(f"{path}: {exc.strerror or exc}") from None
    except ValueError:
        raise ProbeError(f"{path}: not a state logphase follow --state-file wrote (not JSON)") from None
    if not isinstance(state, dict) or state.get("logphase_state") != STATE_FORMAT:
        raise ProbeError(f"{path}: not a state logphase follow --state-file wrote (format {STATE_FORMAT})")
    age = now - float(state.get("written_at", 0.0))
    if age > max_age:
        raise ProbeError(
            f"{path}: the sidecar last wrote its state {age:.0f} s ago (it rewrites it every {HEARTBEAT_S:g} s): "
            "is it still running?"
        )
    return state


def add_probe_arguments(p: Any) -> None:
    """The options of ``logphase probe`` (an argparse parser; argparse is imported by the caller)."""
    p.add_argument("state", metavar="STATE", help="the state file the sidecar writes (logphase follow LOG --state-file STATE)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--startup", dest="probe", action="store_const", const="startup", help="the start-up probe (default)")
    which.add_argument("--ready", dest="probe", action="store_const", const="ready", help="the readiness probe")
    which.add_argument("--live", dest="probe", action="store_const", const="live", help="the liveness probe")
    p.add_argument(
        "--termination-log",
        metavar="PATH",
        help="when the probe fails, write the cause, its line and the hint here (Kubernetes' terminationMessagePath, "
        "/dev/termination-log by default: kubectl describe pod then shows why the container was killed)",
    )
    p.add_argument(
        "--max-age",
        type=float,
        default=STALE_STATE_S,
        metavar="SECONDS",
        help=f"a state older than this is no sidecar's now (default {STALE_STATE_S:g}; the sidecar rewrites it every "
        f"{HEARTBEAT_S:g} s)",
    )


class ProbeArgs:
    """The options of ``logphase probe``, as argparse would give them."""

    def __init__(
        self, state: str, probe: str | None = None, termination_log: str | None = None, max_age: float = STALE_STATE_S
    ) -> None:
        self.state, self.probe, self.termination_log, self.max_age = state, probe, termination_log, max_age


def plain_args(argv: Sequence[str]) -> ProbeArgs | None:
    """The probe's arguments read without argparse (its import is a good part of a probe's time),
    when they are plain: STATE, one of --startup/--ready/--live, --termination-log PATH, --max-age S.
    None for anything else (--help, a mistake): argparse then reads them and says what is wrong."""
    state: str | None = None
    found = ProbeArgs("")
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        name, eq, value = arg.partition("=")
        if arg in ("--startup", "--ready", "--live") and found.probe is None:
            found.probe = arg[2:]
        elif name in ("--termination-log", "--max-age"):
            if not eq and not rest:
                return None
            value = value if eq else rest.pop(0)
            if name == "--termination-log":
                found.termination_log = value
            else:
                try:
                    found.max_age = float(value)
                except ValueError:
                    return None
        elif arg.startswith("-") or state is not None:
            return None
        else:
            state = arg
    if state is None:
        return None
    found.state = state
    return found


def answer_probe(args: Any) -> int:
    """Print the answer in one line; 0 passes, 1 fails, 2 when there is no state to judge by (for
    --live that is no failure: a liveness probe restarts the server, so only a failure the log
    shows fails it)."""
    probe = args.probe or "startup"
    now = time.time()
    try:
        state = read_state(args.state, now, args.max_age)
    except ProbeError as exc:
        if probe == "live":
            print(f"unknown, so not failed: {exc}")
            return 0
        print(f"logphase: {exc}", file=sys.stderr)
        return 2
    result = answer(probe, state, now)
    print(result.message)
    if not result.ok and args.termination_log and result.detail:
        _write_termination_log(args.termination_log, result.detail)
    return 0 if result.ok else 1


def _write_termination_log(path: str, detail: str) -> None:
    """The cause, for ``kubectl describe pod`` (Last State: Terminated, Message), cut to what
    Kubernetes keeps; a path that cannot be written is said on stderr, the answer stands."""
    data = detail.encode("utf-8", "replace")[:TERMINATION_LOG_MAX]
    try:
        with open(path, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        print(f"logphase: --termination-log {path}: {exc.strerror or exc}", file=sys.stderr)


def write_state(path: str, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` whole or not at all (a temporary file beside it, renamed over
    it): a probe never reads half a state."""
    folder = os.path.dirname(path) or "."
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(json.dumps(state, sort_keys=True).encode())
    os.replace(temporary, path)


__all__ = [
    "PROBE_KINDS",
    "STATE_FORMAT",
    "Answer",
    "ProbeError",
    "add_probe_arguments",
    "answer",
    "answer_probe",
    "read_state",
    "write_state",
]
