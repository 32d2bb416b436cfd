"""The test oracle: expectations checked against a report (``check``), and one report compared
with another (``compare``). Pure functions of reports: the input (a log or a saved report) is read
by ``logphase.faces.loading``. Shared by ``logphase check``, ``logphase compare`` and
:mod:`logphase.testing`."""

from __future__ import annotations

from logphase.faces.oracle.check import CheckItem, CheckResult, check
from logphase.faces.oracle.compare import Comparison, PhaseDelta, ValueChange, compare, flat_config
from logphase.faces.oracle.expectations import (
    DEFAULT_SLACK_S,
    DEFAULT_TOLERANCE,
    Expectations,
    OracleError,
    parse_cause,
    parse_max,
    parse_number,
    parse_phase,
)
from logphase.faces.oracle.text import render_check, render_comparison

__all__ = [
    "DEFAULT_SLACK_S",
    "DEFAULT_TOLERANCE",
    "CheckItem",
    "CheckResult",
    "Comparison",
    "Expectations",
    "OracleError",
    "PhaseDelta",
    "ValueChange",
    "check",
    "compare",
    "flat_config",
    "parse_cause",
    "parse_max",
    "parse_number",
    "parse_phase",
    "render_check",
    "render_comparison",
]
