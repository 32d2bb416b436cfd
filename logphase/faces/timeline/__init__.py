"""The startup timeline picture: a Report -> one self-contained HTML page, or one SVG drawing.

Pure functions, no I/O: ``render_html(report)`` and ``render_svg(report)``. The page holds inline
SVG and CSS only (no script, no font, nothing fetched), so it can be attached to an issue as is.

What it draws:

* a Gantt chart, one row for the server (every phase, as the report's phase spans) and one per
  rank (its own spans), coloured by phase, durations written on the bars that are wide enough,
  under a time axis in wall-clock time (top) and seconds since launch (bottom);
* the failure: a marker at its time on the failing rank's row (or the server row), its cause and
  line; its consequences as lesser markers;
* free GPU memory per rank at each phase boundary, a step chart on the same time axis, with the
  memory-pressure threshold (``LOW_CAPTURE_MEMORY_GB``);
* around it (HTML): the failure's message and hint, a phase table, warnings and key config values.

Above ``MAX_RANK_ROWS`` ranks, ranks whose phases are identical share a row; if there are still
too many rows, the ranks are summarised as earliest / median / latest per phase (the failing rank
keeps its own row), and the picture says so. Phases without timestamps are drawn dashed where
their neighbours put them, and named; a run with no timestamp at all is drawn in phase order,
not to scale.

Time between phases that no phase accounts for is drawn on the server row as a hatched grey
stretch with its duration, and listed in the phase table with its first and last line.
"""

from logphase.faces.timeline.page import render_html, render_svg
from logphase.faces.timeline.style import FAILURE_COLOR, PHASE_COLORS

__all__ = ["FAILURE_COLOR", "PHASE_COLORS", "render_html", "render_svg"]
